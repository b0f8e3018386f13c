import { ToolError } from '../workspace/errors';

export const TODO_STATUSES = ['pending', 'in_progress', 'completed'] as const;
export type TodoStatus = (typeof TODO_STATUSES)[number];

export interface TodoItem {
  id: string;
  content: string;
  status: TodoStatus;
}

/** What todo_write receives: the id is optional and assigned when missing. */
export interface TodoInput {
  id?: string;
  content: string;
  status: TodoStatus;
}

export type TodoListener = (items: TodoItem[]) => void;

/**
 * The task list of one agent session. Owned by the session (no module-level state); the host subscribes
 * with `onChange` to show the list in the chat.
 */
export class TodoList {
  private items: TodoItem[] = [];
  private readonly listeners = new Set<TodoListener>();

  /** A copy of the current list. */
  get(): TodoItem[] {
    return this.items.map((t) => ({ ...t }));
  }

  /**
   * Replaces the whole list. Throws `invalid_arguments` when more than one item is in progress or two
   * items share an id; missing ids are assigned ("1", "2", … skipping ids already used).
   */
  replace(input: readonly TodoInput[]): TodoItem[] {
    const inProgress = input.filter((t) => t.status === 'in_progress');
    if (inProgress.length > 1) {
      throw new ToolError('invalid_arguments', `At most one task may be in_progress; got ${inProgress.length}.`, {
        suggestedAction: 'Mark only the task you are working on now as in_progress and the others as pending or completed.',
        details: { inProgress: inProgress.map((t) => t.content) },
      });
    }
    const used = new Set<string>();
    for (const t of input) {
      if (t.id === undefined) continue;
      if (used.has(t.id)) {
        throw new ToolError('invalid_arguments', `Duplicate task id "${t.id}".`, {
          suggestedAction: 'Give every task a unique id, or omit ids to have them assigned.',
        });
      }
      used.add(t.id);
    }
    let next = 1;
    const nextId = (): string => {
      while (used.has(String(next))) next++;
      const id = String(next);
      used.add(id);
      return id;
    };
    this.items = input.map((t) => ({ id: t.id ?? nextId(), content: t.content, status: t.status }));
    const snapshot = this.get();
    for (const l of [...this.listeners]) l(this.get());
    return snapshot;
  }

  /** Subscribes to changes; returns the unsubscribe function. */
  onChange(listener: TodoListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
}
