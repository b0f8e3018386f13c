/** ARCHITECTURE.md names a real file (or folder) for every step: each path it names in backticks exists. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/** Backticked words that are paths: they hold a slash, or end in a source or doc extension. */
function namedPaths(md: string): string[] {
  const out = new Set<string>();
  for (const m of md.matchAll(/`([^`\s]+)`/g)) {
    const word = m[1];
    if (/[*<>]/.test(word)) continue; // a glob, not a path
    if (word.includes('/') || /\.(ts|lua|md|mjs|js|json)$/.test(word)) out.add(word);
  }
  return [...out];
}

test('every path ARCHITECTURE.md names in backticks exists', () => {
  const md = fs.readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const paths = namedPaths(md);
  assert.ok(paths.length >= 30, `precondition: the page names its files (found ${paths.length})`);
  const missing = paths.filter((p) => !fs.existsSync(path.join(ROOT, p)));
  assert.deepEqual(missing, [], `ARCHITECTURE.md names paths that do not exist: ${missing.join(', ')}`);
});

test('the path check sees paths and skips commands and names', () => {
  assert.deepEqual(namedPaths('`src/a.ts` `:Caboose x` `session.send` `M.send` `lua/caboose/init.lua` `store` `README.md` `src/**/x`'), [
    'src/a.ts',
    'lua/caboose/init.lua',
    'README.md',
  ]);
});
