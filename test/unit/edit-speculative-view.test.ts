/**
 * edit_file views a file that had no unsaved changes when last seen without waiting for Neovim's buffer
 * status (issue 24: one round trip of a clean-buffer edit); the status still decides before the commit
 * point. These tests take the speculative path (each proves it did: the view's status is asked without
 * bytes, and a miss asks again) and check that every answer is the one the non-speculative path gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { FakeBridge } from '../support/fake-bridge';

type R = { ok: true; data: Record<string, unknown> } | { ok: false; error: { kind: string; message: string } };
const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

function setup() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-speculative-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  const bridge = new FakeBridge();
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), bridge });
  const call = (name: string, args: unknown) => ws.call(name, args) as Promise<R>;
  const A = path.join(root, 'a.txt');
  const statuses: ('modified' | 'never')[] = [];
  bridge.onStatus = (w) => statuses.push(w);
  const edits = () => ws.workspace.audit.list().filter((a) => a.tool === 'edit_file');
  const leftovers = () => fs.readdirSync(root).filter((n) => n.includes('.caboose-'));
  return { root, bridge, ws, call, A, statuses, edits, leftovers, done: () => (ws.close(), fs.rmSync(tmp, { recursive: true, force: true })) };
}

test('a clean buffer edited twice: the second edit views the disk without waiting for the buffer status, and lands on disk and in the buffer', async () => {
  const s = setup();
  try {
    fs.writeFileSync(s.A, 'one\ntwo\n');
    s.bridge.bufs.set(s.A, { text: 'one\ntwo\n', modified: false, tick: 3 });
    const r = await s.call('read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    const e1 = await s.call('edit_file', { path: 'a.txt', expectedSha256: r.data.sha256, edits: [{ oldText: 'one', newText: 'ONE' }] });
    assert.ok(e1.ok, JSON.stringify(e1));
    s.statuses.length = 0;
    const e2 = await s.call('edit_file', { path: 'a.txt', expectedSha256: e1.data.sha256, edits: [{ oldText: 'two', newText: 'TWO' }] });
    assert.ok(e2.ok, JSON.stringify(e2));
    // Precondition: the view was speculative (its status asked without bytes, then the commit's).
    assert.deepEqual(s.statuses, ['never', 'never']);
    assert.equal(e2.data.savedToDisk, true);
    assert.equal(e2.data.sha256, sha('ONE\nTWO\n'));
    assert.equal(fs.readFileSync(s.A, 'utf8'), 'ONE\nTWO\n');
    assert.equal(s.bridge.bufs.get(s.A)!.text, 'ONE\nTWO\n');
    assert.equal(s.bridge.bufs.get(s.A)!.modified, false);
    assert.deepEqual(s.leftovers(), []);
  } finally {
    s.done();
  }
});

test('a buffer the user changed since the last edit (same text, still modified): the speculative disk plan is dropped and the edit goes into the unsaved buffer only', async () => {
  const s = setup();
  try {
    fs.writeFileSync(s.A, 'one\ntwo\n');
    s.bridge.bufs.set(s.A, { text: 'one\ntwo\n', modified: false, tick: 3 });
    const r = await s.call('read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    const e1 = await s.call('edit_file', { path: 'a.txt', expectedSha256: r.data.sha256, edits: [{ oldText: 'one', newText: 'ONE' }] });
    assert.ok(e1.ok, JSON.stringify(e1));
    // The user types a character and deletes it: same text, but the buffer is now modified.
    s.bridge.type(s.A, 'ONE\ntwo\n');
    s.statuses.length = 0;
    const e2 = await s.call('edit_file', { path: 'a.txt', expectedSha256: e1.data.sha256, edits: [{ oldText: 'two', newText: 'TWO' }] });
    assert.ok(e2.ok, JSON.stringify(e2));
    // Precondition: the speculative view (status without bytes) missed, and the edit was planned again from
    // the buffer (status with bytes).
    assert.equal(s.statuses[0], 'never');
    assert.ok(s.statuses.includes('modified'), JSON.stringify(s.statuses));
    // As without speculation: the buffer's text changed, the disk not.
    assert.equal(e2.data.savedToDisk, false);
    assert.equal(e2.data.unsavedBuffer, true);
    assert.equal(fs.readFileSync(s.A, 'utf8'), 'ONE\ntwo\n');
    assert.equal(s.bridge.bufs.get(s.A)!.text, 'ONE\nTWO\n');
    assert.equal(s.bridge.bufs.get(s.A)!.modified, true);
    assert.deepEqual(s.leftovers(), []);
    // One audit row for the edit (the dropped plan is not audited).
    assert.equal(s.edits().length, 2);
    assert.ok(s.edits().every((a) => a.ok));
  } finally {
    s.done();
  }
});

test('the user types while the speculative view waits for its status: stale_file naming the buffer, nothing written', async () => {
  const s = setup();
  try {
    fs.writeFileSync(s.A, 'one\ntwo\n');
    s.bridge.bufs.set(s.A, { text: 'one\ntwo\n', modified: false, tick: 3 });
    const r = await s.call('read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    const e1 = await s.call('edit_file', { path: 'a.txt', expectedSha256: r.data.sha256, edits: [{ oldText: 'one', newText: 'ONE' }] });
    assert.ok(e1.ok, JSON.stringify(e1));
    s.statuses.length = 0;
    let typed = false;
    s.bridge.onStatus = (w) => {
      s.statuses.push(w);
      if (!typed) {
        typed = true;
        s.bridge.type(s.A, 'ONE\nuser\n');
      }
    };
    const e2 = await s.call('edit_file', { path: 'a.txt', expectedSha256: e1.data.sha256, edits: [{ oldText: 'two', newText: 'TWO' }] });
    assert.equal(s.statuses[0], 'never');
    assert.ok(!e2.ok);
    assert.equal(e2.error.kind, 'stale_file');
    assert.match(e2.error.message, /the Neovim buffer changed/);
    assert.equal(fs.readFileSync(s.A, 'utf8'), 'ONE\ntwo\n');
    assert.equal(s.bridge.bufs.get(s.A)!.text, 'ONE\nuser\n');
    assert.deepEqual(s.leftovers(), []);
    // The failed attempt is audited once, as a stale_file.
    const failed = s.edits().filter((a) => !a.ok);
    assert.equal(failed.length, 1);
  } finally {
    s.done();
  }
});

test('an edit that changes nothing, on a buffer the user changed since the last edit (same text): answered from the buffer, as without speculation', async () => {
  const s = setup();
  try {
    fs.writeFileSync(s.A, 'one\ntwo\n');
    s.bridge.bufs.set(s.A, { text: 'one\ntwo\n', modified: false, tick: 3 });
    const r = await s.call('read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    const e1 = await s.call('edit_file', { path: 'a.txt', expectedSha256: r.data.sha256, edits: [{ oldText: 'one', newText: 'ONE' }] });
    assert.ok(e1.ok, JSON.stringify(e1));
    s.bridge.type(s.A, 'ONE\ntwo\n');
    s.statuses.length = 0;
    const e2 = await s.call('edit_file', { path: 'a.txt', expectedSha256: e1.data.sha256, edits: [{ oldText: 'two', newText: 'two' }] });
    assert.ok(e2.ok, JSON.stringify(e2));
    assert.equal(s.statuses[0], 'never');
    // The file is an unsaved buffer: the answer says so (a disk view would have said savedToDisk).
    assert.equal(e2.data.savedToDisk, false);
    assert.equal(e2.data.unsavedBuffer, true);
    assert.equal(fs.readFileSync(s.A, 'utf8'), 'ONE\ntwo\n');
  } finally {
    s.done();
  }
});
