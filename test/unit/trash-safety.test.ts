/**
 * Issue 18 items 2, 5 and 7: a delete killed after its commit keeps a restorable trash entry (adopted
 * at the next open), large files go to the trash and come back streamed, and the trash is per workspace.
 */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';

const SRC = path.resolve(__dirname, '..', '..', 'src', 'index.ts');
const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');
let tmp: string;
let root: string;
let dataDir: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-trash-')));
  root = path.join(tmp, 'ws');
  dataDir = path.join(tmp, 'data');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'a.txt'), 'alpha\n');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** delete_file in a child that SIGKILLs itself right after the commit (before the trash row and the audit row). */
function deleteAndDieAfterCommit(rel: string, content: string): void {
  const code = `
    const { openWorkspace } = require(${JSON.stringify(SRC)});
    const ws = openWorkspace({ root: ${JSON.stringify(root)}, dataDir: ${JSON.stringify(dataDir)}, sessionId: 'crash' });
    ws.workspace.trash.record = () => process.kill(process.pid, 'SIGKILL');
    ws.call('delete_file', { path: ${JSON.stringify(rel)}, expectedSha256: ${JSON.stringify(sha(content))} });`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { encoding: 'utf8' });
  assert.equal(r.signal, 'SIGKILL', `the child was not killed: ${r.stdout} ${r.stderr}`);
}

test('a delete killed between the unlink and the trash row is listed (and restorable) at the next open', async () => {
  deleteAndDieAfterCommit('a.txt', 'alpha\n');
  assert.equal(fs.existsSync(path.join(root, 'a.txt')), false, 'the kill came after the file went');
  const ws = openWorkspace({ root, dataDir, sessionId: 'next' });
  try {
    assert.deepEqual(ws.workspace.trashRecovered.adopted, ['a.txt']);
    const [entry] = ws.listTrash();
    assert.equal(entry?.originalPath, 'a.txt');
    const r = await ws.call('restore_file', { trashId: entry.id });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), 'alpha\n');
    assert.deepEqual(fs.readdirSync(path.join(dataDir, 'trash')), [], 'no orphan left in the trash folder');
  } finally {
    ws.close();
  }
});

test('content stashed for a delete that never happened is dropped at the next open (the file is still there)', async () => {
  const ws0 = openWorkspace({ root, dataDir, sessionId: 's' });
  await ws0.workspace.trash.stash('x-1', Buffer.from('alpha\n'), { originalPath: 'a.txt', sha256: sha('alpha\n'), mode: 0o644 });
  ws0.close();
  const ws = openWorkspace({ root, dataDir, sessionId: 'next' });
  assert.deepEqual(ws.workspace.trashRecovered, { adopted: [], dropped: ['a.txt'] });
  assert.equal(ws.listTrash().length, 0);
  ws.close();
  assert.deepEqual(fs.readdirSync(path.join(dataDir, 'trash')), []);
});

test("project B does not list or restore project A's trash", async () => {
  fs.writeFileSync(path.join(root, '.env'), 'SECRET=1\n');
  const a = openWorkspace({ root, dataDir, sessionId: 'a' });
  const del = await a.call('delete_file', { path: '.env', expectedSha256: sha('SECRET=1\n') });
  assert.ok(del.ok, JSON.stringify(del));
  const trashId = (del as { data: { trashId: string } }).data.trashId;
  assert.equal(a.listTrash().length, 1);
  a.close();
  const rootB = path.join(tmp, 'b');
  fs.mkdirSync(rootB);
  const b = openWorkspace({ root: rootB, dataDir, sessionId: 'b' });
  try {
    assert.deepEqual(b.listTrash(), []);
    const r = await b.call('restore_file', { trashId });
    assert.equal(r.ok ? 'ok' : r.error.kind, 'not_found');
    assert.equal(fs.existsSync(path.join(rootB, '.env')), false);
  } finally {
    b.close();
  }
});

test('a file larger than maxFileBytes goes to the trash and comes back streamed, byte for byte', async () => {
  const big = Buffer.alloc(3 * 1024 * 1024 + 17, 'x\n');
  fs.writeFileSync(path.join(root, 'big.log'), big);
  const ws = openWorkspace({ root, dataDir, sessionId: 'big', maxFileBytes: 1024 * 1024 });
  // Neither side may load the whole file: no full view of it, no in-memory read of its trash content.
  const loaded: string[] = [];
  const files = ws.workspace.files;
  const view = files.view.bind(files);
  files.view = async (abs, opts) => {
    const v = await view(abs, opts);
    if (abs.endsWith('big.log') && v.kind === 'file') loaded.push('view');
    return v;
  };
  const trash = ws.workspace.trash;
  const read = trash.read.bind(trash);
  trash.read = (e) => (loaded.push('trash.read'), read(e));
  try {
    const del = await ws.call('delete_file', { path: 'big.log', expectedSha256: sha(big) });
    assert.ok(del.ok, JSON.stringify(del));
    assert.equal((del as { data: { lines: number } }).data.lines, Math.ceil(big.length / 2), 'the line count, streamed');
    assert.equal(fs.existsSync(path.join(root, 'big.log')), false);
    const [entry] = ws.listTrash();
    assert.equal(entry.size, big.length);
    const r = await ws.call('restore_file', { trashId: entry.id });
    assert.ok(r.ok, JSON.stringify(r));
    assert.equal(sha(fs.readFileSync(path.join(root, 'big.log'))), sha(big));
    assert.deepEqual(fs.readdirSync(root).sort(), ['a.txt', 'big.log'], 'no temp file left');
    assert.deepEqual(loaded, [], 'the file and its trash content were streamed, never loaded whole');
    const wrong = await ws.call('delete_file', { path: 'big.log', expectedSha256: sha('nope') });
    assert.equal(wrong.ok ? 'ok' : wrong.error.kind, 'stale_file');
  } finally {
    ws.close();
  }
});
