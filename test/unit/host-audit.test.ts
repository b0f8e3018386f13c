import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openWorkspace } from '../../src/index';
import { createBashTool } from '../../src/tools/bash';
import { auditDiff, auditHealth, listAuditEntries } from '../../src/host/audit';
import { HostServer } from '../../src/host/server';
import { METHODS } from '../../src/host/protocol';
import type { LuaUi } from '../../src/host/lua-ui';
import type { Logger } from '../../src/host/logger';

function fixture(t: { after(fn: () => void): void }) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-host-audit-')));
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const dataDir = path.join(tmp, 'data');
  const dirs = ['one', 'two'].map((n) => path.join(tmp, n));
  for (const d of dirs) fs.mkdirSync(d);
  return { tmp, dataDir, one: dirs[0], two: dirs[1] };
}

test('listAuditEntries: the workspace\'s rows, newest first, with parsed details and no diff; auditDiff fetches one', async (t) => {
  const f = fixture(t);
  const a = openWorkspace({ root: f.one, dataDir: f.dataDir, sessionId: 's1' });
  const b = openWorkspace({ root: f.two, dataDir: f.dataDir, sessionId: 's2' });
  a.registry.add(createBashTool());
  await a.call('create_file', { path: 'x.txt', content: 'x\n' });
  await b.call('create_file', { path: 'elsewhere.txt', content: 'y' });
  await a.call('bash', { command: 'echo z > z.txt' });
  a.close();
  b.close();

  const { workspace, entries } = listAuditEntries(f.dataDir, path.join(f.one, 'sub', '..'), 50);
  assert.equal(workspace, f.one);
  assert.deepEqual(entries.map((e) => [e.tool, e.operation, e.ok, e.has_diff]), [
    ['bash', 'exec', true, false],
    ['create_file', 'create', true, true],
  ]);
  assert.deepEqual((entries[0].details as { files: unknown }).files, { created: ['z.txt'], changed: [], deleted: [] });
  assert.equal(entries[1].path, 'x.txt');
  assert.match(entries[1].local_time, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  assert.ok(!('diff' in entries[1]));
  assert.equal(listAuditEntries(f.dataDir, f.one, 1).entries.length, 1);
  assert.match(auditDiff(f.dataDir, entries[1].id).diff ?? '', /\+x/);
  assert.equal(auditDiff(f.dataDir, 999).diff, null);
});

test('auditHealth: no database yet, a good chain, then the first bad row', (t) => {
  const f = fixture(t);
  assert.deepEqual(auditHealth(f.dataDir), { db: path.join(f.dataDir, 'caboose.sqlite'), ok: true, rows: 0, missing: true });
  assert.equal(fs.existsSync(f.dataDir), false, 'checking creates nothing');
  const ws = openWorkspace({ root: f.one, dataDir: f.dataDir });
  return (async () => {
    for (const p of ['a', 'b', 'c']) await ws.call('create_file', { path: p, content: p });
    ws.close();
    assert.deepEqual(auditHealth(f.dataDir), { db: path.join(f.dataDir, 'caboose.sqlite'), ok: true, rows: 3 });
    const db = new Database(path.join(f.dataDir, 'caboose.sqlite'));
    db.exec('DROP TRIGGER audit_log_no_delete');
    db.prepare('DELETE FROM audit_log WHERE id = 2').run();
    db.close();
    const bad = auditHealth(f.dataDir);
    assert.deepEqual({ ...bad, problem: undefined }, { db: path.join(f.dataDir, 'caboose.sqlite'), ok: false, rows: 2, first_bad_row_id: 3, problem: undefined });
    assert.match(bad.problem ?? '', /row 3 does not match/);
  })();
});

test('the host serves audit.list and audit.diff without starting a session', async (t) => {
  const f = fixture(t);
  const ws = openWorkspace({ root: f.one, dataDir: f.dataDir });
  await ws.call('create_file', { path: 'a.txt', content: 'a\n' });
  ws.close();
  const noop = () => undefined;
  const log = { debug: noop, info: noop, warn: noop, error: noop, setFile: noop, setLevel: noop } as unknown as Logger;
  const server = new HostServer({ emit: noop } as unknown as LuaUi, log);
  // init without the warm-up: a session would open the workspace; the audit methods must not need one.
  (server as unknown as { init: unknown }).init = { config: {}, cwd: f.two, dataDir: f.dataDir };
  const list = (await server.handle(METHODS.auditList, { cwd: f.one, limit: 10 })) as ReturnType<typeof listAuditEntries>;
  assert.deepEqual(list.entries.map((e) => e.path), ['a.txt']);
  const own = (await server.handle(METHODS.auditList, {})) as ReturnType<typeof listAuditEntries>;
  assert.equal(own.workspace, f.two, 'the host cwd by default');
  assert.deepEqual(own.entries, []);
  const diff = (await server.handle(METHODS.auditDiff, { id: list.entries[0].id })) as { diff: string };
  assert.match(diff.diff, /\+a/);
  await assert.rejects(server.handle(METHODS.auditList, { limit: 0 }), /invalid params for audit\.list/);
  assert.equal((server as unknown as { runtime: unknown }).runtime, null);
});
