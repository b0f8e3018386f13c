/**
 * Issue 18, item 8: ripgrep opens files by path, so a match it read through a folder swapped for a link
 * to outside must not reach the model. A stand-in `rg` on PATH reports one true match and one forged
 * line (as if read outside); only the line the file inside really holds is kept.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { anchoringSupported } from '../../src/workspace/anchored';

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-rgv-')));
const bin = path.join(tmp, 'bin');
fs.mkdirSync(bin);
const event = (p: string, line: number, text: string) => JSON.stringify({ type: 'match', data: { path: { text: p }, lines: { text }, line_number: line } });
fs.writeFileSync(
  path.join(bin, 'rg'),
  `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "ripgrep 14 (stand-in)"; exit 0; fi\ncat <<'EOF'\n${event('d/f.txt', 1, 'inside line\n')}\n${event('d/f.txt', 2, 'OUTSIDE-CANARY read through a swapped link\n')}\n${event('d/gone.txt', 1, 'OUTSIDE-CANARY\n')}\nEOF\nexit 0\n`,
  { mode: 0o755 },
);
process.env.PATH = `${bin}${path.delimiter}${process.env.PATH}`;
delete process.env.CABOOSE_GREP_ENGINE;
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('ripgrep matches are kept only when the file read through a verified handle holds that line', async (t) => {
  if (!anchoringSupported()) return t.skip('skipped: /proc/self/fd not found (handles cannot be verified here)');
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(path.join(root, 'd'), { recursive: true });
  fs.writeFileSync(path.join(root, 'd', 'f.txt'), 'inside line\nsecond line\n');
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 't' });
  try {
    const res = await ws.call('grep', { pattern: 'line|CANARY' });
    assert.ok(res.ok, JSON.stringify(res));
    const data = res.data as { engine: string; matches: { path: string; line: number; text: string }[] };
    assert.equal(data.engine, 'rg', 'the stand-in ripgrep ran');
    assert.deepEqual(data.matches, [{ path: 'd/f.txt', line: 1, text: 'inside line' }]);
  } finally {
    ws.close();
  }
});
