import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';
import { okData as data, writeUnder } from '../support/files';
import { grep, ripgrepAvailable } from '../../src/workspace/search';

let tmp: string;
let root: string;
let ws: OpenedWorkspace;

const write = (rel: string, content: string | Buffer): void => writeUnder(root, rel, content);

before(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-search-')));
  root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  write('.gitignore', 'node_modules/\n*.log\n/build\n!keep.log\n');
  write('src/a.ts', 'export const needle = 1;\n// no match here\nconst x = needle + 1;\n');
  write('src/b.tsx', 'needle in tsx\n');
  write('src/nested/.gitignore', 'secret.ts\n');
  write('src/nested/secret.ts', 'needle secret\n');
  write('src/nested/ok.ts', 'needle ok\r\n');
  write('node_modules/pkg/index.js', 'needle in deps\n');
  write('debug.log', 'needle in log\n');
  write('keep.log', 'needle kept\n');
  write('build/out.js', 'needle built\n');
  write('sub/build/out.js', 'needle sub build\n');
  write('.hidden/h.txt', 'needle hidden\n');
  write('.git/HEAD', 'needle in git\n');
  write('bin.dat', Buffer.concat([Buffer.from('needle'), Buffer.from([0, 1, 2])]));
  write('zz-many.txt', Array.from({ length: 1500 }, (_, i) => `needle ${i}`).join('\n') + '\n');
  ws = openWorkspace({ root, dataDir: path.join(tmp, 'data') });
});
after(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('list_directory', () => {
  test('top level, .git skipped, .gitignore honoured', async () => {
    const d = data<{ entries: { path: string; type: string }[] }>(await ws.call('list_directory', {}));
    const names = d.entries.map((e) => e.path);
    assert.deepEqual(names, ['.gitignore', '.hidden', 'bin.dat', 'keep.log', 'src', 'sub', 'zz-many.txt']);
    assert.equal(d.entries.find((e) => e.path === 'src')!.type, 'dir');
  });

  test('recursive, nested .gitignore, includeIgnored', async () => {
    const d = data<{ entries: { path: string }[] }>(await ws.call('list_directory', { path: 'src', recursive: true }));
    assert.deepEqual(d.entries.map((e) => e.path), ['src/a.ts', 'src/b.tsx', 'src/nested', 'src/nested/.gitignore', 'src/nested/ok.ts']);
    const all = data<{ entries: { path: string }[] }>(await ws.call('list_directory', { recursive: true, includeIgnored: true }));
    const paths = all.entries.map((e) => e.path);
    assert.ok(paths.includes('node_modules/pkg/index.js') && paths.includes('debug.log'));
    assert.ok(!paths.some((p) => p.startsWith('.git/')));
  });

  test('not_found and a file path', async () => {
    assert.equal((await ws.call('list_directory', { path: 'nope' }) as { error: { kind: string } }).error.kind, 'not_found');
    assert.equal((await ws.call('list_directory', { path: 'zz-many.txt' }) as { error: { kind: string } }).error.kind, 'invalid_arguments');
  });
});

describe('glob', () => {
  test('fast-glob pattern, sorted, ignored and .git excluded', async () => {
    const d = data<{ paths: string[] }>(await ws.call('glob', { pattern: '**/*.{ts,tsx,js}' }));
    assert.deepEqual(d.paths, ['src/a.ts', 'src/b.tsx', 'src/nested/ok.ts', 'sub/build/out.js']);
    const inSrc = data<{ paths: string[] }>(await ws.call('glob', { pattern: '*.ts', path: 'src' }));
    assert.deepEqual(inSrc.paths, ['src/a.ts']);
    const all = data<{ paths: string[] }>(await ws.call('glob', { pattern: '**/*.log', includeIgnored: true }));
    assert.deepEqual(all.paths, ['debug.log', 'keep.log']);
  });

  test('patterns escaping the root are refused', async () => {
    const r = await ws.call('glob', { pattern: '../**' });
    assert.equal(r.ok, false);
  });
});

describe('grep and search_files', () => {
  test('finds matches sorted by path and line; skips .git, binary and ignored files', async () => {
    const d = data<{ matches: { path: string; line: number; text: string }[]; truncated: boolean; omitted: number }>(
      await ws.call('grep', { pattern: 'needle', include: '*.ts' }),
    );
    assert.deepEqual(d.matches, [
      { path: 'src/a.ts', line: 1, text: 'export const needle = 1;' },
      { path: 'src/a.ts', line: 3, text: 'const x = needle + 1;' },
      { path: 'src/nested/ok.ts', line: 1, text: 'needle ok' },
    ]);
    const all = data<{ matches: { path: string }[]; omitted: number; truncated: boolean; notice: string }>(await ws.call('grep', { pattern: 'needle' }));
    const paths = new Set(all.matches.map((m) => m.path));
    for (const p of ['.hidden/h.txt', 'keep.log', 'src/b.tsx', 'sub/build/out.js']) assert.ok(paths.has(p), p);
    for (const p of ['.git/HEAD', 'bin.dat', 'debug.log', 'build/out.js', 'node_modules/pkg/index.js', 'src/nested/secret.ts']) assert.ok(!paths.has(p), p);
    assert.equal(all.truncated, true);
    // 1,507 matches: the search stops at the cap (1,000 shown + 1 proving there are more; issue 18).
    assert.equal(all.matches.length + all.omitted, 1001);
    assert.match(all.notice, /stopped after 1001 matches; there are more/);
  });

  test('search_files modes: glob, text (literal) and regex', async () => {
    const g = data<{ mode: string; paths: string[] }>(await ws.call('search_files', { mode: 'glob', query: 'src/**/*.ts' }));
    assert.deepEqual(g.paths, ['src/a.ts', 'src/nested/ok.ts']);
    const t = data<{ matches: { path: string; line: number }[] }>(await ws.call('search_files', { mode: 'text', query: 'needle + 1', path: 'src' }));
    assert.deepEqual(t.matches.map((m) => [m.path, m.line]), [['src/a.ts', 3]]);
    const r = data<{ matches: { path: string; line: number }[] }>(await ws.call('search_files', { mode: 'regex', query: '^needle (ok|in)', path: 'src' }));
    assert.deepEqual(r.matches.map((m) => m.path), ['src/b.tsx', 'src/nested/ok.ts']);
  });

  test('an invalid regex is invalid_arguments; a missing path is not_found', async () => {
    assert.equal((await ws.call('grep', { pattern: '(' }) as { error: { kind: string } }).error.kind, 'invalid_arguments');
    assert.equal((await ws.call('grep', { pattern: 'x', path: 'nope' }) as { error: { kind: string } }).error.kind, 'not_found');
  });

  test('the JS path and ripgrep return the same results', async () => {
    const ctx = ws.workspace.searchContext();
    const queries = [
      { pattern: 'needle', startRel: '' },
      { pattern: 'needle', startRel: 'src', include: '*.{ts,tsx}' },
      { pattern: 'needle \\d+0$', startRel: '' },
      { pattern: 'needle', startRel: '', gitignore: false },
      { pattern: 'x = needle', startRel: 'src/a.ts', fixed: true },
    ];
    for (const q of queries) {
      const js = await grep(ctx, { gitignore: true, ...q, engine: 'js' });
      assert.equal(js.engine, 'js');
      assert.ok(js.total > 0, JSON.stringify(q));
      if (ripgrepAvailable()) {
        const rg = await grep(ctx, { gitignore: true, ...q, engine: 'rg' });
        assert.equal(rg.engine, 'rg');
        assert.deepEqual(rg.matches, js.matches, JSON.stringify(q));
      }
    }
  });

  test('CABOOSE_GREP_ENGINE=js forces the JS path through the tool', async () => {
    process.env.CABOOSE_GREP_ENGINE = 'js';
    try {
      const d = data<{ engine: string; matches: unknown[] }>(await ws.call('grep', { pattern: 'needle', path: 'src' }));
      assert.equal(d.engine, 'js');
      assert.equal(d.matches.length, 4);
    } finally {
      delete process.env.CABOOSE_GREP_ENGINE;
    }
  });
});
