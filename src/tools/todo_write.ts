import { z } from 'zod';
import type { ToolDefinition } from './tool';
import { TODO_STATUSES, type TodoItem, type TodoList } from './todo-list';

export const todoWriteParameters = z.object({
  todos: z
    .array(
      z.object({
        id: z.string().min(1).optional().describe('Stable id of the task; omit for a new task and one is assigned.'),
        content: z.string().min(1).describe('What the task is, as a short imperative sentence.'),
        status: z
          .enum(TODO_STATUSES)
          .describe('pending (not started), in_progress (being worked on now; at most one task), or completed.'),
      }),
    )
    .describe('The complete task list. It replaces the previous list, so include every task, not only the changed ones.'),
});

export interface TodoWriteResult {
  todos: TodoItem[];
  counts: Record<TodoItem['status'], number>;
}

export const TODO_WRITE_DESCRIPTION = [
  'Create or update the task list for this session. The list you send replaces the previous one entirely.',
  'Use it for work with several steps: write the plan as pending tasks, mark exactly one task in_progress before you start it,',
  'and mark it completed as soon as it is done. The user sees the list in the chat.',
  'Returns the stored list with the ids assigned to new tasks.',
].join(' ');

export function createTodoWriteTool(todos: TodoList): ToolDefinition<typeof todoWriteParameters, TodoWriteResult> {
  return {
    name: 'todo_write',
    description: TODO_WRITE_DESCRIPTION,
    parameters: todoWriteParameters,
    policy: 'interactive',
    async execute(args) {
      const items = todos.replace(args.todos);
      const counts = { pending: 0, in_progress: 0, completed: 0 };
      for (const t of items) counts[t.status]++;
      return { todos: items, counts };
    },
  };
}
