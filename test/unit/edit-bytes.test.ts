import test from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyEdits, applyEditsToBytes, type TextEdit } from '../../src/workspace/edits';
import { fileDiff, fileDiffBytes } from '../../src/workspace/text-diff';
import { keepFinalNewline } from '../../src/workspace/encoding';
import { openWorkspace } from '../../src/index';
import { seededRandom } from '../support/rng';

const rng = seededRandom;

const PARTS = ['a', 'b', 'ab', '\n', 'é', '日本', '😀', ' x = 1;', 'aa\n'];
const pick = (r: () => number) => PARTS[Math.floor(r() * PARTS.length)];

test('applyEditsToBytes equals applyEdits, and returns null exactly where applyEdits throws', () => {
  const r = rng(11);
  for (let i = 0; i < 3000; i++) {
    const text = Array.from({ length: Math.floor(r() * 25) }, () => pick(r)).join('');
    const edits: TextEdit[] = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({
      oldText: r() < 0.05 ? '' : Array.from({ length: 1 + Math.floor(r() * 2) }, () => pick(r)).join(''),
      newText: Array.from({ length: Math.floor(r() * 3) }, () => pick(r)).join(''),
      ...(r() < 0.3 ? { replaceAll: true } : {}),
    }));
    let expected: string | null;
    try {
      expected = applyEdits(text, edits, 'f');
    } catch {
      expected = null;
    }
    const pieces = applyEditsToBytes(Buffer.from(text), edits);
    assert.equal(pieces === null ? null : Buffer.concat(pieces).toString('utf8'), expected, JSON.stringify({ text, edits }));
  }
  // A lone surrogate is encoded as U+FFFD: the byte path declines instead of matching a real U+FFFD.
  assert.equal(applyEditsToBytes(Buffer.from('a\ufffdb'), [{ oldText: '\ud800', newText: 'x' }]), null);
});

test('fileDiffBytes gives the same diff as fileDiff, small and large, ASCII and multibyte', () => {
  const r = rng(5);
  const big = Array.from({ length: 12000 }, (_, i) => `line ${i} ${i % 7 === 0 ? 'é日😀' : 'ascii'} text`).join('\n') + '\n';
  const lines = big.split('\n');
  const cases: [string, string][] = [
    ['a\nb\n', 'a\nc\n'],
    [big, big],
    [big, big.replace('line 6000 ', 'LINE 6000 ')],
    [big, big.replace('line 0 ', 'first ')],
    [big, big.replace('line 11999 ', 'last ')],
    [big, big + 'more\n'],
    [big, 'new head\n' + big],
    [big, big.slice(0, -1)],
    [big, lines.slice(0, 5000).concat(lines.slice(5003)).join('\n')],
    [big, big.replace(/line 3000 .*\n/, '').replace('line 9000 ', 'é')],
  ];
  for (let i = 0; i < 40; i++) {
    const at = Math.floor(r() * (lines.length - 10));
    const copy = [...lines];
    copy.splice(at, Math.floor(r() * 4), ...Array.from({ length: Math.floor(r() * 4) }, () => pick(r) + pick(r)));
    cases.push([big, copy.join('\n')]);
  }
  for (const [a, b] of cases) assert.equal(fileDiffBytes('f.ts', 'f.ts', Buffer.from(a), Buffer.from(b)), fileDiff('f.ts', 'f.ts', a, b));
});

test('edit_file on a large file: BOM, missing final newline and CRLF files keep their format', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-editbytes-'));
  const ws = openWorkspace({ root: path.join(tmp), dataDir: path.join(tmp, '.data') });
  try {
    const body = Array.from({ length: 30000 }, (_, i) => `const v${i} = "é${i}";`).join('\n');
    const files: Record<string, string> = {
      'bom.ts': '\ufeff' + body + '\n',
      'noeol.ts': body,
      'crlf.ts': body.split('\n').join('\r\n') + '\r\n',
    };
    for (const [name, text] of Object.entries(files)) {
      fs.writeFileSync(path.join(tmp, name), text);
      const expectedSha256 = createHash('sha256').update(fs.readFileSync(path.join(tmp, name))).digest('hex');
      const r = await ws.call('edit_file', { path: name, expectedSha256, edits: [{ oldText: 'const v15000 = ', newText: 'let v15000 =\n  ' }, { oldText: 'const v29999 = "é29999";', newText: 'end\n' }] });
      assert.ok(r.ok, JSON.stringify(r));
      const model = (name === 'crlf.ts' ? text.split('\r\n').join('\n') : text.replace('\ufeff', ''))
        .replace('const v15000 = ', 'let v15000 =\n  ')
        .replace('const v29999 = "é29999";', 'end\n');
      let want = keepFinalNewline(model, name !== 'noeol.ts');
      if (name === 'crlf.ts') want = want.split('\n').join('\r\n');
      if (name === 'bom.ts') want = '\ufeff' + want;
      assert.equal(fs.readFileSync(path.join(tmp, name), 'utf8'), want, name);
      const data = r.data as { diff: string };
      assert.match(data.diff, /@@ -14998,7 \+14998,8 @@/);
    }
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
