import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createExecTools } from '../../src/tools/exec-tools';
import { TodoList } from '../../src/tools/todo-list';
import { ToolRegistry, toolSpec } from '../../src/tools/registry';
import type { ToolContext } from '../../src/tools/tool';
import type { BashResult } from '../../src/tools/bash';
import type { FetchResult } from '../../src/tools/fetch';
import * as http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { testToolContext } from '../support/tool-context';

const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'caboose-exec-')));
after(() => rmSync(root, { recursive: true, force: true }));

const makeCtx = (): ToolContext => testToolContext(root);

/** Every property of every object schema (nested ones too) must carry a description for the model. */
function undescribed(schema: unknown, at = ''): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const s = schema as { properties?: Record<string, unknown>; items?: unknown; description?: string };
  const out: string[] = [];
  for (const [key, prop] of Object.entries(s.properties ?? {})) {
    const p = prop as { description?: string };
    if (!p.description) out.push(`${at}${key}`);
    out.push(...undescribed(prop, `${at}${key}.`));
  }
  if (s.items) out.push(...undescribed(s.items, `${at}[].`));
  return out;
}

describe('createExecTools', () => {
  test("bash commands do not see the model API key in their environment (any variable holding it)", async () => {
    // Found by stress/secrets.ts: `env > f; delete f` put the key from OPENAI_API_KEY into the trash.
    const key = 'sk-canary-0123456789abcdef';
    const saved = { a: process.env.OPENAI_API_KEY, b: process.env.MY_ALIAS };
    Object.assign(process.env, { OPENAI_API_KEY: key, MY_ALIAS: `Bearer ${key}`, KEEP_ME: 'visible' });
    try {
      const reg = new ToolRegistry(createExecTools({ todos: new TodoList(), hideEnvValues: [key] }));
      const res = await reg.call('bash', { command: 'env' }, makeCtx());
      assert.ok(res.ok);
      const out = (res.data as BashResult).output;
      assert.ok(!out.includes(key), 'the key reached the command');
      assert.match(out, /^KEEP_ME=visible$/m);
    } finally {
      for (const [k, v] of [['OPENAI_API_KEY', saved.a], ['MY_ALIAS', saved.b]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      delete process.env.KEEP_ME;
    }
  });

  test('without a search backend web_search is not offered', () => {
    const names = createExecTools({ todos: new TodoList() }).map((t) => t.name);
    assert.deepEqual(names, ['bash', 'fetch', 'todo_write', 'todo_read', 'ask_user']);
    assert.ok(!createExecTools({ todos: new TodoList(), webSearch: null }).some((t) => t.name === 'web_search'));
  });

  test('with SearXNG configured web_search is offered', () => {
    const names = createExecTools({ todos: new TodoList(), webSearch: { searxngUrl: 'http://127.0.0.1:1' } }).map((t) => t.name);
    assert.deepEqual(names, ['bash', 'fetch', 'web_search', 'todo_write', 'todo_read', 'ask_user']);
  });

  test('policies: bash, fetch and web_search ask (exec); todo and ask_user are interactive', () => {
    const tools = createExecTools({ todos: new TodoList(), webSearch: { searxngUrl: 'http://127.0.0.1:1' } });
    assert.deepEqual(
      Object.fromEntries(tools.map((t) => [t.name, t.policy])),
      { bash: 'exec', fetch: 'exec', web_search: 'exec', todo_write: 'interactive', todo_read: 'interactive', ask_user: 'interactive' },
    );
  });

  test('every parameter is described and every tool has a description', () => {
    const tools = createExecTools({ todos: new TodoList(), webSearch: { searxngUrl: 'http://127.0.0.1:1' } });
    for (const t of tools) {
      const spec = toolSpec(t);
      assert.ok(spec.description.length > 40, `${t.name} description`);
      assert.equal(spec.parameters.type, 'object', t.name);
      assert.deepEqual(undescribed(spec.parameters), [], `${t.name} has undescribed parameters`);
    }
  });

  test('the todo tools share the session list given to the factory', async () => {
    const todos = new TodoList();
    const registry = new ToolRegistry(createExecTools({ todos }));
    const res = await registry.call('todo_write', { todos: [{ content: 'x', status: 'pending' }] }, makeCtx());
    assert.ok(res.ok);
    assert.deepEqual(todos.get(), [{ id: '1', content: 'x', status: 'pending' }]);
  });

  test('bashTimeoutMs sets the default bash timeout', async () => {
    const registry = new ToolRegistry(createExecTools({ todos: new TodoList(), bashTimeoutMs: 200 }));
    const res = await registry.call('bash', { command: 'sleep 20' }, makeCtx());
    assert.ok(res.ok);
    assert.equal((res.data as BashResult).timedOut, true);
  });

  test('fetchMaxBytes sets the default download cap', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(10_000));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const registry = new ToolRegistry(createExecTools({ todos: new TodoList(), fetchMaxBytes: 100, fetchAllowHosts: ['127.0.0.1'] }));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const res = await registry.call('fetch', { url }, makeCtx());
      assert.ok(res.ok);
      const data = res.data as FetchResult;
      assert.equal(data.truncated, true);
      assert.ok(data.content.startsWith(`${'x'.repeat(100)}\n[download stopped at 100 bytes`));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
