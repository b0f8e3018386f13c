/**
 * sha256After resumes an edited file's hash from the old bytes' kept states (issue 24): its result must be
 * sha256Hex of the new bytes whatever the edit — at the start, the end, across a 256 KiB boundary, a
 * different length, a chain of edits, bytes unrelated to the old ones.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { sha256After, sha256Hex } from '../../src/workspace/file-sha';
import { seededRandom } from '../support/rng';

const STEP = 256 * 1024;

function splice(b: Buffer, at: number, del: number, ins: Buffer): Buffer {
  return Buffer.concat([b.subarray(0, at), ins, b.subarray(Math.min(b.length, at + del))]);
}

test('sha256After equals sha256Hex for edits anywhere, chained, and for unrelated bytes', () => {
  const r = seededRandom(24);
  let cur: Buffer = Buffer.from(Array.from({ length: 40_000 }, (_, i) => `line ${i} ${Math.floor(r() * 1e9)}\n`).join(''));
  assert.ok(cur.length > 3 * STEP);
  assert.equal(sha256After(null, cur), sha256Hex(cur));
  const spots = [0, 1, STEP - 1, STEP, STEP + 1, 2 * STEP, cur.length >> 1, cur.length - 5, cur.length];
  for (let k = 0; k < 60; k++) {
    const at = k < spots.length ? Math.min(spots[k], cur.length) : Math.floor(r() * cur.length);
    const del = Math.floor(r() * 40);
    const ins = Buffer.from(k % 7 === 0 ? '' : `edit ${k} ${'x'.repeat(Math.floor(r() * 600))}`);
    const next = splice(cur, at, del, ins);
    assert.equal(sha256After(cur, next), sha256Hex(next), `edit ${k} at ${at}`);
    cur = next;
  }
  // Bytes that share nothing with the old ones, and a shorter file than the old states cover.
  const other = Buffer.alloc(cur.length, 0x61);
  assert.equal(sha256After(cur, other), sha256Hex(other));
  const short = cur.subarray(0, STEP + 10);
  assert.equal(sha256After(cur, short), sha256Hex(short));
});
