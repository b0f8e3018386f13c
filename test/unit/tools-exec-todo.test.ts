import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TodoList, type TodoItem } from '../../src/tools/todo-list';
import { createTodoReadTool } from '../../src/tools/todo_read';
import { createTodoWriteTool, type TodoWriteResult } from '../../src/tools/todo_write';
import { ToolRegistry } from '../../src/tools/registry';
import { ToolError } from '../../src/workspace/errors';
import type { ToolContext } from '../../src/tools/tool';
import { testToolContext } from '../support/tool-context';

const makeCtx = (): ToolContext => testToolContext();

function setup(): { todos: TodoList; registry: ToolRegistry } {
  const todos = new TodoList();
  return { todos, registry: new ToolRegistry([createTodoWriteTool(todos), createTodoReadTool(todos)]) };
}

describe('TodoList', () => {
  test('assigns ids to new items, skipping ids already used', () => {
    const list = new TodoList();
    const items = list.replace([
      { content: 'a', status: 'pending' },
      { id: '1', content: 'b', status: 'completed' },
      { content: 'c', status: 'in_progress' },
    ]);
    assert.deepEqual(items, [
      { id: '2', content: 'a', status: 'pending' },
      { id: '1', content: 'b', status: 'completed' },
      { id: '3', content: 'c', status: 'in_progress' },
    ]);
  });

  test('rejects two items in progress and duplicate ids, leaving the list unchanged', () => {
    const list = new TodoList();
    list.replace([{ content: 'keep', status: 'pending' }]);
    assert.throws(
      () => list.replace([{ content: 'a', status: 'in_progress' }, { content: 'b', status: 'in_progress' }]),
      (e: unknown) => e instanceof ToolError && e.kind === 'invalid_arguments',
    );
    assert.throws(
      () => list.replace([{ id: 'x', content: 'a', status: 'pending' }, { id: 'x', content: 'b', status: 'pending' }]),
      (e: unknown) => e instanceof ToolError && e.kind === 'invalid_arguments' && /Duplicate/.test(e.message),
    );
    assert.deepEqual(list.get(), [{ id: '1', content: 'keep', status: 'pending' }]);
  });

  test('onChange is told every replacement until unsubscribed', () => {
    const list = new TodoList();
    const seen: TodoItem[][] = [];
    const off = list.onChange((items) => seen.push(items));
    list.replace([{ content: 'a', status: 'pending' }]);
    list.replace([{ id: '1', content: 'a', status: 'completed' }]);
    off();
    list.replace([]);
    assert.deepEqual(seen, [
      [{ id: '1', content: 'a', status: 'pending' }],
      [{ id: '1', content: 'a', status: 'completed' }],
    ]);
  });

  test('get returns a copy, and two lists are independent', () => {
    const a = new TodoList();
    const b = new TodoList();
    a.replace([{ content: 'a', status: 'pending' }]);
    a.get()[0].content = 'mutated';
    assert.equal(a.get()[0].content, 'a');
    assert.deepEqual(b.get(), []);
  });
});

describe('todo_write / todo_read', () => {
  test('todo_write replaces the list and todo_read returns it', async () => {
    const { registry } = setup();
    const w = await registry.call(
      'todo_write',
      { todos: [{ content: 'plan', status: 'completed' }, { content: 'build', status: 'in_progress' }, { content: 'test', status: 'pending' }] },
      makeCtx(),
    );
    assert.ok(w.ok);
    const data = w.data as TodoWriteResult;
    assert.deepEqual(data.counts, { pending: 1, in_progress: 1, completed: 1 });
    assert.deepEqual(data.todos.map((t) => t.id), ['1', '2', '3']);
    const r = await registry.call('todo_read', {}, makeCtx());
    assert.ok(r.ok);
    assert.deepEqual(r.data, { todos: data.todos });

    const w2 = await registry.call('todo_write', { todos: [{ id: '2', content: 'build', status: 'completed' }] }, makeCtx());
    assert.ok(w2.ok);
    const r2 = await registry.call('todo_read', undefined, makeCtx());
    assert.ok(r2.ok);
    assert.deepEqual(r2.data, { todos: [{ id: '2', content: 'build', status: 'completed' }] });
  });

  test('two tasks in progress is invalid_arguments', async () => {
    const { registry } = setup();
    const res = await registry.call(
      'todo_write',
      { todos: [{ content: 'a', status: 'in_progress' }, { content: 'b', status: 'in_progress' }] },
      makeCtx(),
    );
    assert.equal(res.ok, false);
    if (!res.ok) {
      assert.equal(res.error.kind, 'invalid_arguments');
      assert.match(res.error.message, /At most one task/);
    }
  });

  test('a bad status or empty content is rejected by the schema', async () => {
    const { registry } = setup();
    for (const todos of [[{ content: 'a', status: 'done' }], [{ content: '', status: 'pending' }], 'nope']) {
      const res = await registry.call('todo_write', { todos }, makeCtx());
      assert.equal(res.ok, false);
      if (!res.ok) assert.equal(res.error.kind, 'invalid_arguments');
    }
  });

  test('both tools are interactive (run in every mode)', () => {
    const { todos } = setup();
    assert.equal(createTodoWriteTool(todos).policy, 'interactive');
    assert.equal(createTodoReadTool(todos).policy, 'interactive');
  });
});
