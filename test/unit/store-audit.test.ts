import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openWorkspace, verifyAuditLog, type OpenedWorkspace } from '../../src/index';
import { openStore, AUDIT_DIFF_MAX_BYTES, MIGRATIONS } from '../../src/store';

const sha = (b: string): string => createHash('sha256').update(b).digest('hex');

let tmp: string;
let root: string;
let dataDir: string;
let ws: OpenedWorkspace;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-audit-')));
  root = path.join(tmp, 'ws');
  dataDir = path.join(tmp, 'data');
  fs.mkdirSync(root);
  ws = openWorkspace({ root, dataDir, sessionId: 'sess-1' });
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function someWrites(): Promise<void> {
  fs.writeFileSync(path.join(root, 'a.txt'), 'a\n');
  await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('a\n'), edits: [{ oldText: 'a', newText: 'b' }] }); // ok
  await ws.call('write_file', { path: 'a.txt', content: 'x', expectedSha256: sha('stale') }); // stale_file
  await ws.call('create_file', { path: 'n.txt', content: 'n\n' }); // ok
  await ws.call('move_file', { from: 'n.txt', to: 'm.txt', expectedSha256: sha('n\n') }); // ok
  await ws.call('delete_file', { path: 'm.txt', expectedSha256: sha('n\n') }); // ok
  await ws.call('create_file', { path: '../out.txt', content: 'x' }); // outside_workspace
  await ws.call('edit_file', { path: 'a.txt' }); // invalid_arguments
  await ws.call('read_file', { path: 'a.txt' }); // reads are not audited
}

describe('audit log', () => {
  test('records every write attempt, refused ones too, with the issue fields', async () => {
    await someWrites();
    const rows = ws.workspace.audit.list();
    assert.deepEqual(
      rows.map((r) => [r.tool, r.operation, r.ok, r.errorKind]),
      [
        ['edit_file', 'edit', true, null],
        ['write_file', 'write', false, 'stale_file'],
        ['create_file', 'create', true, null],
        ['move_file', 'move', true, null],
        ['delete_file', 'delete', true, null],
        ['create_file', 'create', false, 'outside_workspace'],
        ['edit_file', 'invalid', false, 'invalid_arguments'],
      ],
    );
    const edit = rows[0];
    assert.equal(edit.sessionId, 'sess-1');
    assert.equal(edit.path, 'a.txt');
    assert.equal(edit.beforeSha256, sha('a\n'));
    assert.equal(edit.afterSha256, sha('b\n'));
    assert.match(edit.diff!, /-a\n\+b/);
    assert.ok(!Number.isNaN(Date.parse(edit.time)));
    assert.equal(rows[1].beforeSha256, sha('b\n'));
    assert.deepEqual([rows[3].path, rows[3].toPath], ['n.txt', 'm.txt']);
  });

  test('apply_patch writes one row per file', async () => {
    fs.writeFileSync(path.join(root, 'a.txt'), 'a\n');
    await ws.call('apply_patch', { patch: '*** Begin Patch\n*** Add File: b.txt\n+b\n*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch' });
    assert.deepEqual(
      ws.workspace.audit.list().map((r) => [r.operation, r.path, r.ok]),
      [
        ['patch:add', 'b.txt', true],
        ['patch:update', 'a.txt', true],
      ],
    );
  });

  test('rows cannot be updated or deleted (triggers)', async () => {
    await someWrites();
    const db = ws.workspace.store.db;
    assert.throws(() => db.prepare("UPDATE audit_log SET ok = 1 WHERE error_kind = 'stale_file'").run(), /immutable/);
    assert.throws(() => db.prepare('DELETE FROM audit_log').run(), /immutable/);
    assert.deepEqual(verifyAuditLog(dataDir), { ok: true, rows: 7 });
  });

  test('verifyAuditLog() fails after a row is altered directly in SQLite', async () => {
    await someWrites();
    ws.close();
    assert.equal(verifyAuditLog(dataDir).ok, true);
    const db = new Database(path.join(dataDir, 'caboose.sqlite'));
    db.exec('DROP TRIGGER audit_log_no_update');
    db.prepare("UPDATE audit_log SET ok = 1, error_kind = NULL WHERE error_kind = 'stale_file'").run();
    const badId = (db.prepare("SELECT id FROM audit_log WHERE tool = 'write_file'").get() as { id: number }).id;
    db.close();
    const v = verifyAuditLog(dataDir);
    assert.equal(v.ok, false);
    assert.equal(v.firstBadRowId, badId);
    assert.equal(verifyAuditLog(path.join(dataDir, 'caboose.sqlite')).ok, false);
  });

  test('deleting a row (or recomputing its own hash) breaks the chain too', async () => {
    await someWrites();
    ws.close();
    const db = new Database(path.join(dataDir, 'caboose.sqlite'));
    db.exec('DROP TRIGGER audit_log_no_delete');
    db.prepare('DELETE FROM audit_log WHERE id = 3').run();
    db.close();
    const v = verifyAuditLog(dataDir);
    assert.deepEqual([v.ok, v.firstBadRowId], [false, 4]);
  });

  test('an edit that splits a surrogate pair (lone surrogates in the diff) keeps the chain verifiable', async () => {
    // Found by stress/fuzz.ts: SQLite stores a lone surrogate as U+FFFD, so the row no longer matched its hash.
    fs.writeFileSync(path.join(root, 'e.txt'), 'emoji 👩 here\n');
    const res = await ws.call('edit_file', { path: 'e.txt', expectedSha256: sha('emoji 👩 here\n'), edits: [{ oldText: 'emoji \ud83d', newText: 'x' }] });
    assert.equal(res.ok, true, JSON.stringify(res));
    ws.workspace.recordAudit('write_file', 'write', { path: 'lone\udc00.txt', toPath: null, beforeSha256: null, afterSha256: null, diff: '\ud800' }, false, 'invalid_arguments');
    assert.deepEqual(ws.verifyAuditLog(), { ok: true, rows: 2 });
  });

  test('diffs are stored up to 64 KiB', () => {
    const store = openStore(':memory:');
    try {
      store.audit.append({
        time: new Date().toISOString(), sessionId: 's', tool: 'write_file', operation: 'write', path: 'a', toPath: null,
        beforeSha256: null, afterSha256: null, diff: '+x\n'.repeat(50_000), ok: true, errorKind: null,
      });
      const row = store.audit.list()[0];
      assert.ok(Buffer.byteLength(row.diff!) <= AUDIT_DIFF_MAX_BYTES);
      assert.match(row.diff!, /truncated/);
      assert.equal(store.audit.verify().ok, true);
    } finally {
      store.close();
    }
  });

  test('the database uses WAL and numbered migrations', () => {
    const db = ws.workspace.store.db;
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('user_version', { simple: true }), MIGRATIONS.at(-1)!.version);
  });
});

test('verifyAuditLog takes a data folder path, { dataDir }, or is a method of the opened workspace', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-verify-'));
  fs.mkdirSync(path.join(tmp, 'ws'));
  const opts = { root: path.join(tmp, 'ws'), dataDir: path.join(tmp, 'data') };
  const ws = openWorkspace(opts);
  try {
    await ws.call('create_file', { path: 'a.txt', content: 'a' });
    const del = await ws.call('delete_file', { path: 'a.txt', expectedSha256: sha('a') });
    assert.ok(del.ok);
    assert.deepEqual(ws.verifyAuditLog(), { ok: true, rows: 2 });
    assert.deepEqual(verifyAuditLog(opts), { ok: true, rows: 2 });
    assert.deepEqual(verifyAuditLog(opts.dataDir), { ok: true, rows: 2 });
    assert.deepEqual(ws.listTrash().map((e) => e.originalPath), ['a.txt']);
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
