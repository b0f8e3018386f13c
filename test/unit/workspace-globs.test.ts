import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';
import { okData as data, writeUnder } from '../support/files';
import { compileGlob, compileGlobList, escapeGlob } from '../../src/workspace/glob-match';
import { IgnoreMatcher } from '../../src/workspace/ignore';
import { grep, ripgrepAvailable } from '../../src/workspace/search';

/** Asserts which of `paths` the matcher accepts. */
function accepts(match: (p: string) => boolean, yes: string[], no: string[]): void {
  for (const p of yes) assert.equal(match(p), true, `should match ${JSON.stringify(p)}`);
  for (const p of no) assert.equal(match(p), false, `should not match ${JSON.stringify(p)}`);
}

// Cases after picomatch's own suite (brackets, braces, globstars, negation, dotfiles, escapes).
describe('compileGlob: one glob against a whole path (grep and search_files include filters)', () => {
  test('* and ? stay within a segment', () => {
    accepts(compileGlob('*.ts'), ['a.ts', '.eslintrc.ts'], ['a.tsx', 'dir/a.ts']);
    accepts(compileGlob('a?.js'), ['ab.js', 'a..js'], ['abc.js', 'a.js', 'a/.js']);
  });

  test('braces choose between alternatives, also around path segments', () => {
    accepts(compileGlob('*.{ts,tsx}'), ['a.ts', 'a.tsx'], ['a.js', 'a.t']);
    accepts(compileGlob('{src,test}/**/*.ts'), ['src/a.ts', 'test/x/y.ts'], ['lib/a.ts', 'src/a.js']);
    accepts(compileGlob('file{1..3}.txt'), ['file1.txt', 'file3.txt'], ['file4.txt']);
  });

  test('character classes: ranges and negation with ! or ^ (as in Bash and ripgrep)', () => {
    accepts(compileGlob('[a-c]*.md'), ['a.md', 'changelog.md'], ['d.md', 'A.md']);
    accepts(compileGlob('[!x]*'), ['ay', 'b'], ['xy', 'x']);
    accepts(compileGlob('[^x]*'), ['ay'], ['xy']);
    accepts(compileGlob('v[0-9].txt'), ['v1.txt'], ['va.txt', 'v10.txt']);
  });

  test('** spans any number of folders, also none, in the middle of a glob', () => {
    accepts(compileGlob('src/**/test/*.ts'), ['src/test/a.ts', 'src/a/b/test/a.ts'], ['src/a/test/b/c.ts', 'lib/test/a.ts']);
    accepts(compileGlob('**/*.ts'), ['a.ts', 'x/y/a.ts', '.hidden/a.ts'], ['a.js']);
    accepts(compileGlob('a/**'), ['a/b', 'a/b/c'], ['b/a']);
  });

  test('a leading ! negates the glob', () => {
    accepts(compileGlob('!*.min.js'), ['app.js', 'min.css'], ['app.min.js']);
  });

  test('dotfiles match like any other name', () => {
    accepts(compileGlob('*'), ['.env', 'a'], ['a/b']);
    accepts(compileGlob('.*rc'), ['.npmrc', '.bashrc'], ['npmrc']);
  });

  test('backslash escapes a special character', () => {
    accepts(compileGlob('\\*.md'), ['*.md'], ['a.md']);
    accepts(compileGlob('\\[draft\\].md'), ['[draft].md'], ['d.md']);
    accepts(compileGlob(escapeGlob('notes (old) [1] {a,b}!.md')), ['notes (old) [1] {a,b}!.md'], ['notes (old) 1 a!.md', 'notes old 1 a.md']);
  });
});

describe('compileGlobList: deny globs', () => {
  test('the default .git/** covers .git and everything in it, at the root only', () => {
    accepts(compileGlobList(['.git/**']), ['.git', '.git/HEAD', '.git/refs/heads/main'], ['.github/workflows/ci.yml', '.gitignore', 'sub/.git/HEAD', '']);
  });

  test('a glob without a slash matches a name at any depth, and everything below a matching folder', () => {
    accepts(compileGlobList(['*.pem']), ['a.pem', 'deep/dir/b.pem'], ['a.pem.txt', 'pem']);
    accepts(compileGlobList(['secrets']), ['secrets', 'secrets/k.txt', 'a/secrets/b/c'], ['secretsx', 'my-secrets/k']);
    accepts(compileGlobList(['secrets/']), ['secrets', 'a/secrets/k'], ['secretsx']);
  });

  test('a glob with a slash, or a leading one, is anchored at the workspace root', () => {
    accepts(compileGlobList(['/build']), ['build', 'build/out.js'], ['src/build/out.js', 'builds']);
    accepts(compileGlobList(['config/*.json']), ['config/a.json'], ['x/config/a.json', 'config/sub/a.json']);
    accepts(compileGlobList(['./local/**']), ['local/x'], ['a/local/x']);
    accepts(compileGlobList(['**/node_modules/**']), ['node_modules/x', 'a/node_modules/b/c'], ['node_modules_x/y']);
  });

  test('!globs are exceptions; a list of exceptions alone denies nothing', () => {
    const deny = compileGlobList(['**/*.pem', '!certs/public.pem']);
    accepts(deny, ['certs/private.pem', 'a.pem'], ['certs/public.pem', 'certs']);
    accepts(compileGlobList(['vendor/**', '!vendor/ours/**']), ['vendor/theirs/x.js', 'vendor'], ['vendor/ours/x.js', 'vendor/ours']);
    accepts(compileGlobList(['!anything']), [], ['anything', 'a.pem', 'x/y']);
    accepts(compileGlobList([]), [], ['a', '.git/HEAD']);
  });
});

// Cases after git's gitignore documentation and node-ignore's own suite.
describe('IgnoreMatcher: .gitignore rules (the ignore package)', () => {
  const root = (text: string): IgnoreMatcher => new IgnoreMatcher().withFile('', text);

  test('comments, blank lines, trailing spaces and escapes', () => {
    const m = root('# a comment\n\n\\#hash\n\\!bang\nspaced   \nkept\\ \n');
    accepts((p) => m.ignores(p, false), ['#hash', '!bang', 'spaced', 'kept '], ['# a comment', 'spaced   ', 'kept', 'a comment']);
  });

  test('negation re-includes; the last matching rule wins', () => {
    const m = root('*.log\n!keep.log\nsub/*.log\n');
    accepts((p) => m.ignores(p, false), ['debug.log', 'a/debug.log', 'sub/keep.log'], ['keep.log', 'a/keep.log', 'notes.txt']);
  });

  test('a file inside an ignored folder cannot be re-included', () => {
    const m = root('build/\n!build/keep.txt\n');
    assert.equal(m.ignores('build/keep.txt', false), true);
  });

  test('anchoring: a leading or middle slash anchors to the .gitignore folder; no slash matches at any depth', () => {
    const m = root('/build\ndoc/frotz\nname\n');
    accepts((p) => m.ignores(p, false), ['build', 'build/x.js', 'doc/frotz', 'name', 'a/b/name'], ['src/build', 'a/doc/frotz', 'names']);
  });

  test('directory-only patterns match folders (and what is in them), not files', () => {
    const m = root('dist/\n');
    assert.equal(m.ignores('dist', true), true);
    assert.equal(m.ignores('dist', false), false);
    assert.equal(m.ignores('a/dist', true), true);
    assert.equal(m.ignores('dist/x.js', false), true);
  });

  test('** forms and character classes', () => {
    const m = root('**/logs\nfoo/**\na/**/b\n*.py[co]\n');
    accepts((p) => m.ignores(p, false), ['logs', 'x/y/logs', 'foo/bar', 'a/b', 'a/x/y/b', 'm.pyc', 'm.pyo'], ['foo', 'a/bc', 'm.py']);
  });

  test('case-sensitive, as git is on Linux and as ripgrep is', () => {
    const m = root('*.LOG\n');
    assert.equal(m.ignores('a.LOG', false), true);
    assert.equal(m.ignores('a.log', false), false);
  });

  test('CRLF line endings', () => {
    const m = root('a.txt\r\n!b.txt\r\n*.txt\r\n');
    assert.equal(m.ignores('a.txt', false), true);
    assert.equal(m.ignores('b.txt', false), true);
  });

  test('a nested .gitignore applies relative to its folder and overrides the root file', () => {
    const m = root('*.log\n/local\n').withFile('sub', '!important.log\n/local\nonly-here.txt\n');
    accepts(
      (p) => m.ignores(p, false),
      ['a.log', 'sub/a.log', 'local', 'sub/local', 'sub/x/only-here.txt'],
      ['sub/important.log', 'sub/x/important.log', 'only-here.txt', 'other/only-here.txt', 'sub/x/local'],
    );
  });
});

describe('nested .gitignore files through the tools', () => {
  let tmp: string;
  let root: string;
  let ws: OpenedWorkspace;

  const write = (rel: string, content: string): void => writeUnder(root, rel, content);

  // Every file contains "needle"; the comment says whether the tools must see it.
  const VISIBLE = [
    '.gitignore',
    'app/.gitignore',
    'app/important.log',
    'app/src/main.ts',
    'app/src/notes #1.md',
    'docs/build/page.md',
    'docs/dist',
    'keep.log',
    'lib/.gitignore',
    'lib/a.ts',
    'lib/deep/a.ts',
    'spaced.txt ',
  ];
  const HIDDEN = [
    'build/out.js', // /build (anchored at the root)
    'debug.log', // *.log
    'app/debug.log', // *.log (the root's rule reaches into app/)
    'app/local/cache.txt', // app/.gitignore: /local
    'app/src/generated/x.ts', // app/.gitignore: src/generated/ (a middle slash anchors to app/)
    'dist/x.js', // dist/ (a folder)
    'lib/dist/x.js', // dist/ at any depth
    'lib/a.tmp', // lib/.gitignore: *.tmp
    'lib/deep/b.tmp', // lib/.gitignore: *.tmp, below lib/
    'secret.txt', // "secret.txt   " (unescaped trailing spaces are dropped)
  ];

  before(() => {
    tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-globs-')));
    root = path.join(tmp, 'ws');
    fs.mkdirSync(root);
    write('.gitignore', '# build output\n/build\ndist/\n*.log\n!keep.log\nsecret.txt   \n');
    write('app/.gitignore', '!important.log\n/local\nsrc/generated/\n');
    write('lib/.gitignore', '*.tmp\n');
    for (const rel of [...VISIBLE, ...HIDDEN]) if (!rel.endsWith('.gitignore')) write(rel, 'needle\n');
    ws = openWorkspace({ root, dataDir: path.join(tmp, 'data') });
  });
  after(() => {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('list_directory (recursive) shows exactly the files git would', async () => {
    const d = data<{ entries: { path: string; type: string }[] }>(await ws.call('list_directory', { recursive: true }));
    const files = d.entries.filter((e) => e.type === 'file').map((e) => e.path);
    assert.deepEqual(files, [...VISIBLE].sort());
    const all = data<{ entries: { path: string; type: string }[] }>(await ws.call('list_directory', { recursive: true, includeIgnored: true }));
    const allFiles = all.entries.filter((e) => e.type === 'file').map((e) => e.path);
    for (const p of HIDDEN) assert.ok(allFiles.includes(p), p);
  });

  test('list_directory of a sub-folder applies the .gitignore files above it', async () => {
    const d = data<{ entries: { path: string }[] }>(await ws.call('list_directory', { path: 'app', recursive: true }));
    assert.deepEqual(d.entries.map((e) => e.path), ['app/.gitignore', 'app/important.log', 'app/src', 'app/src/main.ts', 'app/src/notes #1.md']);
  });

  test('glob and search_files (glob mode) honour the nested files', async () => {
    const g = data<{ paths: string[] }>(await ws.call('glob', { pattern: '**/*' }));
    assert.deepEqual(g.paths.filter((p) => !p.endsWith('/')), [...VISIBLE].sort());
    const s = data<{ paths: string[] }>(await ws.call('search_files', { mode: 'glob', query: 'app/**/*.{log,ts}' }));
    assert.deepEqual(s.paths, ['app/important.log', 'app/src/main.ts']);
    const inApp = data<{ paths: string[] }>(await ws.call('glob', { pattern: '**/*.log', path: 'app' }));
    assert.deepEqual(inApp.paths, ['app/important.log']);
  });

  test('grep finds the needle in the visible files only, with the JS walk and with ripgrep alike', async () => {
    const ctx = ws.workspace.searchContext();
    const js = await grep(ctx, { pattern: 'needle', startRel: '', gitignore: true, engine: 'js' });
    const expected = VISIBLE.filter((p) => !p.endsWith('.gitignore')).sort();
    assert.deepEqual(js.matches.map((m) => m.path), expected);
    if (ripgrepAvailable()) {
      const rg = await grep(ctx, { pattern: 'needle', startRel: '', gitignore: true, engine: 'rg' });
      assert.deepEqual(rg.matches.map((m) => m.path), expected);
    }
    const inLib = data<{ matches: { path: string }[] }>(await ws.call('search_files', { mode: 'text', query: 'needle', path: 'lib', include: '[!b]*.ts' }));
    assert.deepEqual(inLib.matches.map((m) => m.path), ['lib/a.ts', 'lib/deep/a.ts']);
  });
});

describe('deny globs through the tools', () => {
  let tmp: string;
  let root: string;

  before(() => {
    tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-deny-')));
    root = path.join(tmp, 'ws');
    for (const rel of ['keys/private.pem', 'keys/public.pem', 'deep/x/server.pem', 'notes.txt', 'sub/.data [1]/visible.txt']) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), 'needle\n');
    }
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test('a name glob denies at any depth; a !glob makes an exception', async () => {
    const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), denyGlobs: ['.git/**', '*.pem', '!public.pem'] });
    try {
      for (const p of ['keys/private.pem', 'deep/x/server.pem']) {
        const r = await ws.call('read_file', { path: p });
        assert.equal(r.ok ? 'ok' : r.error.kind, 'permission_denied', p);
      }
      assert.equal((await ws.call('read_file', { path: 'keys/public.pem' })).ok, true);
      const g = await ws.call('glob', { pattern: '**/*.pem' });
      assert.deepEqual(g.ok && (g.data as { paths: string[] }).paths, ['keys/public.pem']);
    } finally {
      ws.close();
    }
  });

  test('a data folder inside the workspace is hidden by its literal name, wherever glob characters are in it', async () => {
    const ws = openWorkspace({ root, dataDir: path.join(root, '.data [1]') });
    try {
      const r = await ws.call('list_directory', {});
      const names = r.ok ? (r.data as { entries: { path: string }[] }).entries.map((e) => e.path) : [];
      assert.ok(!names.includes('.data [1]'), names.join(', '));
      const denied = await ws.call('list_directory', { path: '.data [1]' });
      assert.equal(denied.ok ? 'ok' : denied.error.kind, 'permission_denied');
      // The same name elsewhere is an ordinary folder.
      assert.equal((await ws.call('read_file', { path: 'sub/.data [1]/visible.txt' })).ok, true);
    } finally {
      ws.close();
    }
  });
});
