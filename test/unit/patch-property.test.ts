/**
 * Property: for random files and random edits, a unified diff produced by the `diff` package,
 * parsed by parsePatch and applied by planPatch, reproduces the new text exactly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTwoFilesPatch } from 'diff';
import { parsePatch, planPatch, type FileState } from '../../src/workspace/patch';
import { seededRandom } from '../support/rng';
import { joinLines as join, randomEdit, randomLines } from '../support/fuzz-gen';

const prng = seededRandom;

test('unified diffs from the diff package round-trip through parsePatch + planPatch', () => {
  const rand = prng(20240611);
  let checked = 0;
  for (let iter = 0; iter < 3000; iter++) {
    const eol = rand() < 0.2 ? '\r\n' : '\n';
    const oldLines = randomLines(rand, 14);
    const newLines = randomEdit(rand, oldLines);
    const oldText = join(oldLines, eol, rand() < 0.8);
    const newText = join(newLines, eol, rand() < 0.8);
    if (oldText === newText) continue;
    const context = Math.floor(rand() * 5);
    const patch = createTwoFilesPatch('a/f.txt', 'b/f.txt', oldText, newText, undefined, undefined, { context });
    const read = (p: string): FileState => (p === 'f.txt' ? { kind: 'file', text: oldText } : { kind: 'missing' });
    let got: string | undefined;
    try {
      const changes = planPatch(parsePatch(patch), read);
      assert.equal(changes.length, 1);
      got = changes[0]?.newText;
    } catch (err) {
      assert.fail(`iteration ${iter}: ${(err as Error).message}\n--- patch ---\n${JSON.stringify(patch)}\nold=${JSON.stringify(oldText)}`);
    }
    assert.equal(got, newText, `iteration ${iter}\n${JSON.stringify(patch)}\nold=${JSON.stringify(oldText)}`);
    checked++;
  }
  assert.ok(checked > 2500, `only ${checked} cases were checked`);
});
