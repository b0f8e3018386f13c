/**
 * Read-only and unreadable files. A file without its owner's write bit (as Neovim marks 'readonly'), or
 * one the user may not write, is refused by every modifying tool unless allowReadonlyWrites; an
 * unreadable file is permission_denied, never internal_error. Root bypasses permission bits: the mode
 * checks run for everyone, the access() checks as another user (a child process as nobody) when root.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');
const isRoot = process.getuid?.() === 0;

let tmp: string;
let root: string;
let dataDir: string;
let ws: OpenedWorkspace;

function write(rel: string, content: string, mode: number): void {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  fs.chmodSync(p, mode);
}
const modeOf = (rel: string): number => fs.statSync(path.join(root, rel)).mode & 0o7777;
const read = (rel: string): string => fs.readFileSync(path.join(root, rel), 'utf8');
const exists = (rel: string): boolean => fs.existsSync(path.join(root, rel));

function denied(r: ToolResult, what: string): { message: string; suggestedAction?: string; path?: string } {
  assert.equal(r.ok, false, `${what}: expected permission_denied, got ${JSON.stringify(r)}`);
  assert.ok(!r.ok);
  assert.equal(r.error.kind, 'permission_denied', `${what}: ${JSON.stringify(r.error)}`);
  return r.error;
}

function setup(opts: { allowReadonlyWrites?: boolean } = {}): void {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-ro-')));
  root = path.join(tmp, 'ws');
  dataDir = path.join(tmp, 'data');
  fs.mkdirSync(root);
  ws = openWorkspace({ root, dataDir, sessionId: 'ro', ...opts });
}
function teardown(): void {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
}

const patch = (body: string): string => `*** Begin Patch\n${body}*** End Patch\n`;

/** Every modifying call on ro.txt (content "ro\n"). */
const MODIFYING: [string, string, Record<string, unknown>][] = [
  ['write_file', 'write_file', { path: 'ro.txt', content: 'new\n', expectedSha256: sha('ro\n') }],
  ['edit_file', 'edit_file', { path: 'ro.txt', expectedSha256: sha('ro\n'), edits: [{ oldText: 'ro', newText: 'rw' }] }],
  ['delete_file', 'delete_file', { path: 'ro.txt', expectedSha256: sha('ro\n') }],
  ['move_file', 'move_file', { from: 'ro.txt', to: 'moved.txt', expectedSha256: sha('ro\n') }],
  ['apply_patch update', 'apply_patch', { patch: patch('*** Update File: ro.txt\n@@\n-ro\n+rw\n') }],
  ['apply_patch delete', 'apply_patch', { patch: patch('*** Delete File: ro.txt\n') }],
  ['apply_patch move', 'apply_patch', { patch: patch('*** Update File: ro.txt\n*** Move to: moved.txt\n@@\n-ro\n+rw\n') }],
];

describe('read-only files (no owner write bit)', () => {
  beforeEach(() => setup());
  afterEach(teardown);

  for (const [label, tool, args] of MODIFYING) {
    test(`${label}: permission_denied, the file keeps its bytes and mode`, async () => {
      write('ro.txt', 'ro\n', 0o444);
      write('other.txt', 'other\n', 0o644);
      const e = denied(await ws.call(tool, args), label);
      assert.equal(e.path, 'ro.txt');
      assert.match(e.message, /read-only/);
      assert.match(e.suggestedAction ?? '', /allow_readonly_writes/);
      assert.equal(read('ro.txt'), 'ro\n');
      assert.equal(modeOf('ro.txt'), 0o444);
      assert.equal(exists('moved.txt'), false);
      assert.equal(read('other.txt'), 'other\n');
      assert.equal(ws.listTrash().length, 0);
      const last = ws.workspace.audit.list().at(-1)!;
      assert.deepEqual([last.tool, last.ok, last.errorKind], [tool, false, 'permission_denied']);
    });
  }

  test('a patch touching a read-only file changes no file at all', async () => {
    write('ro.txt', 'ro\n', 0o444);
    write('rw.txt', 'rw\n', 0o644);
    denied(await ws.call('apply_patch', { patch: patch('*** Update File: rw.txt\n@@\n-rw\n+RW\n*** Add File: n.txt\n+n\n*** Update File: ro.txt\n@@\n-ro\n+x\n') }), 'patch');
    assert.deepEqual([read('rw.txt'), read('ro.txt'), exists('n.txt')], ['rw\n', 'ro\n', false]);
  });

  test('the preview refuses too (the approval is never asked for a write that cannot happen)', async () => {
    write('ro.txt', 'ro\n', 0o444);
    const ctx = { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 'ro' };
    await assert.rejects(ws.registry.get('write_file')!.preview!({ path: 'ro.txt', content: 'x', expectedSha256: sha('ro\n') } as never, ctx), {
      kind: 'permission_denied',
    });
  });

  test('reading, and creating or restoring new files, are not affected', async () => {
    write('ro.txt', 'ro\n', 0o444);
    const r = await ws.call('read_file', { path: 'ro.txt' });
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok((await ws.call('create_file', { path: 'new.txt', content: 'n\n' })).ok);
  });
});

describe('allowReadonlyWrites: true', () => {
  beforeEach(() => setup({ allowReadonlyWrites: true }));
  afterEach(teardown);

  test('write_file replaces a 0444 file and keeps its mode; delete_file deletes one', async () => {
    write('ro.txt', 'ro\n', 0o444);
    const w = await ws.call('write_file', { path: 'ro.txt', content: 'new\n', expectedSha256: sha('ro\n') });
    assert.ok(w.ok, JSON.stringify(w));
    assert.equal(read('ro.txt'), 'new\n');
    assert.equal(modeOf('ro.txt'), 0o444);
    write('ro2.txt', 'x\n', 0o444);
    assert.ok((await ws.call('delete_file', { path: 'ro2.txt', expectedSha256: sha('x\n') })).ok);
    assert.equal(exists('ro2.txt'), false);
  });
});

describe('unreadable files (mode 0000)', () => {
  beforeEach(() => setup());
  afterEach(teardown);

  test('read_file, edit_file, write_file, delete_file and apply_patch say permission_denied, not internal_error', async () => {
    write('secret.txt', 'secret\n', 0o000);
    denied(await ws.call('read_file', { path: 'secret.txt' }), 'read_file');
    denied(await ws.call('edit_file', { path: 'secret.txt', expectedSha256: sha('secret\n'), edits: [{ oldText: 'secret', newText: 'x' }] }), 'edit_file');
    denied(await ws.call('write_file', { path: 'secret.txt', content: 'x', expectedSha256: sha('secret\n') }), 'write_file');
    denied(await ws.call('delete_file', { path: 'secret.txt', expectedSha256: sha('secret\n') }), 'delete_file');
    denied(await ws.call('apply_patch', { patch: patch('*** Update File: secret.txt\n@@\n-secret\n+x\n') }), 'apply_patch');
    const e = denied(await ws.call('read_file', { path: 'secret.txt' }), 'read_file');
    assert.match(e.message, /cannot be read/);
    assert.equal(modeOf('secret.txt'), 0o000);
    fs.chmodSync(path.join(root, 'secret.txt'), 0o600);
    assert.equal(read('secret.txt'), 'secret\n');
  });

  test('EACCES from the system (a folder without search permission) is permission_denied', { skip: isRoot && 'root bypasses permission bits' }, async () => {
    write('locked/f.txt', 'f\n', 0o644);
    fs.chmodSync(path.join(root, 'locked'), 0o600);
    try {
      denied(await ws.call('read_file', { path: 'locked/f.txt' }), 'read_file');
      denied(await ws.call('edit_file', { path: 'locked/f.txt', expectedSha256: sha('f\n'), edits: [{ oldText: 'f', newText: 'g' }] }), 'edit_file');
    } finally {
      fs.chmodSync(path.join(root, 'locked'), 0o755);
    }
  });
});

/** access(): a file the user may not write although its owner may (another user's 0644 file, in a folder anyone may write). */
test('as another user: a file the user cannot write is refused, one it cannot read is permission_denied', { skip: !isRoot && 'needs root to run a child as nobody' }, (t) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-ro-user-')));
  try {
    const wsRoot = path.join(dir, 'ws');
    const data = path.join(dir, 'data');
    fs.mkdirSync(wsRoot);
    fs.mkdirSync(data);
    for (const d of [dir, wsRoot, data]) fs.chmodSync(d, 0o777);
    const f = (n: string, text: string, mode: number) => {
      fs.writeFileSync(path.join(wsRoot, n), text);
      fs.chmodSync(path.join(wsRoot, n), mode);
    };
    f('theirs.txt', 'theirs\n', 0o644);
    f('secret.txt', 'secret\n', 0o600);
    const calls = [
      { name: 'read_file', args: { path: 'theirs.txt' } },
      { name: 'write_file', args: { path: 'theirs.txt', content: 'mine\n', expectedSha256: sha('theirs\n') } },
      { name: 'edit_file', args: { path: 'theirs.txt', expectedSha256: sha('theirs\n'), edits: [{ oldText: 'theirs', newText: 'mine' }] } },
      { name: 'delete_file', args: { path: 'theirs.txt', expectedSha256: sha('theirs\n') } },
      { name: 'move_file', args: { from: 'theirs.txt', to: 'mine.txt', expectedSha256: sha('theirs\n') } },
      { name: 'apply_patch', args: { patch: patch('*** Update File: theirs.txt\n@@\n-theirs\n+mine\n') } },
      { name: 'read_file', args: { path: 'secret.txt' } },
    ];
    const child = spawnSync(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/run-tools.ts'), JSON.stringify({ root: wsRoot, dataDir: data, calls })], {
      uid: 65534,
      gid: 65534,
      cwd: path.join(__dirname, '../..'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (child.status !== 0 || !child.stdout.startsWith('[')) {
      t.skip(`cannot run the tools as nobody here: ${child.error?.message ?? child.stderr.slice(0, 300)}`);
      return;
    }
    const results = JSON.parse(child.stdout) as ToolResult[];
    assert.ok(results[0].ok, `nobody reads theirs.txt: ${JSON.stringify(results[0])}`);
    for (let i = 1; i <= 5; i++) denied(results[i], calls[i].name);
    denied(results[6], 'read_file of a 0600 file of root');
    assert.equal(fs.readFileSync(path.join(wsRoot, 'theirs.txt'), 'utf8'), 'theirs\n');
    assert.equal(fs.statSync(path.join(wsRoot, 'theirs.txt')).uid, 0, 'still root\'s file');
    assert.equal(fs.existsSync(path.join(wsRoot, 'mine.txt')), false);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
