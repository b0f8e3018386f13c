/**
 * Regression found by the crash stress suite (stress/crash.ts): a process killed in the middle of a
 * commit left temp and backup files in the workspace, and a multi-file change half applied. The next
 * openWorkspace now recovers from the commit journal.
 */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { fileTree } from '../support/files';
import { recoverCommits } from '../../src/workspace/commit-journal';

const SRC = path.resolve(__dirname, '..', '..', 'src', 'index.ts');
let tmp: string;
let root: string;
let dataDir: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-crash-')));
  root = path.join(tmp, 'ws');
  dataDir = path.join(tmp, 'data');
  fs.mkdirSync(path.join(root, 'd'), { recursive: true });
  fs.writeFileSync(path.join(root, 'a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(root, 'd', 'b.txt'), 'beta\n');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs one tool call in a child process that SIGKILLs itself when the commit reaches `phase` of change `index`. */
function crashAt(tool: string, args: unknown, phase: 'prepare' | 'commit', index: number): void {
  const code = `
    const { openWorkspace } = require(${JSON.stringify(SRC)});
    const ws = openWorkspace({ root: ${JSON.stringify(root)}, dataDir: ${JSON.stringify(dataDir)}, sessionId: 'crash',
      faultHook: (s) => { if (s.phase === ${JSON.stringify(phase)} && s.index === ${index}) process.kill(process.pid, 'SIGKILL'); } });
    ws.call(${JSON.stringify(tool)}, ${JSON.stringify(args)}).then((r) => { process.stdout.write(JSON.stringify(r)); ws.close(); });`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { encoding: 'utf8' });
  assert.equal(r.signal, 'SIGKILL', `the child was not killed: ${r.stdout} ${r.stderr}`);
}

const tree = (): Record<string, string> => fileTree(root);

const ORIGINAL = { 'a.txt': 'alpha\n', 'd/b.txt': 'beta\n' };
const patch = '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Update File: d/b.txt\n@@\n-beta\n+BETA\n*** End Patch\n';

test('a two-file patch killed between its renames is rolled back at the next open, without leftovers', () => {
  crashAt('apply_patch', { patch }, 'commit', 1);
  assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), 'ALPHA\n', 'the kill left the first file renamed');
  const ws = openWorkspace({ root, dataDir, sessionId: 'next' });
  assert.deepEqual({ ...ws.workspace.recovered, restored: [] }, { discarded: 0, rolledBack: 1, finished: 0, restored: [], kept: [] });
  assert.deepEqual([...ws.workspace.recovered.restored].sort(), [path.join(root, 'a.txt')], 'only the renamed file had to be put back');
  ws.close();
  assert.deepEqual(tree(), ORIGINAL);
});

test('a write killed before its rename leaves no temp file after the next open', () => {
  crashAt('write_file', { path: 'a.txt', content: 'new\n', expectedSha256: createHash('sha256').update('alpha\n').digest('hex') }, 'commit', 0);
  assert.ok(Object.keys(tree()).some((p) => p.endsWith('.tmp')), 'the kill left a temp file');
  openWorkspace({ root, dataDir, sessionId: 'next' }).close();
  assert.deepEqual(tree(), ORIGINAL);
});

test('a move killed after the new file was linked, before the old one went, is undone', () => {
  crashAt('move_file', { from: 'a.txt', to: 'd/moved.txt', expectedSha256: 'b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060' }, 'commit', 1);
  openWorkspace({ root, dataDir, sessionId: 'next' }).close();
  assert.deepEqual(tree(), ORIGINAL);
});

test('a delete killed after its rename is undone (the file is back, no backup left)', () => {
  crashAt('apply_patch', { patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** Delete File: d/b.txt\n*** End Patch\n' }, 'commit', 1);
  openWorkspace({ root, dataDir, sessionId: 'next' }).close();
  assert.deepEqual(tree(), ORIGINAL);
});

test('a commit whose renames were all done keeps the new content; its backups go', () => {
  const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
  const journal = path.join(dataDir, 'journal');
  fs.mkdirSync(journal, { recursive: true });
  fs.writeFileSync(path.join(root, 'a.txt'), 'ALPHA\n');
  const backup = path.join(root, '.a.txt.caboose-0123456789ab.bak');
  fs.writeFileSync(backup, 'alpha\n');
  fs.writeFileSync(path.join(journal, `${dead}-x-00aa.done`), JSON.stringify({ steps: [{ kind: 'replace', target: path.join(root, 'a.txt'), tmp: path.join(root, '.a.txt.caboose-0123456789ab.tmp'), backup }] }));
  assert.deepEqual(recoverCommits(journal), { discarded: 0, rolledBack: 0, finished: 1, restored: [], kept: [] });
  assert.deepEqual(tree(), { 'a.txt': 'ALPHA\n', 'd/b.txt': 'beta\n' });
  assert.deepEqual(fs.readdirSync(journal), []);
});

test("a live process's journal is left alone", () => {
  const journal = path.join(dataDir, 'journal');
  fs.mkdirSync(journal, { recursive: true });
  const name = `${process.pid}-x-00bb.pending`;
  fs.writeFileSync(path.join(journal, name), JSON.stringify({ steps: [{ kind: 'create', target: path.join(root, 'a.txt'), tmp: path.join(root, 'nope') }] }));
  assert.deepEqual(recoverCommits(journal), { discarded: 0, rolledBack: 0, finished: 0, restored: [], kept: [] });
  assert.ok(fs.existsSync(path.join(root, 'a.txt')));
  assert.deepEqual(fs.readdirSync(journal), [name]);
});

// Issue 18 item 3: recovery reverted the user's later edits, and ran for any project on the data folder.
test('recovery keeps a file the user changed after the crash (its bytes are no longer what the commit wrote)', () => {
  crashAt('apply_patch', { patch }, 'commit', 1);
  assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), 'ALPHA\n');
  fs.appendFileSync(path.join(root, 'a.txt'), 'user line\n');
  const ws = openWorkspace({ root, dataDir, sessionId: 'next' });
  assert.deepEqual(ws.workspace.recovered.kept, [path.join(root, 'a.txt')]);
  assert.deepEqual(ws.workspace.recovered.restored, []);
  ws.close();
  assert.deepEqual(tree(), { 'a.txt': 'ALPHA\nuser line\n', 'd/b.txt': 'beta\n' });
});

test("opening another project on the same data folder leaves this project's interrupted commit alone", () => {
  crashAt('apply_patch', { patch }, 'commit', 1);
  const other = path.join(tmp, 'other');
  fs.mkdirSync(other);
  const ows = openWorkspace({ root: other, dataDir, sessionId: 'other' });
  assert.deepEqual(ows.workspace.recovered, { discarded: 0, rolledBack: 0, finished: 0, restored: [], kept: [] });
  ows.close();
  assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), 'ALPHA\n', 'untouched by the other project');
  const ws = openWorkspace({ root, dataDir, sessionId: 'next' });
  assert.deepEqual(ws.workspace.recovered.restored, [path.join(root, 'a.txt')]);
  ws.close();
  assert.deepEqual(tree(), ORIGINAL);
});

test('the chat is told which files recovery put back and which it left alone', () => {
  const { recoveryNotice } = require('../../src/workspace/commit-journal') as typeof import('../../src/workspace/commit-journal');
  const text = recoveryNotice({ discarded: 0, rolledBack: 1, finished: 0, restored: [path.join(root, 'a.txt')], kept: [path.join(root, 'd', 'b.txt')] }, root);
  assert.match(text ?? '', /put back .*: a\.txt; files left as they are \(changed since the crash\): d\/b\.txt/);
  assert.equal(recoveryNotice({ discarded: 2, rolledBack: 0, finished: 1, restored: [], kept: [] }, root), null);
});

test("a journal's step list cut off while being replaced (a dead process's .update file) is removed; a live one's is kept", () => {
  const dir = path.join(dataDir, 'journal');
  fs.mkdirSync(dir, { recursive: true });
  // No process has pid 2^22 + 1 (Linux's pid_max is at most 2^22).
  fs.writeFileSync(path.join(dir, '4194305-x-0123456789ab.update'), '{"root":null,"ste');
  fs.writeFileSync(path.join(dir, `${process.pid}-x-0123456789ab.update`), '{}');
  recoverCommits(dir);
  assert.deepEqual(fs.readdirSync(dir), [`${process.pid}-x-0123456789ab.update`]);
});
