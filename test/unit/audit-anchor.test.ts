/**
 * Issue 18 item 15: edits, middle deletes and reorders were caught, but deleting the last rows, deleting
 * every row, dropping and re-creating the table, re-chaining after an edit and appending a forged row
 * all verified as ok. The chain is now anchored (row count + last hash in the database and in a file).
 */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openStore, verifyAuditLog, auditRowHash, type AuditEntry } from '../../src/store';
import { rechain } from '../support/audit-attack';

let tmp: string;
let dbFile: string;

const entry = (i: number): AuditEntry => ({
  time: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
  sessionId: 's',
  tool: 'write_file',
  operation: 'write',
  path: `f${i}.txt`,
  toPath: null,
  beforeSha256: null,
  afterSha256: null,
  diff: `+line ${i}`,
  ok: true,
  errorKind: null,
  workspace: '/w',
  details: null,
});

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-anchor-')));
  dbFile = path.join(tmp, 'caboose.sqlite');
  const store = openStore(dbFile);
  for (let i = 1; i <= 5; i++) store.audit.append(entry(i));
  store.close();
  assert.deepEqual(verifyAuditLog(dbFile), { ok: true, rows: 5 });
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs SQL on the database the way an attacker with a sqlite3 shell would (triggers dropped first). */
function tamper(fn: (db: Database.Database) => void): void {
  const db = new Database(dbFile);
  db.exec('DROP TRIGGER IF EXISTS audit_log_no_update; DROP TRIGGER IF EXISTS audit_log_no_delete;');
  fn(db);
  db.close();
}

const kinds: [string, (db: Database.Database) => void, RegExp, number | undefined][] = [
  ['deleting the last rows', (db) => db.exec('DELETE FROM audit_log WHERE id > 3'), /2 row\(s\) were removed from the end/, undefined],
  ['deleting every row', (db) => db.exec('DELETE FROM audit_log'), /every row was removed/, undefined],
  [
    'dropping and re-creating the table',
    (db) => {
      const sql = (db.prepare("SELECT sql FROM sqlite_master WHERE name = 'audit_log'").get() as { sql: string }).sql;
      db.exec('DROP TABLE audit_log');
      db.exec(sql);
    },
    /every row was removed/,
    undefined,
  ],
  [
    're-chaining after an edit',
    (db) => {
      db.exec("UPDATE audit_log SET diff = '+forged' WHERE id = 2");
      rechain(db);
    },
    /recomputed outside caboose/,
    1,
  ],
  [
    'appending a forged row with a valid link',
    (db) => {
      const last = db.prepare('SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1').get() as { hash: string };
      const e = entry(6);
      db.prepare(
        `INSERT INTO audit_log (time, session_id, tool, operation, path, to_path, before_sha256, after_sha256, diff, ok, error_kind, workspace, details, prev_hash, hash)
         VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
      ).run(e.time, e.sessionId, e.tool, e.operation, e.path, null, null, null, e.diff, 1, null, e.workspace, null, last.hash, auditRowHash(last.hash, e));
    },
    /1 row\(s\) were added outside caboose after row 5/,
    6,
  ],
  ['removing the anchor row', (db) => db.exec('DROP TRIGGER audit_anchor_no_delete; DELETE FROM audit_anchor'), /anchor .* was removed/, 1],
  ['editing a row (no re-chaining)', (db) => db.exec("UPDATE audit_log SET diff = '+x' WHERE id = 4"), /row 4 does not match/, 4],
];

for (const [name, fn, problem, firstBad] of kinds) {
  test(`detected: ${name}`, () => {
    tamper(fn);
    const v = verifyAuditLog(dbFile);
    assert.equal(v.ok, false, JSON.stringify(v));
    assert.match(v.problem ?? '', problem);
    assert.equal(v.firstBadRowId, firstBad);
  });
}

test('detected: the database deleted and re-created (the anchor file remembers the rows)', () => {
  for (const f of fs.readdirSync(tmp)) if (f.startsWith('caboose.sqlite') && !f.endsWith('-anchor.json')) fs.rmSync(path.join(tmp, f));
  const v = verifyAuditLog(dbFile);
  assert.equal(v.ok, false);
  assert.match(v.problem ?? '', /anchor file counts 5 rows/);
});

test('detected: the anchor row and the chain both rewritten consistently, but not the anchor file', () => {
  tamper((db) => {
    db.exec("UPDATE audit_log SET diff = '+forged' WHERE id = 2");
    rechain(db);
    const head = (db.prepare('SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1').get() as { hash: string }).hash;
    db.prepare('UPDATE audit_anchor SET head = ?').run(head);
  });
  const v = verifyAuditLog(dbFile);
  assert.equal(v.ok, false);
  assert.match(v.problem ?? '', /not the ones the anchor file recorded/);
});

test('detected: the anchor file removed', () => {
  fs.rmSync(`${dbFile}-anchor.json`);
  const v = verifyAuditLog(dbFile);
  assert.equal(v.ok, false);
  assert.match(v.problem ?? '', /anchor file .* was removed/);
});

test('two connections appending in turn keep one anchored chain', () => {
  const a = openStore(dbFile);
  const b = openStore(dbFile);
  for (let i = 6; i <= 20; i++) (i % 2 ? a : b).audit.append(entry(i));
  a.close();
  b.close();
  assert.deepEqual(verifyAuditLog(dbFile), { ok: true, rows: 20 });
});
