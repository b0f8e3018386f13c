/** Regression found by the crash stress suite: diffs of rewritten large files took minutes (quadratic). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileDiff } from '../../src/workspace/text-diff';
import { parsePatch, planPatch, unifiedDiff, type FileState } from '../../src/workspace/patch';
import { applyHunks, computeHunks } from '../../src/workspace/review';

const text = (n: number, tag: string, finalNewline = true) =>
  Array.from({ length: n }, (_, i) => `line ${i} of ${tag} ${(i * 7919) % 1000}`).join('\n') + (finalNewline ? '\n' : '');

function applies(diff: string, oldText: string, newText: string): void {
  const read = (p: string): FileState => (p === 'f.txt' ? { kind: 'file', text: oldText } : { kind: 'missing' });
  const [change] = planPatch(parsePatch(diff), read);
  assert.equal(change?.newText, newText);
}

test('the diff of a rewritten 8,000-line file is bounded in time and still applies', () => {
  const before = text(8000, 'old');
  const after = text(8000, 'new');
  const t = performance.now();
  const diff = fileDiff('f.txt', 'f.txt', before, after);
  const ms = performance.now() - t;
  assert.ok(ms < 3000, `took ${ms.toFixed(0)} ms`);
  applies(diff, before, after);
});

test('past the edit-length bound the diff is one hunk between the common lines, final line breaks included', () => {
  const head = text(5, 'same');
  const cases: [string, string][] = [
    [head + text(1200, 'old') + 'tail\n', head + text(1100, 'new') + 'tail\n'],
    [head + text(1200, 'old', false), head + text(1200, 'new')],
    [text(1200, 'old'), text(1200, 'new', false)],
    ['', text(1200, 'new')],
  ];
  for (const [a, b] of cases) {
    const diff = unifiedDiff('f.txt', a, b);
    assert.equal((diff.match(/^@@ /gm) ?? []).length, 1);
    applies(diff, a, b);
  }
  // Small changes are still minimal.
  assert.match(unifiedDiff('f.txt', 'a\nb\nc\n', 'a\nB\nc\n'), /@@ -1,3 \+1,3 @@\n a\n-b\n\+B\n c\n$/);
});

test('review hunks of a rewritten file are bounded too, and apply or reject as a whole', () => {
  const before = text(8000, 'old');
  const after = text(8000, 'new');
  const t = performance.now();
  const hunks = computeHunks(before, after);
  assert.ok(performance.now() - t < 3000);
  assert.equal(hunks.length, 1);
  assert.equal(applyHunks(before, after, new Set()), after);
  assert.equal(applyHunks(before, after, new Set([1])), before);
});
