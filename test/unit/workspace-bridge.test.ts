import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type BufferBridge, type FileChange } from '../../src/index';

const sha = (b: string): string => createHash('sha256').update(b).digest('hex');

test('a buffer bridge supplies the view and is told about committed changes', async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bridge-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'a.txt'), 'disk\n');
  const applied: FileChange[][] = [];
  const bridge: BufferBridge = {
    async snapshot(abs) {
      return abs === path.join(root, 'a.txt') ? { bytes: Buffer.from('buffer\n') } : null;
    },
    async apply(changes) {
      applied.push(changes);
    },
  };
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), bridge });
  try {
    const r = await ws.call('read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    assert.equal((r.data as { content: string }).content, 'buffer\n');
    assert.equal((r.data as { sha256: string }).sha256, sha('buffer\n'));
    // The stale gate uses the buffer's content too.
    const stale = await ws.call('write_file', { path: 'a.txt', content: 'x\n', expectedSha256: sha('disk\n') });
    assert.equal(!stale.ok && stale.error.kind, 'stale_file');
    const ok = await ws.call('write_file', { path: 'a.txt', content: 'x\n', expectedSha256: sha('buffer\n') });
    assert.ok(ok.ok);
    assert.equal(applied.length, 1);
    assert.equal(applied[0][0].abs, path.join(root, 'a.txt'));
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('a data folder inside the workspace is hidden from the tools', async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bridge-')));
  const ws = openWorkspace({ root: tmp, dataDir: path.join(tmp, '.caboose') });
  try {
    const r = await ws.call('read_file', { path: '.caboose/caboose.sqlite' });
    assert.equal(!r.ok && r.error.kind, 'permission_denied');
    const l = await ws.call('list_directory', {});
    assert.ok(l.ok);
    assert.deepEqual((l.data as { entries: unknown[] }).entries, []);
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
