/**
 * Issue 18 item 4: with another process holding the database's write lock, write_file answered
 * internal_error while the file held the new text and no audit row existed. The result and the audit
 * now always match the disk.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openWorkspace } from '../../src/index';

const sha = (b: string): string => createHash('sha256').update(b).digest('hex');

for (const tool of ['write_file', 'delete_file'] as const) {
  test(`${tool} while another connection holds the write lock: reported as done, audited once the lock is gone`, async () => {
    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-locked-')));
    const root = path.join(tmp, 'ws');
    const dataDir = path.join(tmp, 'data');
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'a.txt'), 'old\n');
    const ws = openWorkspace({ root, dataDir, sessionId: 'locked' });
    ws.workspace.store.db.pragma('busy_timeout = 100');
    const other = new Database(path.join(dataDir, 'caboose.sqlite'));
    try {
      other.exec('BEGIN IMMEDIATE');
      const args = tool === 'write_file' ? { path: 'a.txt', content: 'new\n', expectedSha256: sha('old\n') } : { path: 'a.txt', expectedSha256: sha('old\n') };
      const r = await ws.call(tool, args);
      const onDisk = fs.existsSync(path.join(root, 'a.txt')) ? fs.readFileSync(path.join(root, 'a.txt'), 'utf8') : null;
      if (r.ok) assert.equal(onDisk, tool === 'write_file' ? 'new\n' : null, 'reported done: the disk holds the change');
      else assert.equal(onDisk, 'old\n', `reported failed (${r.error.message}): the disk is unchanged`);
      assert.ok(r.ok, `the write happened, so it is reported: ${JSON.stringify(r)}`);
      other.exec('COMMIT');
      ws.close();
      const again = openWorkspace({ root, dataDir, sessionId: 'after' });
      try {
        const rows = again.workspace.audit.list().filter((row) => row.tool === tool);
        assert.equal(rows.length, 1, 'the audit row was appended once the lock was gone');
        assert.equal(rows[0].ok, true);
        assert.ok(again.verifyAuditLog().ok);
        if (tool === 'delete_file') assert.equal(again.listTrash().length, 1, 'the trash entry was added at the next open');
      } finally {
        again.close();
      }
    } finally {
      other.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
}
