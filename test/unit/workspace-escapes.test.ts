/** Issue 18, items 8–10: no escape through swapped links, glob braces or symlinked folders; every .git protected. */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';
import { startSwapper, swapperUnavailable } from '../support/swapper';

let tmp: string;
let root: string;
let outside: string;
let ws: OpenedWorkspace;

const CANARY = 'OUTSIDE-CANARY';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-escapes-')));
  root = path.join(tmp, 'ws');
  outside = path.join(tmp, 'outside');
  fs.mkdirSync(path.join(root, 'x'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), `${CANARY}\n`);
  fs.writeFileSync(path.join(root, 'x', 'a.txt'), 'alpha\n');
  fs.symlinkSync(outside, path.join(root, 'ld'));
  ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 't' });
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function snapshot(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(`${p}=${e.isSymbolicLink() ? fs.readlinkSync(p) : fs.readFileSync(p, 'utf8')}`);
    }
  };
  walk(dir);
  return out.sort().join('\n');
}

test('glob and search_files: brace alternatives that leave the root are refused, nothing outside is listed', async () => {
  for (const pattern of ['.{.,}/outside/**', '{/etc,x}/pass*', '{/usr/bin,x}/*', '{/usr,x}/**', 'x/{..,.}/../outside/*', '{..,x}/outside/*']) {
    for (const res of [await ws.call('glob', { pattern }), await ws.call('search_files', { mode: 'glob', query: pattern })]) {
      const text = JSON.stringify(res);
      assert.ok(!/secret\.txt|passwd|\/usr|\.\.\//.test(res.ok ? JSON.stringify(res.data) : ''), `${pattern}: ${text}`);
      if (!res.ok) assert.equal(res.error.kind, 'invalid_arguments', `${pattern}: ${text}`);
    }
  }
});

test('glob, search, grep and list_directory do not walk a symlink to an outside folder', async () => {
  const calls: [string, Promise<ToolResult>][] = [
    ['glob ld/**', ws.call('glob', { pattern: 'ld/**' })],
    ['glob l{d,x}/*', ws.call('glob', { pattern: 'l{d,x}/*' })],
    ['glob **', ws.call('glob', { pattern: '**/*secret*' })],
    ['search_files glob', ws.call('search_files', { mode: 'glob', query: 'ld/*' })],
    ['search_files text', ws.call('search_files', { mode: 'text', query: CANARY })],
    ['grep', ws.call('grep', { pattern: CANARY, includeIgnored: true })],
    ['list_directory', ws.call('list_directory', { path: '.', recursive: true })],
  ];
  for (const [label, p] of calls) {
    const res = await p;
    const text = JSON.stringify(res);
    assert.ok(!text.includes('secret.txt') && !text.includes(CANARY), `${label}: ${text}`);
  }
});

test('a real concurrent swapper (renameat2 RENAME_EXCHANGE) never redirects reads, greps, listings or writes outside', async (t) => {
  const why = swapperUnavailable();
  if (why) return t.skip(why);
  const victim = path.join(outside, 'victim');
  fs.mkdirSync(victim);
  fs.mkdirSync(path.join(root, 'd'));
  fs.writeFileSync(path.join(root, 'd', 'f.txt'), 'inside\n');
  fs.writeFileSync(path.join(victim, 'f.txt'), `${CANARY} f\n`);
  const N = 60;
  const same = 'same on both sides\n';
  for (let i = 0; i < N; i++) {
    for (const dir of [path.join(root, 'd'), victim]) {
      fs.writeFileSync(path.join(dir, `w${i}.txt`), same);
      fs.writeFileSync(path.join(dir, `del${i}.txt`), same);
    }
  }
  fs.symlinkSync(victim, path.join(root, 'lnk'));
  const before = snapshot(outside);
  const swapper = await startSwapper(path.join(root, 'd'), path.join(root, 'lnk'));
  const leaks: string[] = [];
  let calls = 0;
  try {
    for (let i = 0; i < N; i++) {
      const results = [
        await ws.call('read_file', { path: 'd/f.txt' }),
        await ws.call('grep', { pattern: `${CANARY}|inside`, path: 'd' }),
        await ws.call('list_directory', { path: 'd' }),
        await ws.call('glob', { pattern: '*', path: 'd' }),
        await ws.call('create_file', { path: `d/new${i}.txt`, content: 'new\n' }),
        await ws.call('write_file', { path: `d/w${i}.txt`, content: 'written\n', expectedSha256: sha(same) }),
        await ws.call('delete_file', { path: `d/del${i}.txt`, expectedSha256: sha(same) }),
      ];
      calls += results.length;
      for (const r of results) if (JSON.stringify(r).includes(CANARY)) leaks.push(JSON.stringify(r).slice(0, 200));
      // Outside untouched after every round (no temp files either).
      const now = snapshot(outside);
      if (now !== before) leaks.push(`outside changed in round ${i}`);
      if (leaks.length) break;
    }
  } finally {
    const swaps = await swapper.stop();
    assert.ok(swaps >= calls, `the swapper ran (${swaps} exchanges for ${calls} calls)`);
  }
  assert.deepEqual(leaks, []);
  assert.equal(snapshot(outside), before);
});

test('every .git at any depth is protected: nested repositories, submodule and worktree .git files, whatever deny_globs say', async () => {
  fs.mkdirSync(path.join(root, 'vendor', 'lib', '.git', 'hooks'), { recursive: true });
  fs.writeFileSync(path.join(root, 'vendor', 'lib', '.git', 'config'), '[core]\n');
  fs.mkdirSync(path.join(root, 'sub', 'mod'), { recursive: true });
  fs.writeFileSync(path.join(root, 'sub', 'mod', '.git'), 'gitdir: ../../.git/modules/mod\n');
  fs.writeFileSync(path.join(root, 'x', 'b.txt'), 'beta\n');
  const cfg = sha('[core]\n');
  const custom = openWorkspace({ root, dataDir: path.join(tmp, 'data2'), sessionId: 't2', denyGlobs: ['secrets/**'] });
  try {
    for (const w of [ws, custom]) {
      const attempts: [string, unknown][] = [
        ['read_file', { path: 'vendor/lib/.git/config' }],
        ['write_file', { path: 'vendor/lib/.git/config', content: '[core]\n\tfsmonitor = touch /tmp/pwned\n', expectedSha256: cfg }],
        ['edit_file', { path: 'vendor/lib/.git/config', expectedSha256: cfg, edits: [{ oldText: '[core]', newText: '[core]\n\tfsmonitor = x' }] }],
        ['create_file', { path: 'vendor/lib/.git/hooks/pre-commit', content: '#!/bin/sh\n' }],
        ['create_file', { path: 'vendor/.git/config', content: '[core]\n' }],
        ['create_file', { path: 'x/.GIT/config', content: '[core]\n' }],
        ['read_file', { path: 'sub/mod/.git' }],
        ['write_file', { path: 'sub/mod/.git', content: 'gitdir: /tmp/evil\n', expectedSha256: sha('gitdir: ../../.git/modules/mod\n') }],
        ['delete_file', { path: 'sub/mod/.git', expectedSha256: sha('gitdir: ../../.git/modules/mod\n') }],
        ['move_file', { from: 'x/b.txt', to: 'vendor/lib/.git/hooks/post-checkout', expectedSha256: sha('beta\n') }],
        ['apply_patch', { patch: '*** Begin Patch\n*** Add File: vendor/lib/.git/info/attributes\n+x\n*** End Patch\n' }],
        ['list_directory', { path: 'vendor/lib/.git' }],
        ['grep', { pattern: 'core', path: 'vendor/lib/.git' }],
      ];
      for (const [tool, args] of attempts) {
        const res = await w.call(tool, args);
        assert.equal(res.ok ? 'ok' : res.error.kind, 'permission_denied', `${tool} ${JSON.stringify(args)}: ${JSON.stringify(res)}`);
      }
      const listed = JSON.stringify([await w.call('glob', { pattern: '**', includeIgnored: true }), await w.call('grep', { pattern: 'core|gitdir', includeIgnored: true })]);
      assert.ok(!listed.includes('.git'), listed);
    }
    assert.equal(fs.readFileSync(path.join(root, 'vendor', 'lib', '.git', 'config'), 'utf8'), '[core]\n');
    assert.equal(fs.readFileSync(path.join(root, 'sub', 'mod', '.git'), 'utf8'), 'gitdir: ../../.git/modules/mod\n');
    assert.ok(!fs.existsSync(path.join(root, 'vendor', 'lib', '.git', 'hooks', 'pre-commit')));
  } finally {
    custom.close();
  }
});
