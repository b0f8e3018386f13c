import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/tools/open';
import { TodoList } from '../../src/tools/todo-list';
import { Sandbox } from '../../src/workspace/sandbox/sandbox';
import { HostConfigSchema } from '../../src/host/protocol';
import { addSessionTools } from '../../src/host/session-parts/tool-set';
import { fakeModel } from '../support/session-parts';

test('tool set: the file tools, then bash, fetch, (web_search), the task list, ask_user, recall, explore and agent', async (t) => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-tool-set-')));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  for (const searx of [null, 'http://127.0.0.1:9']) {
    const ws = openWorkspace({ root: tmp, dataDir: path.join(tmp, '.data'), sessionId: 's1' });
    const files = ws.registry.names();
    const sandbox = new Sandbox({ root: tmp, dataDir: path.join(tmp, '.data'), config: null });
    const config = HostConfigSchema.parse(searx ? { web_search: { searxng_url: searx } } : {});
    addSessionTools(ws.registry, {
      config,
      sandbox,
      todos: new TodoList(),
      secrets: ['sk-1'],
      recall: { get: () => null, archivedBy: () => null } as never,
      subagent: { provider: fakeModel({ text: '' }), registry: ws.registry },
      agent: { mode: () => 'create', requestApproval: async () => ({ decision: 'deny' }) as never },
    });
    const added = ws.registry.names().slice(files.length);
    assert.deepEqual(added, ['bash', 'fetch', ...(searx ? ['web_search'] : []), 'todo_write', 'todo_read', 'ask_user', 'recall', 'explore', 'agent']);
    assert.deepEqual(ws.registry.names().slice(0, files.length), files, 'the file tools come first, unchanged');
    await sandbox.dispose();
    ws.close();
  }
});
