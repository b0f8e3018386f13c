import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace } from '../../src/index';
import { applyHunks, computeHunks } from '../../src/workspace/review';
import { editFileTool } from '../../src/tools/edit_file';
import { applyPatchTool } from '../../src/tools/apply_patch';
import type { ToolContext } from '../../src/tools/tool';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');
const ORIG = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'].join('\n') + '\n';

describe('hunks', () => {
  test('each change is its own hunk, numbered like a unified diff, with the changed words', () => {
    const after = ORIG.replace('two', 'TWO').replace('five\n', '').replace('eight', 'eight\nextra');
    const hunks = computeHunks(ORIG, after);
    assert.equal(hunks.length, 3);
    assert.deepEqual(hunks.map((h) => [h.oldStart, h.oldLines, h.newStart, h.newLines]), [[2, 1, 2, 1], [5, 1, 4, 0], [8, 0, 8, 1]]);
    assert.deepEqual(hunks[0].removed, ['two']);
    assert.deepEqual(hunks[0].added, ['TWO']);
    assert.deepEqual(hunks[2].added, ['extra']);
    const words = computeHunks('local x = 1\n', 'local y = 1\n')[0].words;
    assert.deepEqual(words, [[0, 6, 7]], 'only the changed word, in bytes');
    assert.deepEqual(computeHunks('é x\n', 'é y\n')[0].words, [[0, 3, 4]], 'byte columns past a multibyte character');
  });

  test('applyHunks writes exactly the accepted hunks', () => {
    const after = ORIG.replace('two', 'TWO').replace('five', 'FIVE').replace('nine', 'NINE');
    assert.equal(applyHunks(ORIG, after, new Set()), after);
    assert.equal(applyHunks(ORIG, after, new Set([1, 2, 3])), ORIG);
    assert.equal(applyHunks(ORIG, after, new Set([2])), ORIG.replace('two', 'TWO').replace('nine', 'NINE'));
    // The final line break follows the last hunk's fate.
    assert.equal(applyHunks('a\nb', 'a\nB\n', new Set([1])), 'a\nb');
    assert.equal(applyHunks('a\nb', 'a\nB\n', new Set()), 'a\nB\n');
    assert.equal(applyHunks('', 'x\n', new Set()), 'x\n');
  });
});

describe('partial apply through the write path', () => {
  let tmp: string;
  let root: string;
  let ws: OpenedWorkspace;
  const ctx = (): ToolContext => ({ signal: new AbortController().signal, workspace: ws.workspace, sessionId: 's' });
  beforeEach(() => {
    tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-review-')));
    root = path.join(tmp, 'ws');
    fs.mkdirSync(root);
    ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 's' });
  });
  afterEach(() => {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const threeEdits = (s: string) => ({
    path: 'a.txt',
    expectedSha256: s,
    edits: [
      { oldText: 'two', newText: 'TWO' },
      { oldText: 'five', newText: 'FIVE' },
      { oldText: 'nine', newText: 'NINE' },
    ],
  });

  test('hunks 1 and 3 accepted, 2 rejected: the file holds exactly those; the result says what was applied and why not', async () => {
    fs.writeFileSync(path.join(root, 'a.txt'), ORIG.replace(/\n/g, '\r\n'));
    const before = fs.readFileSync(path.join(root, 'a.txt'));
    const args = threeEdits(sha(before));
    const preview = await editFileTool.preview!(args, ctx());
    assert.equal(preview.kind, 'diff');
    const file = preview.kind === 'diff' ? preview.files![0] : undefined;
    assert.equal(file?.hunks.length, 3);
    assert.equal(file?.beforeSha256, sha(before));
    const r = await ws.call('edit_file', args, { review: { files: [{ path: 'a.txt', beforeSha256: sha(before), rejected: [{ hunk: 2, reason: 'keep five lowercase' }] }] } });
    assert.equal(r.ok, true, JSON.stringify(r));
    const want = ORIG.replace('two', 'TWO').replace('nine', 'NINE').replace(/\n/g, '\r\n');
    const now = fs.readFileSync(path.join(root, 'a.txt'));
    assert.equal(now.toString(), want, 'CRLF kept, hunk 2 not applied');
    const data = (r as { data: { sha256: string; review: { applied: unknown; rejected: { hunk: number; reason?: string; removed: string; added: string }[]; message: string } } }).data;
    assert.equal(data.sha256, sha(now), 'the sha256 of what was written');
    assert.deepEqual(data.review.applied, [{ path: 'a.txt', hunks: [1, 3] }]);
    assert.deepEqual(data.review.rejected, [{ path: 'a.txt', hunk: 2, removed: 'five', added: 'FIVE', reason: 'keep five lowercase' }]);
    assert.match(data.review.message, /rejected a\.txt hunk 2 \(reason: keep five lowercase\)/);
    const rows = ws.workspace.audit.list();
    assert.equal(rows[0].afterSha256, sha(now), 'the audit row has the sha256 of what was written');
    assert.equal(ws.verifyAuditLog().ok, true);
  });

  test('a file changed since the review began is refused as stale_file and left alone', async () => {
    fs.writeFileSync(path.join(root, 'a.txt'), ORIG);
    const args = threeEdits(sha(ORIG));
    fs.writeFileSync(path.join(root, 'a.txt'), ORIG + 'ten\n');
    const r = await ws.call('edit_file', { ...args, expectedSha256: sha(ORIG + 'ten\n') }, { review: { files: [{ path: 'a.txt', beforeSha256: sha(ORIG), rejected: [{ hunk: 2 }] }] } });
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.error.kind, 'stale_file');
    assert.match(!r.ok ? r.error.message : '', /changed while the user was reviewing/);
    assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), ORIG + 'ten\n');
  });

  test('multi-file apply_patch: a file rejected whole is not written (nor trashed), the others commit together', async () => {
    fs.writeFileSync(path.join(root, 'a.txt'), ORIG);
    fs.writeFileSync(path.join(root, 'gone.txt'), 'bye\n');
    const patch = ['*** Begin Patch', '*** Update File: a.txt', '@@', ' one', '-two', '+TWO', ' three', '@@', ' eight', '-nine', '+NINE', '*** Delete File: gone.txt', '*** Add File: new.txt', '+fresh', '*** End Patch'].join('\n');
    const args = { patch, expectedSha256ByPath: { 'a.txt': sha(ORIG), 'gone.txt': sha('bye\n'), 'new.txt': '' } };
    const preview = await applyPatchTool.preview!(args as never, ctx());
    const files = preview.kind === 'diff' ? preview.files! : [];
    assert.deepEqual(files.map((f) => [f.path, f.operation, f.hunks.length]).sort(), [['a.txt', 'edit', 2], ['gone.txt', 'delete', 1], ['new.txt', 'create', 1]]);
    const r = await ws.call('apply_patch', args, {
      review: { files: [{ path: 'gone.txt', beforeSha256: sha('bye\n'), rejected: [{ hunk: 1, reason: 'still used' }] }, { path: 'a.txt', beforeSha256: sha(ORIG), rejected: [{ hunk: 1 }] }] },
    });
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), ORIG.replace('nine', 'NINE'));
    assert.equal(fs.readFileSync(path.join(root, 'gone.txt'), 'utf8'), 'bye\n', 'the rejected delete did not happen');
    assert.equal(fs.readFileSync(path.join(root, 'new.txt'), 'utf8'), 'fresh\n');
    assert.equal(ws.listTrash().length, 0, 'nothing went to the trash');
    const data = (r as { data: { files: { path: string }[] } }).data;
    assert.deepEqual(data.files.map((f) => f.path).sort(), ['a.txt', 'new.txt']);
  });
});
