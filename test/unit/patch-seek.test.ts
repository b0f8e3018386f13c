import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePunctuation, seekSequence } from '../../src/workspace/patch/seek';

const FILE = ['alpha', 'beta  ', '  gamma', 'delta — “quoted”', 'beta', 'end'];

test('exact stage wins and returns the first match from start', () => {
  assert.deepEqual(seekSequence(FILE, ['beta']), { index: 4, stage: 'exact' });
  assert.deepEqual(seekSequence(['x', 'y', 'x', 'y'], ['x', 'y'], { start: 1 }), { index: 2, stage: 'exact' });
});

test('trim_end stage ignores trailing whitespace and CR', () => {
  assert.deepEqual(seekSequence(FILE, ['alpha', 'beta']), { index: 0, stage: 'trim_end' });
  assert.deepEqual(seekSequence(['a\r', 'b\r'], ['a', 'b']), { index: 0, stage: 'trim_end' });
});

test('trim stage ignores leading whitespace', () => {
  assert.deepEqual(seekSequence(FILE, ['gamma']), { index: 2, stage: 'trim' });
  assert.deepEqual(seekSequence(['\tif (x) {', '\t\treturn;'], ['if (x) {', 'return;']), { index: 0, stage: 'trim' });
});

test('unicode stage maps dashes, quotes and odd spaces to ASCII', () => {
  assert.deepEqual(seekSequence(FILE, ['delta - "quoted"']), { index: 3, stage: 'unicode' });
  assert.deepEqual(seekSequence(['it’s\u00a0ok…'], ["it's ok..."]), { index: 0, stage: 'unicode' });
  // and the other way round: ASCII in the file, typographic punctuation in the patch
  assert.deepEqual(seekSequence(['a - b'], ['a – b']), { index: 0, stage: 'unicode' });
  assert.equal(normalizePunctuation('  ‘x’ — “y”\u2009z\u3000'), `'x' - "y" z`);
});

test('a stricter stage beats a closer looser match', () => {
  // 'beta  ' at 1 matches only with trim_end; 'beta' at 4 is exact, so 4 wins.
  assert.equal(seekSequence(FILE, ['beta'], { hint: 1 })?.index, 4);
});

test('no match returns undefined', () => {
  assert.equal(seekSequence(FILE, ['missing']), undefined);
  assert.equal(seekSequence(FILE, ['alpha'], { start: 1 }), undefined);
  assert.equal(seekSequence(['a'], ['a', 'b']), undefined);
  assert.equal(seekSequence([], ['a']), undefined);
});

test('empty pattern matches at start, or at the end with eof', () => {
  assert.deepEqual(seekSequence(FILE, [], { start: 2 }), { index: 2, stage: 'exact' });
  assert.deepEqual(seekSequence(FILE, [], { eof: true }), { index: FILE.length, stage: 'exact' });
});

test('eof tries the end of the file first, then falls back to a normal search', () => {
  const lines = ['x', 'y', 'x'];
  assert.equal(seekSequence(lines, ['x'])?.index, 0);
  assert.equal(seekSequence(lines, ['x'], { eof: true })?.index, 2);
  assert.equal(seekSequence(lines, ['y'], { eof: true })?.index, 1);
  // a lenient match at the end beats an exact one elsewhere
  assert.deepEqual(seekSequence(['x', 'y', ' x '], ['x'], { eof: true }), { index: 2, stage: 'trim' });
});

test('hint picks the closest match, earlier one on a tie', () => {
  const lines = ['a', 'b', 'a', 'b', 'a', 'b'];
  assert.equal(seekSequence(lines, ['a', 'b'], { hint: 3 })?.index, 2);
  assert.equal(seekSequence(lines, ['a', 'b'], { hint: 5 })?.index, 4);
  assert.equal(seekSequence(lines, ['a', 'b'], { hint: 0 })?.index, 0);
  assert.equal(seekSequence(lines, ['a', 'b'], { hint: 3, start: 3 })?.index, 4);
  assert.equal(seekSequence(lines, ['a', 'b'], { hint: 99 })?.index, 4);
});
