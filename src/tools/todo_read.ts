import { z } from 'zod';
import type { ToolDefinition } from './tool';
import type { TodoItem, TodoList } from './todo-list';

export const todoReadParameters = z.object({});

export interface TodoReadResult {
  todos: TodoItem[];
}

export const TODO_READ_DESCRIPTION =
  'Read the current task list of this session (as last written with todo_write). Takes no arguments.';

export function createTodoReadTool(todos: TodoList): ToolDefinition<typeof todoReadParameters, TodoReadResult> {
  return {
    name: 'todo_read',
    description: TODO_READ_DESCRIPTION,
    parameters: todoReadParameters,
    policy: 'interactive',
    async execute() {
      return { todos: todos.get() };
    },
  };
}
