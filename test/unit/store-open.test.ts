/** Opening the store (issue 24: the pragmas reordered for a faster first start): the settings it ends with. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../src/store/db';

test('a new store is in WAL mode with NORMAL sync and a busy timeout', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-store-open-'));
  try {
    const db = openDatabase(dir);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(db.pragma('synchronous', { simple: true }), 1);
    assert.equal(db.pragma('busy_timeout', { simple: true }), 5000);
    db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
