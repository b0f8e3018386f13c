import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { FakeBridge } from '../support/fake-bridge';

/** Tool results with their data opened up for assertions. */
type R =
  | { ok: true; data: Record<string, unknown> & { matches?: unknown } }
  | { ok: false; error: { kind: string; message: string; suggestedAction?: string } };
const call = (ws: { call(n: string, a: unknown): Promise<unknown> }, name: string, args: unknown) => ws.call(name, args) as Promise<R>;

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

function setup(policy?: 'edit_buffer' | 'refuse') {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bridge-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  const bridge = new FakeBridge();
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), bridge, unsavedBuffers: policy });
  const abs = (p: string) => path.join(root, p);
  return { root, bridge, ws, abs, done: () => (ws.close(), fs.rmSync(tmp, { recursive: true, force: true })) };
}

test('an unsaved buffer is viewed and edited in place; the disk is never written', async () => {
  const { bridge, ws, abs, done } = setup();
  try {
    fs.writeFileSync(abs('a.txt'), 'disk\n');
    bridge.bufs.set(abs('a.txt'), { text: 'buffer\n', modified: true, tick: 5 });
    const r = await call(ws, 'read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    assert.equal(r.data.content, 'buffer\n');
    assert.equal(r.data.sha256, sha('buffer\n'));
    assert.equal(r.data.unsavedBuffer, true);
    assert.equal(r.data.diskSha256, sha('disk\n'));
    const e = await call(ws, 'edit_file', { path: 'a.txt', expectedSha256: sha('buffer\n'), edits: [{ oldText: 'buffer', newText: 'agent' }] });
    assert.ok(e.ok, JSON.stringify(e));
    assert.equal(e.data.savedToDisk, false);
    assert.equal(e.data.sha256, sha('agent\n'));
    assert.equal(fs.readFileSync(abs('a.txt'), 'utf8'), 'disk\n');
    assert.equal(bridge.bufs.get(abs('a.txt'))!.text, 'agent\n');
    // The next edit chains on the returned sha256 (the remembered disk hash follows the buffer).
    const e2 = await call(ws, 'edit_file', { path: 'a.txt', expectedSha256: e.data.sha256 as string, edits: [{ oldText: 'agent', newText: 'again' }] });
    assert.ok(e2.ok, JSON.stringify(e2));
    // grep sees the buffer's text, not the disk.
    const g = await call(ws, 'grep', { pattern: 'again|disk' });
    assert.ok(g.ok);
    assert.deepEqual(g.data.matches, [{ path: 'a.txt', line: 1, text: 'again' }]);
  } finally {
    done();
  }
});

test('the gate names the side that changed: buffer, disk or both', async () => {
  const { bridge, ws, abs, done } = setup();
  try {
    const A = abs('a.txt');
    const fresh = async () => {
      fs.writeFileSync(A, 'disk\n');
      bridge.bufs.set(A, { text: 'buffer\n', modified: true, tick: 1 });
      const r = await call(ws, 'read_file', { path: 'a.txt' });
      return r.ok ? (r.data.sha256 as string) : '';
    };
    const write = (s: string) => call(ws, 'write_file', { path: 'a.txt', content: 'x\n', expectedSha256: s });
    let s = await fresh();
    fs.writeFileSync(A, 'disk changed\n');
    let r = await write(s);
    assert.equal(!r.ok && r.error.kind, 'stale_file');
    assert.match(!r.ok ? r.error.message : '', /the file on disk changed/);
    s = await fresh();
    bridge.type(A, 'typed\n');
    r = await write(s);
    assert.match(!r.ok ? r.error.message : '', /the Neovim buffer changed/);
    s = await fresh();
    bridge.type(A, 'typed\n');
    fs.writeFileSync(A, 'disk changed\n');
    r = await write(s);
    assert.match(!r.ok ? r.error.message : '', /both the Neovim buffer .* and the file on disk changed/);
    assert.equal(fs.readFileSync(A, 'utf8'), 'disk changed\n');
    assert.equal(bridge.bufs.get(A)!.text, 'typed\n');
  } finally {
    done();
  }
});

test('a user keystroke between plan and commit fails the write (changedtick)', async () => {
  const { bridge, ws, abs, done } = setup();
  try {
    const A = abs('a.txt');
    fs.writeFileSync(A, 'disk\n');
    bridge.bufs.set(A, { text: 'buffer\n', modified: true, tick: 1 });
    const origUpdate = bridge.update.bind(bridge);
    bridge.update = async (ops) => {
      bridge.type(A, 'typed\n');
      return origUpdate(ops);
    };
    const r = await call(ws, 'write_file', { path: 'a.txt', content: 'x\n', expectedSha256: sha('buffer\n') });
    assert.equal(!r.ok && r.error.kind, 'stale_file');
    assert.equal(bridge.bufs.get(A)!.text, 'typed\n');
    assert.equal(fs.readFileSync(A, 'utf8'), 'disk\n');
  } finally {
    done();
  }
});

test("unsaved_buffers = 'refuse', delete and move of unsaved buffers → unsaved_buffer", async () => {
  const { bridge, ws, abs, done } = setup('refuse');
  try {
    fs.writeFileSync(abs('a.txt'), 'disk\n');
    bridge.bufs.set(abs('a.txt'), { text: 'buffer\n', modified: true, tick: 1 });
    for (const [name, args] of [
      ['write_file', { path: 'a.txt', content: 'x\n', expectedSha256: sha('buffer\n') }],
      ['edit_file', { path: 'a.txt', expectedSha256: sha('buffer\n'), edits: [{ oldText: 'buffer', newText: 'x' }] }],
      ['apply_patch', { patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-buffer\n+x\n*** End Patch\n' }],
      ['delete_file', { path: 'a.txt', expectedSha256: sha('buffer\n') }],
      ['move_file', { from: 'a.txt', to: 'b.txt', expectedSha256: sha('buffer\n') }],
      ['apply_patch', { patch: '*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n' }],
    ] as const) {
      const r = await call(ws, name, args);
      assert.equal(!r.ok && r.error.kind, 'unsaved_buffer', `${name}: ${JSON.stringify(r)}`);
      if (!r.ok && (name === 'delete_file' || name === 'move_file')) {
        assert.equal(r.error.suggestedAction, 'Ask the user to save or discard their changes to a.txt first.');
      }
    }
    assert.equal(fs.readFileSync(abs('a.txt'), 'utf8'), 'disk\n');
    assert.equal(bridge.bufs.get(abs('a.txt'))!.text, 'buffer\n');
  } finally {
    done();
  }
});

test('disk writes sync clean buffers; delete wipes, move renames, one update call per commit', async () => {
  const { bridge, ws, abs, done } = setup();
  try {
    fs.writeFileSync(abs('a.txt'), 'one\n');
    fs.writeFileSync(abs('b.txt'), 'two\n');
    bridge.bufs.set(abs('a.txt'), { text: 'one\n', modified: false, tick: 1 });
    bridge.bufs.set(abs('b.txt'), { text: 'two\n', modified: false, tick: 1 });
    const w = await call(ws, 'write_file', { path: 'a.txt', content: 'ONE\n', expectedSha256: sha('one\n') });
    assert.ok(w.ok);
    assert.equal(w.data.savedToDisk, true);
    assert.equal(fs.readFileSync(abs('a.txt'), 'utf8'), 'ONE\n');
    assert.deepEqual(bridge.bufs.get(abs('a.txt')), { text: 'ONE\n', modified: false, tick: 2 });
    const m = await call(ws, 'move_file', { from: 'b.txt', to: 'c.txt', expectedSha256: sha('two\n') });
    assert.ok(m.ok);
    assert.ok(bridge.bufs.has(abs('c.txt')) && !bridge.bufs.has(abs('b.txt')));
    const d = await call(ws, 'delete_file', { path: 'a.txt', expectedSha256: sha('ONE\n') });
    assert.ok(d.ok);
    assert.equal(bridge.bufs.has(abs('a.txt')), false);
    assert.deepEqual(bridge.ops.map((o) => o.map((x) => x.type)), [['set'], ['rename'], ['wipe']]);
  } finally {
    done();
  }
});

test('without a bridge the tools behave exactly as on disk (no buffer fields)', async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bridge-')));
  const ws = openWorkspace({ root: tmp, dataDir: path.join(tmp, '.data') });
  try {
    fs.writeFileSync(path.join(tmp, 'a.txt'), 'one\n');
    const r = await call(ws, 'read_file', { path: 'a.txt' });
    assert.ok(r.ok);
    assert.equal('unsavedBuffer' in r.data, false);
    const w = await call(ws, 'edit_file', { path: 'a.txt', expectedSha256: sha('one\n'), edits: [{ oldText: 'one', newText: 'two' }] });
    assert.ok(w.ok);
    assert.equal('savedToDisk' in w.data, false);
    assert.equal(fs.readFileSync(path.join(tmp, 'a.txt'), 'utf8'), 'two\n');
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('a data folder inside the workspace is hidden from the tools', async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bridge-')));
  const ws = openWorkspace({ root: tmp, dataDir: path.join(tmp, '.caboose') });
  try {
    const r = await call(ws, 'read_file', { path: '.caboose/caboose.sqlite' });
    assert.equal(!r.ok && r.error.kind, 'permission_denied');
    const l = await call(ws, 'list_directory', {});
    assert.ok(l.ok);
    assert.deepEqual((l.data as { entries: unknown[] }).entries, []);
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

// Issue 24: a commit prepares its disk part (journal, temp file, fsync) while Neovim answers the buffer
// status; the buffer gate is still checked before anything on disk changes.

/** Resolves true once `dir` holds an entry besides `keep` (a commit's temp file), false after `ms`. */
async function tempAppears(dir: string, keep: string, ms = 3000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (fs.readdirSync(dir).some((n) => n !== keep)) return true;
    await new Promise((r) => setTimeout(r, 2));
  }
  return false;
}

test('a clean buffer\'s edit writes its temp file while Neovim answers the commit\'s buffer status', async () => {
  const { bridge, ws, abs, root, done } = setup();
  try {
    fs.writeFileSync(abs('a.txt'), 'one\ntwo\n');
    bridge.bufs.set(abs('a.txt'), { text: 'one\ntwo\n', modified: false, tick: 3 });
    let overlapped: boolean | undefined;
    bridge.statusDelay = async (withBytes) => {
      if (withBytes !== 'never' || overlapped !== undefined) return;
      overlapped = await tempAppears(root, 'a.txt');
    };
    const e = await call(ws, 'edit_file', { path: 'a.txt', expectedSha256: sha('one\ntwo\n'), edits: [{ oldText: 'two', newText: 'deux' }] });
    assert.ok(e.ok, JSON.stringify(e));
    assert.equal(overlapped, true, 'the temp file was written before the status answered');
    assert.equal(fs.readFileSync(abs('a.txt'), 'utf8'), 'one\ndeux\n');
    assert.equal(bridge.bufs.get(abs('a.txt'))!.text, 'one\ndeux\n');
    assert.deepEqual(fs.readdirSync(root), ['a.txt']);
  } finally {
    done();
  }
});

test('a buffer changed while the temp file was prepared: stale_file, the disk untouched, no temp file left', async () => {
  const { bridge, ws, abs, root, done } = setup();
  try {
    fs.writeFileSync(abs('a.txt'), 'one\ntwo\n');
    bridge.bufs.set(abs('a.txt'), { text: 'one\ntwo\n', modified: false, tick: 3 });
    let prepared: boolean | undefined;
    bridge.statusDelay = async (withBytes) => {
      if (withBytes !== 'never' || prepared !== undefined) return;
      prepared = await tempAppears(root, 'a.txt');
      // The user types in the buffer meanwhile.
      bridge.bufs.set(abs('a.txt'), { text: 'one\ntwo\nthree\n', modified: true, tick: 4 });
    };
    const e = await call(ws, 'edit_file', { path: 'a.txt', expectedSha256: sha('one\ntwo\n'), edits: [{ oldText: 'two', newText: 'deux' }] });
    assert.equal(prepared, true);
    assert.ok(!e.ok);
    assert.equal(e.error.kind, 'stale_file');
    assert.equal(fs.readFileSync(abs('a.txt'), 'utf8'), 'one\ntwo\n');
    assert.deepEqual(fs.readdirSync(root), ['a.txt']);
    assert.equal(bridge.bufs.get(abs('a.txt'))!.text, 'one\ntwo\nthree\n');
  } finally {
    done();
  }
});
