/** Regressions found by the hostile-paths stress suite (stress/paths.ts). */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { swapFolderForLinkAt } from '../support/symlink-swap';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';
import { createBashTool } from '../../src/tools/bash';
import { ToolRegistry } from '../../src/tools/registry';

let tmp: string;
let root: string;
let outside: string;
let ws: OpenedWorkspace;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-hostile-')));
  root = path.join(tmp, 'ws');
  outside = path.join(tmp, 'outside');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
  fs.writeFileSync(path.join(root, 'a.txt'), 'alpha\n');
  ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 't' });
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** sha256 of a.txt's "alpha" line (move_file proves it saw the source). */
const ALPHA_SHA = 'b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060';
const kindOf = (r: ToolResult): string => (r.ok ? 'ok' : r.error.kind);
const listRoot = (): string[] => fs.readdirSync(root).sort();

test('~, look-alike dots and slashes, backslashes and %-escapes that would leave the root are outside_workspace', async () => {
  const hostile = [
    '~/.bashrc',
    '~',
    '~root/.profile',
    '\uff0e\uff0e/outside/secret.txt',
    '\u2025/outside/secret.txt',
    '..\uff0foutside\uff0fsecret.txt',
    '..\u2215outside\u2215secret.txt',
    '..\\outside\\secret.txt',
    '%2e%2e/outside/secret.txt',
    '%2e%2e%2foutside%2fsecret.txt',
    '%252e%252e/outside/secret.txt',
  ];
  for (const p of hostile) {
    assert.equal(kindOf(await ws.call('read_file', { path: p })), 'outside_workspace', p);
    assert.equal(kindOf(await ws.call('create_file', { path: p, content: 'x' })), 'outside_workspace', p);
    assert.equal(kindOf(await ws.call('move_file', { from: 'a.txt', to: p, expectedSha256: ALPHA_SHA })), 'outside_workspace', p);
  }
  assert.deepEqual(listRoot(), ['a.txt'], 'nothing was created inside under a literal name either');
});

test('the same characters in paths that stay inside are plain names', async () => {
  for (const p of ['~$lock.txt', 'a\\b.txt', '100%25.txt', '\uff46ull.txt', 'dir/..\\x.txt']) {
    assert.equal(kindOf(await ws.call('create_file', { path: p, content: 'x' })), 'ok', p);
  }
});

test('an over-long name or path is invalid_arguments, not internal_error', async () => {
  for (const p of ['n'.repeat(300), `${'deep/'.repeat(1000)}f.txt`]) {
    assert.equal(kindOf(await ws.call('read_file', { path: p })), 'invalid_arguments');
    assert.equal(kindOf(await ws.call('create_file', { path: p, content: 'x' })), 'invalid_arguments');
  }
});

test('a folder swapped for a symlink to outside during the commit is refused; outside stays unchanged', async () => {
  for (const phase of ['prepare', 'commit'] as const) {
    fs.rmSync(path.join(root, 'race'), { recursive: true, force: true });
    fs.rmSync(path.join(root, 'race-moved'), { recursive: true, force: true });
    fs.mkdirSync(path.join(root, 'race'));
    fs.writeFileSync(path.join(root, 'race', 'f.txt'), 'same\n');
    fs.mkdirSync(path.join(outside, 'racedir'), { recursive: true });
    fs.writeFileSync(path.join(outside, 'racedir', 'f.txt'), 'same\n');
    const read = await ws.call('read_file', { path: 'race/f.txt' });
    assert.ok(read.ok);
    const swap = swapFolderForLinkAt(ws.workspace, phase, 'race', path.join(outside, 'racedir'));
    const res = await ws.call('write_file', { path: 'race/f.txt', content: 'pwned\n', expectedSha256: (read.data as { sha256: string }).sha256 });
    swap.clear();
    assert.ok(swap.swapped(), phase);
    assert.equal(kindOf(res), 'outside_workspace', `${phase}: ${JSON.stringify(res)}`);
    assert.deepEqual(fs.readdirSync(path.join(outside, 'racedir')), ['f.txt'], `${phase}: no temp file outside`);
    assert.equal(fs.readFileSync(path.join(outside, 'racedir', 'f.txt'), 'utf8'), 'same\n', phase);
  }
});

test('bash: a cwd with a NUL byte is invalid_arguments; ~ and symlinked or escaping cwds are outside_workspace', async () => {
  fs.symlinkSync(path.join(outside, 'nowhere'), path.join(root, 'dangling'));
  const reg = new ToolRegistry([createBashTool({ killGraceMs: 100 })]);
  const ctx = { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 't' };
  const call = async (cwd: string) => kindOf(await reg.call('bash', { command: 'pwd', cwd }, ctx));
  assert.equal(await call('a\0b'), 'invalid_arguments');
  assert.equal(await call('~'), 'outside_workspace');
  assert.equal(await call('dangling'), 'outside_workspace');
  assert.equal(await call('..\\..'), 'outside_workspace');
  assert.equal(await call('nope'), 'not_found');
});
