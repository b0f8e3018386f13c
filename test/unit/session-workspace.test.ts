import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LuaUi, type NvimNotifier } from '../../src/host/lua-ui';
import { HostConfigSchema } from '../../src/host/protocol';
import { openSessionWorkspace } from '../../src/host/session-parts/session-workspace';
import { silentLog } from '../support/session-parts';

test('session workspace: checkpoint failures reach the chat, a rewind\'s notes wait with the session', async (t) => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-session-ws-')));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const root = path.join(tmp, 'w');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'a.txt'), 'hello\n');
  const events: [string, Record<string, unknown>][] = [];
  const nvim: NvimNotifier = {
    notify: (_n, args) => void events.push((args as [string, [string, Record<string, unknown>]])[1]),
    request: async () => [], // no loaded buffers
  };
  const config = HostConfigSchema.parse({ deny_globs: ['secret/**'] });
  const ws = openSessionWorkspace({ config, cwd: root, dataDir: path.join(tmp, 'data'), sessionId: 's1', model: 'm', ui: new LuaUi(nvim, silentLog, 0), log: silentLog });
  t.after(() => ws.close());
  const read = await ws.call('read_file', { path: 'a.txt' });
  assert.equal(read.ok, true, JSON.stringify(read));
  ws.workspace.checkpoints.onRecordError!(new Error('disk full'));
  assert.deepEqual(events.at(-1), ['notice', { text: 'checkpoint not recorded (:CabooseUndo cannot undo this change): disk full' }]);
  ws.workspace.checkpoints.addNote('your edit of a.txt was undone');
  assert.equal(ws.workspace.store.sessions.get('s1')?.cwd, root, 'the note created the session row');
  assert.equal(ws.workspace.checkpoints.takeNotes(), 'your edit of a.txt was undone');
  assert.equal(ws.workspace.checkpoints.takeNotes(), '', 'taken once');
  const denied = await ws.call('read_file', { path: 'secret/x' });
  assert.equal(denied.ok, false, 'the configured deny globs hold');
});
