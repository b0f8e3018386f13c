/**
 * Issue 17 defect 6: a made-up or never-read expectedSha256 was reported as "the file on disk changed".
 * The gate now tells a sha256 the file never had since the agent read it from a real change (and names
 * the side that changed: disk or buffer).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { FakeBridge } from '../support/fake-bridge';

const sha = (b: string): string => createHash('sha256').update(b).digest('hex');

function setup() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-stale-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'a.txt'), 'one\n');
  const bridge = new FakeBridge();
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), bridge });
  return { ws, bridge, A: path.join(root, 'a.txt'), done: () => (ws.close(), fs.rmSync(tmp, { recursive: true, force: true })) };
}
const msg = (r: { ok: boolean; error?: { kind: string; message: string } }): string => (r.ok ? 'ok' : `${r.error!.kind}: ${r.error!.message}`);

test('a made-up sha256 for a file never read: "not one this file had", not "changed"', async () => {
  const { ws, done } = setup();
  try {
    const r = await ws.call('write_file', { path: 'a.txt', content: 'x\n', expectedSha256: 'ab'.repeat(32) });
    assert.match(msg(r), /^stale_file: "a\.txt": the expected sha256 abababababab… is not one this file had since the agent read it \(this file was not read in this session\)/);
    assert.doesNotMatch(msg(r), /changed since you read it|on disk changed/);
  } finally {
    done();
  }
});

test('a made-up sha256 for a file that was read: "not one this file had", naming no change', async () => {
  const { ws, done } = setup();
  try {
    await ws.call('read_file', { path: 'a.txt' });
    const r = await ws.call('edit_file', { path: 'a.txt', edits: [{ oldText: 'one', newText: 'two' }], expectedSha256: sha('something else\n') });
    assert.match(msg(r), /is not one this file had since the agent read it \(no read or write of this file returned it\)/);
  } finally {
    done();
  }
});

test('a real sha256 from a read, then the disk changed: "changed since you read it: the file on disk changed"', async () => {
  const { ws, A, done } = setup();
  try {
    const read = (await ws.call('read_file', { path: 'a.txt' })) as { ok: true; data: { sha256: string } };
    fs.writeFileSync(A, 'edited outside\n');
    const r = await ws.call('write_file', { path: 'a.txt', content: 'x\n', expectedSha256: read.data.sha256 });
    assert.match(msg(r), /changed since you read it: the file on disk changed/);
  } finally {
    done();
  }
});

test('a sha256 from a write result, then the user typed in the buffer: "the Neovim buffer changed"', async () => {
  const { ws, bridge, A, done } = setup();
  try {
    const w = (await ws.call('write_file', { path: 'a.txt', content: 'mine\n', expectedSha256: sha('one\n') })) as { ok: true; data: { sha256: string } };
    assert.ok(w.ok);
    bridge.bufs.set(A, { text: 'mine\n', modified: false, tick: 1 });
    bridge.type(A, 'typed\n');
    const r = await ws.call('write_file', { path: 'a.txt', content: 'x\n', expectedSha256: w.data.sha256 });
    assert.match(msg(r), /changed since you read it: the Neovim buffer changed/);
  } finally {
    done();
  }
});
