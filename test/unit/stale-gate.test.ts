/** The stale-file gate on its own (src/workspace/stale-gate.ts): which side changed, and made-up sha256s. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StaleGate } from '../../src/workspace/stale-gate';
import type { FileView } from '../../src/workspace/file-view';
import { ToolError } from '../../src/workspace/errors';

const ABS = '/nonexistent-caboose-root/a.txt';
const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);

function disk(sha: string | null): FileView {
  return sha === null
    ? { abs: ABS, kind: 'missing', bytes: null, sha256: null, mode: null, size: 0, source: 'disk' }
    : { abs: ABS, kind: 'file', bytes: Buffer.from('x'), sha256: sha, mode: 0o644, size: 1, source: 'disk' };
}

function buffer(sha: string, diskSha: string | null): FileView {
  return { abs: ABS, kind: 'file', bytes: Buffer.from('x'), sha256: sha, mode: 0o644, size: 1, source: 'buffer', diskSha256: diskSha, changedtick: 3 };
}

/** The ToolError assertFresh throws (or null when it passes). */
function refusal(gate: StaleGate, view: FileView, expected: string | undefined): ToolError | null {
  try {
    gate.assertFresh(view, expected, 'a.txt');
    return null;
  } catch (e) {
    assert.ok(e instanceof ToolError, `a ToolError, got ${String(e)}`);
    return e;
  }
}

test('no expected sha256 passes; "" asserts the path is absent', () => {
  const gate = new StaleGate();
  assert.equal(refusal(gate, disk(A), undefined), null);
  assert.equal(refusal(gate, disk(null), ''), null);
  const e = refusal(gate, disk(A), '');
  assert.equal(e?.kind, 'stale_file');
  assert.match(e!.message, /exists, but the expected sha256 "" asserts it does not/);
});

test('a FIFO, socket or device is refused as not a regular file, whatever the sha256', () => {
  const gate = new StaleGate();
  const other: FileView = { abs: ABS, kind: 'other', bytes: null, sha256: null, mode: 0o644, size: 0, source: 'disk' };
  const e = refusal(gate, other, undefined);
  assert.equal(e?.kind, 'permission_denied');
  assert.match(e!.message, /not a regular file/);
});

test('the disk as read passes (any case); a changed disk says the disk changed', () => {
  const gate = new StaleGate();
  gate.noteGiven(ABS, A);
  assert.equal(refusal(gate, disk(A), A.toUpperCase()), null);
  const e = refusal(gate, disk(B), A);
  assert.equal(e?.kind, 'stale_file');
  assert.match(e!.message, /the file on disk changed/);
  assert.deepEqual(e!.details, { bufferChanged: false, diskChanged: true });
});

test('a file gone since the read says it no longer exists', () => {
  const gate = new StaleGate();
  gate.noteGiven(ABS, A);
  assert.match(refusal(gate, disk(null), A)!.message, /no longer exists/);
});

test('a sha256 no read or write gave is told apart from a change', () => {
  const gate = new StaleGate();
  const unread = refusal(gate, disk(B), A);
  assert.equal(unread?.kind, 'stale_file');
  assert.match(unread!.message, /this file was not read in this session/);
  assert.deepEqual(unread!.details, { bufferChanged: false, diskChanged: false, unknownSha256: true });
  gate.noteGiven(ABS, C);
  assert.match(refusal(gate, disk(B), A)!.message, /no read or write of this file returned it/);
});

test('an unsaved buffer read: the buffer side and the disk side are checked apart', () => {
  const gate = new StaleGate();
  gate.remember(ABS, A, C);
  assert.equal(refusal(gate, buffer(A, C), A), null);
  const bufferEdit = refusal(gate, buffer(B, C), A);
  assert.deepEqual(bufferEdit!.details, { bufferChanged: true, diskChanged: false });
  assert.match(bufferEdit!.message, /the Neovim buffer changed/);
  const diskWrite = refusal(gate, buffer(A, B), A);
  assert.deepEqual(diskWrite!.details, { bufferChanged: false, diskChanged: true });
  const both = refusal(gate, buffer(B, B), A);
  assert.match(both!.message, /both the Neovim buffer .* and the file on disk changed/);
});

test('an unsaved buffer read, then saved or discarded: viewed from disk, the buffer side changed', () => {
  const gate = new StaleGate();
  gate.remember(ABS, A, C);
  // Discarded: the disk is still what was seen with the buffer.
  assert.deepEqual(refusal(gate, disk(C), A)!.details, { bufferChanged: true, diskChanged: false });
  // Saved with other text: the disk changed too.
  assert.deepEqual(refusal(gate, disk(B), A)!.details, { bufferChanged: true, diskChanged: true });
  // Saved as read: the disk now holds exactly what the agent read.
  assert.equal(refusal(gate, disk(A), A), null);
});
