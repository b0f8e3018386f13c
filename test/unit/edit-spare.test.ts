/**
 * Issue 24 (the clean edit's tail): the new bytes of a large file's edit go into a spare buffer allocated
 * after the previous edit returned (src/tools/edit_file.ts joinPieces / prepareSpare), so that the host's
 * full garbage collection their allocation starts falls between calls. The spare must give the same bytes
 * as Buffer.concat, never hand the same memory out twice, and show nothing but the bytes (zeros behind).
 * And a chain of edits through it lands the right bytes on disk.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { joinPieces, prepareSpare } from '../../src/tools/edit_file';
import { openWorkspace } from '../../src/index';

const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
const MB = 1 << 20;

test('joinPieces: the spare made after a large join holds the next join, is handed out once, and has zeros behind the bytes', async () => {
  const a = Buffer.alloc(MB + 5, 0x61);
  const b = Buffer.from('middle');
  const c = Buffer.alloc(1000, 0x63);
  const first = joinPieces([a, b, c]);
  assert.deepEqual(first, Buffer.concat([a, b, c]));
  prepareSpare();
  await sleep(20);
  const second = joinPieces([c, b, a]);
  assert.deepEqual(second, Buffer.concat([c, b, a]));
  assert.ok(second.buffer.byteLength > second.length, 'precondition: the spare was used (a view of a larger buffer)');
  assert.equal(second.byteOffset, 0);
  const behind = Buffer.from(second.buffer, second.length, second.buffer.byteLength - second.length);
  assert.ok(behind.every((x) => x === 0), 'nothing but zeros behind the bytes');
  // The spare is gone: the next join (no prepareSpare in between) gets its own memory.
  const third = joinPieces([a, b]);
  assert.deepEqual(third, Buffer.concat([a, b]));
  assert.notEqual(third.buffer, second.buffer, 'the spare is handed out once');
  // Larger than the spare: Buffer.concat, same bytes.
  prepareSpare();
  await sleep(20);
  const big = Buffer.alloc(2 * MB, 0x62);
  const fourth = joinPieces([big, a]);
  assert.deepEqual(fourth, Buffer.concat([big, a]));
  assert.ok(fourth.buffer !== second.buffer);
  // Small joins never take the spare.
  const small = joinPieces([b, c]);
  assert.deepEqual(small, Buffer.concat([b, c]));
  const after = joinPieces([c, b, a]);
  assert.ok(after.buffer.byteLength > after.length, 'the spare was still there for a large join');
});

test('a chain of edits of a 1.5 MB file through the spare: every sha256 and the bytes on disk are right', async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-spare-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  let text = Array.from({ length: 60_000 }, (_, i) => `const v${i} = ${i}; // a line of the file\n`).join('');
  assert.ok(text.length > 1.5e6, 'precondition: above the spare\'s minimum (1 MiB)');
  fs.writeFileSync(path.join(root, 'big.ts'), text);
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 'spare' });
  try {
    let sha = createHash('sha256').update(text).digest('hex');
    for (let i = 0; i < 6; i++) {
      const from = `v${1000 * i + 7} = `;
      const to = `w${1000 * i + 7} = ${'x'.repeat(i * 300)}`;
      const r = await ws.call('edit_file', { path: 'big.ts', expectedSha256: sha, edits: [{ oldText: from, newText: to }] });
      assert.ok(r.ok, JSON.stringify(r));
      text = text.replace(from, to);
      sha = (r.data as { sha256: string }).sha256;
      assert.equal(sha, createHash('sha256').update(text).digest('hex'));
      assert.equal(fs.readFileSync(path.join(root, 'big.ts'), 'utf8'), text);
      await sleep(10);
    }
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
