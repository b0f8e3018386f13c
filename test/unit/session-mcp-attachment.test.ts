import { test } from 'node:test';
import assert from 'node:assert/strict';
import { attachSessionMcp } from '../../src/host/session-parts/mcp-attachment';
import { ToolRegistry } from '../../src/tools/registry';
import type { McpPool } from '../../src/mcp/client-pool';
import { silentLog } from '../support/session-parts';

const base = {
  log: silentLog,
  notice: () => {},
  progress: () => {},
  session: { ask: async () => null, requestApproval: async () => ({ decision: 'deny' }) as never },
  provider: { baseURL: 'http://127.0.0.1:9/v1', model: 'm', apiKey: '' } as never,
  servers: {},
};

test('mcp attachment: without MCP servers, no hooks and no expansion, but a client for elicitation', async () => {
  const a = attachSessionMcp({ ...base, pool: null, registry: new ToolRegistry([]) });
  assert.equal(a.hooks, null);
  assert.equal(await a.expand('/srv:prompt x', async () => null, new AbortController().signal), null);
  assert.equal(typeof a.client.elicit, 'function');
});

test('mcp attachment: with servers, their changes become notices; only messages naming a prompt or resource are expanded', async () => {
  let listener: ((c: unknown) => void) | null = null;
  const asked: string[] = [];
  const pool = {
    onChange: (fn: (c: unknown) => void) => {
      listener = fn;
      return () => (listener = null);
    },
    status: () => [{ name: 'old', state: 'failed', reason: 'no binary' }],
    connection: (server: string) => {
      asked.push(server);
      throw new Error(`MCP server '${server}' is not configured`);
    },
  } as unknown as McpPool;
  const notices: string[] = [];
  const a = attachSessionMcp({ ...base, pool, registry: new ToolRegistry([]), notice: (t) => notices.push(t) });
  assert.ok(a.hooks);
  assert.deepEqual(notices, ["MCP server 'old' is unavailable: no binary (:CabooseMcp restart old tries again)"], 'a server that failed earlier is named');
  notices.length = 0;
  listener!({ server: 'srv', state: 'failed', previous: 'running', reason: 'crashed' });
  assert.deepEqual(notices, ["MCP server 'srv' stopped: crashed; its tools are unavailable"]);
  assert.equal(await a.expand('plain words', async () => null, new AbortController().signal), null);
  await assert.rejects(a.expand('/srv:review now', async () => null, new AbortController().signal), /not configured/);
  assert.deepEqual(asked, ['srv']);
  a.hooks!.detach();
  assert.equal(listener, null, 'detached: no more notices');
});
