/**
 * Issue 18 items 1 and 6: another program writing to a file while the agent's change to it is being
 * committed loses nothing (the change is refused with stale_file and their version kept), and a write
 * keeps the file's owner, group and hard links.
 */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace } from '../../src/index';
import type { CommitFaultHook } from '../../src/workspace/commit-disk';
import { fileTree } from '../support/files';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');
let tmp: string;
let root: string;
let ws: OpenedWorkspace;
const p = (rel: string): string => path.join(root, rel);
const read = (rel: string): string => fs.readFileSync(p(rel), 'utf8');

function open(extra: { hardLinks?: 'refuse' | 'in_place' } = {}): void {
  ws?.close();
  ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 'cw', ...extra });
}
beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-cw-')));
  root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  fs.writeFileSync(p('a.txt'), 'one\ntwo\n');
  fs.writeFileSync(p('b.txt'), 'bee\n');
  open();
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A hook that appends `line` to `rel` (by path, as `echo >>` does) the first time the commit reaches `phase`. */
function appendAt(phase: 'commit' | 'renamed', rel: string, line: string, index = 0): { fired: () => boolean } {
  let fired = false;
  const hook: CommitFaultHook = (s) => {
    if (fired || s.phase !== phase || s.index !== index) return;
    fired = true;
    fs.appendFileSync(p(rel), line);
  };
  ws.workspace.files.faultHook = hook;
  return { fired: () => fired };
}

const calls: [string, (expected: string) => Record<string, unknown>][] = [
  ['edit_file', (e) => ({ path: 'a.txt', edits: [{ oldText: 'one', newText: 'ONE' }], expectedSha256: e })],
  ['write_file', (e) => ({ path: 'a.txt', content: 'new\n', expectedSha256: e })],
  ['apply_patch', (e) => ({ patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** End Patch\n', expectedSha256ByPath: { 'a.txt': e } })],
  ['delete_file', (e) => ({ path: 'a.txt', expectedSha256: e })],
  ['move_file', (e) => ({ from: 'a.txt', to: 'c.txt', expectedSha256: e })],
];

for (const [tool, args] of calls) {
  test(`${tool}: a line appended by another program just before the rename is kept, and the call is stale_file`, async () => {
    const hook = appendAt('commit', 'a.txt', 'theirs\n', tool === 'move_file' ? 1 : 0);
    const r = await ws.call(tool, args(sha('one\ntwo\n')));
    assert.ok(hook.fired(), 'the other program wrote during the commit');
    assert.equal(r.ok ? 'ok' : r.error.kind, 'stale_file', JSON.stringify(r));
    assert.deepEqual(fileTree(root), { 'a.txt': 'one\ntwo\ntheirs\n', 'b.txt': 'bee\n' });
    if (tool === 'delete_file') assert.equal(ws.listTrash().length, 0, 'nothing went to the trash');
    const rows = ws.verifyAuditLog();
    assert.ok(rows.ok);
  });
}

test('a line written through a descriptor opened before the rename (into the displaced file) is kept', async () => {
  const fd = fs.openSync(p('a.txt'), 'a');
  let fired = false;
  ws.workspace.files.faultHook = (s) => {
    if (s.phase === 'renamed' && !fired) {
      fired = true;
      fs.writeSync(fd, 'late\n');
    }
  };
  const r = await ws.call('edit_file', { path: 'a.txt', edits: [{ oldText: 'one', newText: 'ONE' }], expectedSha256: sha('one\ntwo\n') });
  fs.closeSync(fd);
  assert.ok(fired);
  assert.equal(r.ok ? 'ok' : r.error.kind, 'stale_file');
  assert.equal(read('a.txt'), 'one\ntwo\nlate\n');
});

test('a line appended to the new file while a two-file patch is put back is kept after the old text', async () => {
  // b.txt changes under the patch: a.txt (already renamed) is put back; what was appended to it stays.
  let n = 0;
  ws.workspace.files.faultHook = (s) => {
    if (s.phase !== 'renamed') return;
    n++;
    if (s.index === 0) fs.appendFileSync(p('a.txt'), 'after\n');
    if (s.index === 0) fs.appendFileSync(p('b.txt'), 'theirs\n');
  };
  const patch = '*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-bee\n+BEE\n*** End Patch\n';
  const r = await ws.call('apply_patch', { patch });
  assert.equal(n, 2);
  assert.equal(r.ok ? 'ok' : r.error.kind, 'stale_file', JSON.stringify(r));
  assert.deepEqual(fileTree(root), { 'a.txt': 'one\ntwo\nafter\n', 'b.txt': 'bee\ntheirs\n' });
});

test('without another writer the write goes through (the check does not refuse honest writes)', async () => {
  const r = await ws.call('edit_file', { path: 'a.txt', edits: [{ oldText: 'one', newText: 'ONE' }], expectedSha256: sha('one\ntwo\n') });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(read('a.txt'), 'ONE\ntwo\n');
});

test('a file with two hard links is refused by default, with a clear error naming the setting', async () => {
  fs.linkSync(p('a.txt'), p('other-name.txt'));
  const r = await ws.call('edit_file', { path: 'a.txt', edits: [{ oldText: 'one', newText: 'ONE' }], expectedSha256: sha('one\ntwo\n') });
  assert.equal(r.ok ? 'ok' : r.error.kind, 'permission_denied');
  assert.match(r.ok ? '' : `${r.error.message} ${r.error.suggestedAction}`, /hard links.*hard_links = "in_place"/s);
  assert.equal(read('other-name.txt'), 'one\ntwo\n');
  assert.equal(fs.statSync(p('a.txt')).nlink, 2);
});

test('with hard_links = "in_place" both names see the edit (the link is kept)', async () => {
  open({ hardLinks: 'in_place' });
  fs.linkSync(p('a.txt'), p('other-name.txt'));
  const ino = fs.statSync(p('a.txt')).ino;
  const r = await ws.call('edit_file', { path: 'a.txt', edits: [{ oldText: 'one', newText: 'ONE' }], expectedSha256: sha('one\ntwo\n') });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(read('other-name.txt'), 'ONE\ntwo\n');
  assert.equal(fs.statSync(p('a.txt')).ino, ino);
  assert.equal(fs.statSync(p('a.txt')).nlink, 2);
  assert.deepEqual(Object.keys(fileTree(root)).sort(), ['a.txt', 'b.txt', 'other-name.txt'], 'no backup left');
});

test('an edit keeps the file owner and group (as root)', { skip: process.getuid?.() !== 0 ? 'skipped: needs root (uid 0) to own a file as another user' : false }, async () => {
  fs.chownSync(p('a.txt'), 1000, 1000);
  const r = await ws.call('edit_file', { path: 'a.txt', edits: [{ oldText: 'one', newText: 'ONE' }], expectedSha256: sha('one\ntwo\n') });
  assert.ok(r.ok, JSON.stringify(r));
  const st = fs.statSync(p('a.txt'));
  assert.deepEqual([st.uid, st.gid], [1000, 1000]);
});
