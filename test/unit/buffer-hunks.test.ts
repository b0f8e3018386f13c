import test from 'node:test';
import assert from 'node:assert/strict';
import { applyLineHunks, commonPrefix, commonSuffix, countByte, lineHunks, lineHunksBytes } from '../../src/workspace/buffer-hunks';
import { seededRandom } from '../support/rng';

const rng = seededRandom;

const WORDS = ['a', 'b', 'x = 1', '', 'é', '日本', '😀', 'aé', 'value'];

function randomText(r: () => number, lines: number): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) out.push(WORDS[Math.floor(r() * WORDS.length)]);
  return out.length ? out.join('\n') + '\n' : '';
}

function mutate(r: () => number, text: string): string {
  const lines = text === '' ? [] : text.slice(0, -1).split('\n');
  const n = 1 + Math.floor(r() * 3);
  for (let k = 0; k < n; k++) {
    const at = Math.floor(r() * (lines.length + 1));
    const op = r();
    if (op < 0.33) lines.splice(at, 0, WORDS[Math.floor(r() * WORDS.length)]);
    else if (op < 0.66) lines.splice(at, 1);
    else if (at < lines.length) lines[at] = lines[at] + WORDS[Math.floor(r() * WORDS.length)];
  }
  return lines.length ? lines.join('\n') + '\n' : '';
}

test('lineHunksBytes: hunks rebuild the new text (multibyte, inserts, deletes, empty texts)', () => {
  const r = rng(42);
  for (let i = 0; i < 2000; i++) {
    const a = randomText(r, Math.floor(r() * 12));
    const b = r() < 0.1 ? randomText(r, Math.floor(r() * 12)) : mutate(r, a);
    const hunks = lineHunksBytes(Buffer.from(a), Buffer.from(b));
    assert.equal(applyLineHunks(a, hunks), b, JSON.stringify({ a, b, hunks }));
    if (a === b) assert.deepEqual(hunks, []);
  }
});

test('lineHunksBytes gives the same hunks as lineHunks on ASCII text, also across 64 KB blocks', () => {
  const r = rng(7);
  const big = Array.from({ length: 20000 }, (_, i) => `const v${i} = ${i};`).join('\n') + '\n';
  const cases: [string, string][] = [
    [big, big.replace('const v10000 = 10000;', 'const V10000 = 10000;')],
    [big, big.replace('const v1 = 1;\n', '')],
    [big, big + 'tail\n'],
    ['head\n' + big, big],
    [big, big.replace('const v19999 = 19999;', 'x')],
  ];
  for (let i = 0; i < 300; i++) {
    const a = Array.from({ length: Math.floor(r() * 30) }, () => ['a', 'b', 'c'][Math.floor(r() * 3)]).map((l) => l + '\n').join('');
    cases.push([a, mutate(r, a).replace(/[^\x00-\x7f]/g, 'q')]);
  }
  for (const [a, b] of cases) assert.deepEqual(lineHunksBytes(Buffer.from(a), Buffer.from(b)), lineHunks(a, b));
});

test('commonPrefix, commonSuffix and countByte match naive loops', () => {
  const r = rng(3);
  for (let i = 0; i < 300; i++) {
    const n = Math.floor(r() * 200_000);
    const a = Buffer.alloc(n, 'ab\n');
    const b = Buffer.from(a);
    if (n > 0 && r() < 0.8) b[Math.floor(r() * n)] ^= 1;
    const c = r() < 0.3 ? Buffer.concat([b, Buffer.from('zz')]) : b;
    let p = 0;
    while (p < Math.min(a.length, c.length) && a[p] === c[p]) p++;
    let s = 0;
    while (s < Math.min(a.length, c.length) && a[a.length - 1 - s] === c[c.length - 1 - s]) s++;
    assert.equal(commonPrefix(a, c), p);
    assert.equal(commonSuffix(a, c), s);
    assert.equal(commonSuffix(a, c, 5), Math.min(s, 5));
  }
  const buf = Buffer.from('a\nb\n\nc');
  assert.equal(countByte(buf, 10), 3);
  assert.equal(countByte(buf, 10, 2, 4), 1);
});

test('countByte: the line count before a position, remembered per memory block, is exact at every position (forward, backward, views)', () => {
  const b = Buffer.from(Array.from({ length: 3000 }, (_, i) => 'é'.repeat(i % 5) + 'x'.repeat(i % 7) + '\n').join(''));
  const naive = (buf: Buffer, to: number) => {
    let n = 0;
    for (let i = 0; i < Math.min(to, buf.length); i++) if (buf[i] === 10) n++;
    return n;
  };
  let seed = 7;
  const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  for (let k = 0; k < 3000; k++) {
    const view = k % 4 === 0 ? b.subarray(3) : k % 4 === 1 ? b.subarray(0, b.length - 2) : b;
    const to = rnd(view.length + 5);
    assert.equal(countByte(view, 10, 0, to), naive(view, to), `at ${to}`);
  }
  // Other bytes and ranges not starting at 0 are counted as before.
  assert.equal(countByte(b, 0x78, 10, 500), [...b.subarray(10, 500)].filter((c) => c === 0x78).length);
});
