import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';
import { STALE_FILE_ACTION } from '../../src/workspace/errors';
import { deleteFileTool } from '../../src/tools/delete_file';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

let tmp: string;
let root: string;
let dataDir: string;
let ws: OpenedWorkspace;

function write(rel: string, content: string | Buffer, mode?: number): void {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  if (mode !== undefined) fs.chmodSync(p, mode);
}
const readBytes = (rel: string): Buffer => fs.readFileSync(path.join(root, rel));
const read = (rel: string): string => readBytes(rel).toString('utf8');
const exists = (rel: string): boolean => fs.existsSync(path.join(root, rel));

function data<T = Record<string, unknown>>(r: ToolResult): T {
  assert.equal(r.ok, true, `expected ok, got ${JSON.stringify(r)}`);
  assert.ok(r.ok);
  return r.data as T;
}
function err(r: ToolResult, kind: string): { kind: string; message: string; path?: string; suggestedAction?: string; details?: unknown } {
  assert.equal(r.ok, false, `expected ${kind}, got ok`);
  assert.ok(!r.ok);
  assert.equal(r.error.kind, kind, JSON.stringify(r.error));
  assert.ok(!('data' in r));
  return r.error;
}

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-tools-')));
  root = path.join(tmp, 'ws');
  dataDir = path.join(tmp, 'data');
  fs.mkdirSync(root);
  ws = openWorkspace({ root, dataDir, sessionId: 'test', maxFileBytes: 1024 * 1024 });
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('openWorkspace', () => {
  test('lists every file tool with a JSON schema whose fields are described', () => {
    const names = ws.tools.map((t) => t.name).sort();
    assert.deepEqual(names, [
      'apply_patch', 'create_file', 'delete_file', 'diagnostics', 'edit_file', 'glob', 'grep', 'list_directory', 'move_file',
      'read_file', 'restore_file', 'search_files', 'write_file',
    ]);
    for (const t of ws.tools) {
      assert.ok(t.description.length > 40, t.name);
      const props = (t.parameters as { properties: Record<string, { description?: string }> }).properties;
      for (const [k, v] of Object.entries(props)) assert.ok(v.description, `${t.name}.${k} is described`);
    }
    for (const n of ['write_file', 'edit_file', 'apply_patch']) {
      assert.match(ws.tools.find((t) => t.name === n)!.description, /stale_file/);
    }
  });

  test('the data folder holds the database and is not the workspace', () => {
    assert.ok(fs.existsSync(path.join(dataDir, 'caboose.sqlite')));
    assert.equal(fs.readdirSync(root).length, 0);
  });

  test('bad input never throws: unknown tool, missing and wrong-typed arguments', async () => {
    assert.equal((await ws.call('nope', {})).ok, false);
    err(await ws.call('read_file', {}), 'invalid_arguments');
    err(await ws.call('read_file', { path: 42 }), 'invalid_arguments');
    err(await ws.call('edit_file', null), 'invalid_arguments');
    err(await ws.call('write_file', { path: 'a', content: 'x' }), 'invalid_arguments');
  });
});

describe('read_file', () => {
  test('whole file, sha256 of the bytes, totalLines and range', async () => {
    write('a.txt', 'one\ntwo\nthree\n');
    const d = data<{ content: string; sha256: string; totalLines: number; startLine: number; endLine: number; truncated: boolean }>(
      await ws.call('read_file', { path: 'a.txt' }),
    );
    assert.equal(d.content, 'one\ntwo\nthree\n');
    assert.equal(d.sha256, sha('one\ntwo\nthree\n'));
    assert.deepEqual([d.totalLines, d.startLine, d.endLine, d.truncated], [3, 1, 3, false]);
  });

  test('a slice still hashes the full bytes', async () => {
    write('a.txt', 'one\ntwo\nthree\nfour');
    const d = data<{ content: string; sha256: string; startLine: number; endLine: number }>(
      await ws.call('read_file', { path: 'a.txt', startLine: 2, endLine: 3 }),
    );
    assert.equal(d.content, 'two\nthree\n');
    assert.equal(d.sha256, sha('one\ntwo\nthree\nfour'));
    assert.deepEqual([d.startLine, d.endLine], [2, 3]);
    const last = data<{ content: string }>(await ws.call('read_file', { path: 'a.txt', startLine: 4 }));
    assert.equal(last.content, 'four');
  });

  test('long files are capped at 2,000 lines with a notice naming the next startLine', async () => {
    write('big.txt', Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`).join('\n') + '\n');
    const d = data<{ content: string; truncated: boolean; endLine: number; notice: string; totalLines: number }>(
      await ws.call('read_file', { path: 'big.txt' }),
    );
    assert.equal(d.truncated, true);
    assert.equal(d.endLine, 2000);
    assert.equal(d.totalLines, 2500);
    assert.match(d.notice, /startLine=2001/);
    const next = data<{ content: string; truncated: boolean }>(await ws.call('read_file', { path: 'big.txt', startLine: 2001 }));
    assert.equal(next.truncated, false);
    assert.ok(next.content.startsWith('line 2001\n'));
  });

  test('output is capped at 50 KB and at maxBytes', async () => {
    write('wide.txt', Array.from({ length: 300 }, () => 'x'.repeat(299)).join('\n') + '\n');
    const d = data<{ content: string; truncated: boolean; endLine: number; notice: string }>(await ws.call('read_file', { path: 'wide.txt' }));
    assert.equal(d.truncated, true);
    assert.ok(Buffer.byteLength(d.content) <= 50 * 1024);
    assert.match(d.notice, new RegExp(`startLine=${d.endLine + 1}`));
    const small = data<{ endLine: number }>(await ws.call('read_file', { path: 'wide.txt', maxBytes: 650 }));
    assert.equal(small.endLine, 2);
  });

  test('CRLF and BOM files are shown with \\n and report their encoding', async () => {
    write('w.txt', Buffer.from('\ufeffa\r\nb\r\n', 'utf8'));
    const d = data<{ content: string; encoding: { bom: boolean; eol: string } }>(await ws.call('read_file', { path: 'w.txt' }));
    assert.equal(d.content, 'a\nb\n');
    assert.deepEqual(d.encoding, { bom: true, eol: 'crlf', finalNewline: true });
  });

  test('errors: not_found, is_directory, binary_file, file_too_large, invalid range', async () => {
    err(await ws.call('read_file', { path: 'missing.txt' }), 'not_found');
    fs.mkdirSync(path.join(root, 'dir'));
    err(await ws.call('read_file', { path: 'dir' }), 'is_directory');
    write('bin.dat', Buffer.from([0x89, 0x50, 0x00, 0x01, 0x02]));
    err(await ws.call('read_file', { path: 'bin.dat' }), 'binary_file');
    write('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    err(await ws.call('read_file', { path: 'latin1.txt' }), 'binary_file');
    write('huge.txt', 'x'.repeat(1024 * 1024 + 1));
    err(await ws.call('read_file', { path: 'huge.txt' }), 'file_too_large');
    write('a.txt', 'one\n');
    err(await ws.call('read_file', { path: 'a.txt', startLine: 5 }), 'invalid_arguments');
    err(await ws.call('read_file', { path: 'a.txt', startLine: 1, endLine: 0 }), 'invalid_arguments');
  });
});

describe('confinement and deny globs', () => {
  test('.. and absolute paths outside the root are outside_workspace', async () => {
    fs.writeFileSync(path.join(tmp, 'secret.txt'), 'secret');
    err(await ws.call('read_file', { path: '../secret.txt' }), 'outside_workspace');
    err(await ws.call('read_file', { path: path.join(tmp, 'secret.txt') }), 'outside_workspace');
    err(await ws.call('create_file', { path: '../evil.txt', content: 'x' }), 'outside_workspace');
    assert.equal(fs.existsSync(path.join(tmp, 'evil.txt')), false);
    err(await ws.call('read_file', { path: 'a/../../secret.txt' }), 'outside_workspace');
  });

  test('absolute paths inside the root are accepted', async () => {
    write('in.txt', 'ok\n');
    assert.equal(data<{ path: string }>(await ws.call('read_file', { path: path.join(root, 'in.txt') })).path, 'in.txt');
  });

  test('symlinks pointing outside are refused, for reads and writes', async () => {
    fs.writeFileSync(path.join(tmp, 'secret.txt'), 'secret');
    fs.symlinkSync(path.join(tmp, 'secret.txt'), path.join(root, 'link.txt'));
    fs.symlinkSync(tmp, path.join(root, 'outdir'));
    err(await ws.call('read_file', { path: 'link.txt' }), 'outside_workspace');
    err(await ws.call('create_file', { path: 'outdir/new.txt', content: 'x' }), 'outside_workspace');
    err(await ws.call('write_file', { path: 'link.txt', content: 'x', expectedSha256: sha('secret') }), 'outside_workspace');
    fs.symlinkSync(path.join(tmp, 'nowhere', 'x.txt'), path.join(root, 'dangling.txt'));
    err(await ws.call('create_file', { path: 'dangling.txt', content: 'x' }), 'outside_workspace');
    assert.equal(fs.readFileSync(path.join(tmp, 'secret.txt'), 'utf8'), 'secret');
  });

  test('NUL bytes in a path are invalid_arguments', async () => {
    err(await ws.call('read_file', { path: 'a\0b' }), 'invalid_arguments');
  });

  test('.git is permission_denied by default; deny globs are configurable', async () => {
    write('.git/config', '[core]\n');
    err(await ws.call('read_file', { path: '.git/config' }), 'permission_denied');
    err(await ws.call('create_file', { path: '.git/hooks/x', content: 'x' }), 'permission_denied');
    const ws2 = openWorkspace({ root, dataDir: path.join(tmp, 'data2'), denyGlobs: ['secrets/**', '**/*.pem'] });
    try {
      write('secrets/k.txt', 'k');
      write('a/b/c.pem', 'k');
      err(await ws2.call('read_file', { path: 'secrets/k.txt' }), 'permission_denied');
      err(await ws2.call('read_file', { path: 'a/b/c.pem' }), 'permission_denied');
      const list = data<{ paths: string[] }>(await ws2.call('glob', { pattern: '**/*' }));
      assert.ok(!list.paths.some((p) => p.startsWith('secrets/k') || p.endsWith('.pem')));
    } finally {
      ws2.close();
    }
  });
});

describe('create_file', () => {
  test('creates the file and its parent folders; returns sha256 and a diff', async () => {
    const d = data<{ path: string; sha256: string; diff: string }>(await ws.call('create_file', { path: 'x/y/z.txt', content: 'hi\n' }));
    assert.equal(read('x/y/z.txt'), 'hi\n');
    assert.equal(d.sha256, sha('hi\n'));
    assert.equal(d.path, 'x/y/z.txt');
    assert.match(d.diff, /\+hi/);
  });

  test('already_exists when present (file or folder); nothing changes', async () => {
    write('a.txt', 'keep');
    const e = err(await ws.call('create_file', { path: 'a.txt', content: 'new' }), 'already_exists');
    assert.equal(e.path, 'a.txt');
    assert.equal(read('a.txt'), 'keep');
    fs.mkdirSync(path.join(root, 'd'));
    err(await ws.call('create_file', { path: 'd', content: 'x' }), 'is_directory');
  });

  test('a file in the way of a parent folder is refused and leaves no temp file', async () => {
    write('f', 'x');
    assert.equal((await ws.call('create_file', { path: 'f/g.txt', content: 'y' })).ok, false);
    assert.deepEqual(fs.readdirSync(root), ['f']);
  });
});

describe('write_file', () => {
  test('replaces the content when expectedSha256 matches; keeps mode, CRLF and BOM', async () => {
    write('s.sh', Buffer.from('\ufeffecho a\r\n', 'utf8'), 0o755);
    const before = sha(readBytes('s.sh'));
    const d = data<{ sha256: string; previousSha256: string; diff: string }>(
      await ws.call('write_file', { path: 's.sh', content: 'echo b\necho c\n', expectedSha256: before }),
    );
    assert.deepEqual(readBytes('s.sh'), Buffer.from('\ufeffecho b\r\necho c\r\n', 'utf8'));
    assert.equal(d.sha256, sha(readBytes('s.sh')));
    assert.equal(d.previousSha256, before);
    assert.equal(fs.statSync(path.join(root, 's.sh')).mode & 0o777, 0o755);
    assert.match(d.diff, /-echo a/);
  });

  test('stale_file with the suggested action when the sha does not match; file untouched', async () => {
    write('a.txt', 'v1');
    const e = err(await ws.call('write_file', { path: 'a.txt', content: 'v2', expectedSha256: sha('v0') }), 'stale_file');
    assert.equal(e.suggestedAction, STALE_FILE_ACTION);
    assert.equal(e.suggestedAction, 'Re-read the file to obtain the current sha256 and re-apply your edit.');
    assert.equal(read('a.txt'), 'v1');
  });

  test('expectedSha256 "" creates a file that does not exist (and is stale once it does)', async () => {
    const d = data(await ws.call('write_file', { path: 'sub/new.txt', content: 'fresh\n', expectedSha256: '' }));
    assert.equal(d.sha256, sha('fresh\n'));
    assert.equal(read('sub/new.txt'), 'fresh\n');
    err(await ws.call('write_file', { path: 'sub/new.txt', content: 'again', expectedSha256: '' }), 'stale_file');
    assert.equal(read('sub/new.txt'), 'fresh\n');
  });

  test('not_found and is_directory', async () => {
    err(await ws.call('write_file', { path: 'nope.txt', content: 'x', expectedSha256: sha('') }), 'not_found');
    fs.mkdirSync(path.join(root, 'd'));
    err(await ws.call('write_file', { path: 'd', content: 'x', expectedSha256: sha('') }), 'is_directory');
  });

  test('no temp files are left next to the target', async () => {
    write('a.txt', 'v1');
    data(await ws.call('write_file', { path: 'a.txt', content: 'v2', expectedSha256: sha('v1') }));
    assert.deepEqual(fs.readdirSync(root), ['a.txt']);
  });
});

describe('edit_file', () => {
  test('applies several edits against the original text; returns sha256 and a unified diff', async () => {
    write('a.ts', 'const a = 1;\nconst b = 2;\nconst c = 3;\n');
    const d = data<{ sha256: string; diff: string }>(
      await ws.call('edit_file', {
        path: 'a.ts',
        expectedSha256: sha(readBytes('a.ts')),
        edits: [
          { oldText: 'const c = 3;', newText: 'const c = 30;' },
          { oldText: 'const a = 1;', newText: 'const a = 10;' },
        ],
      }),
    );
    assert.equal(read('a.ts'), 'const a = 10;\nconst b = 2;\nconst c = 30;\n');
    assert.equal(d.sha256, sha(readBytes('a.ts')));
    assert.match(d.diff, /^--- a\/a\.ts\n\+\+\+ b\/a\.ts\n@@ /);
    assert.match(d.diff, /-const a = 1;\n/);
  });

  test('replaceAll replaces every occurrence', async () => {
    write('a.txt', 'x y x y x\n');
    data(await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('x y x y x\n'), edits: [{ oldText: 'x', newText: 'z', replaceAll: true }] }));
    assert.equal(read('a.txt'), 'z y z y z\n');
  });

  test('CRLF, BOM, missing final newline and mode are preserved', async () => {
    const orig = Buffer.from('\ufeffline one\r\nline two\r\nlast', 'utf8');
    write('w.txt', orig, 0o600);
    data(await ws.call('edit_file', { path: 'w.txt', expectedSha256: sha(orig), edits: [{ oldText: 'line two\nlast', newText: 'line 2\nfinal' }] }));
    assert.deepEqual(readBytes('w.txt'), Buffer.from('\ufeffline one\r\nline 2\r\nfinal', 'utf8'));
    assert.equal(fs.statSync(path.join(root, 'w.txt')).mode & 0o777, 0o600);
    // oldText given with CRLF also matches a CRLF file
    const cur = readBytes('w.txt');
    data(await ws.call('edit_file', { path: 'w.txt', expectedSha256: sha(cur), edits: [{ oldText: 'line one\r\n', newText: 'first\r\n' }] }));
    assert.deepEqual(readBytes('w.txt'), Buffer.from('\ufefffirst\r\nline 2\r\nfinal', 'utf8'));
  });

  test('a final newline stays when an edit touches the end of the file', async () => {
    write('a.txt', 'a\nb\n');
    data(await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('a\nb\n'), edits: [{ oldText: 'b\n', newText: 'c' }] }));
    assert.equal(read('a.txt'), 'a\nc\n');
  });

  test('old_text_not_found carries the closest lines as a hint', async () => {
    write('a.ts', 'function hello(name) {\n  return name;\n}\n');
    const e = err(
      await ws.call('edit_file', { path: 'a.ts', expectedSha256: sha(readBytes('a.ts')), edits: [{ oldText: 'function helo(name) {', newText: 'x' }] }),
      'old_text_not_found',
    );
    assert.match(e.suggestedAction ?? '', /line 1: "function hello\(name\) \{"/);
    assert.equal((e.details as { candidates: { line: number }[] }).candidates[0].line, 1);
  });

  test('multiple_matches reports the count', async () => {
    write('a.txt', 'foo\nfoo\nfoo\n');
    const e = err(await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('foo\nfoo\nfoo\n'), edits: [{ oldText: 'foo', newText: 'bar' }] }), 'multiple_matches');
    assert.equal((e.details as { count: number }).count, 3);
    assert.match(e.message, /3/);
  });

  test('overlapping_edits; and all-or-nothing when a later edit fails', async () => {
    write('a.txt', 'abcdef\n');
    err(
      await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('abcdef\n'), edits: [{ oldText: 'abcd', newText: 'x' }, { oldText: 'cdef', newText: 'y' }] }),
      'overlapping_edits',
    );
    err(
      await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('abcdef\n'), edits: [{ oldText: 'abc', newText: 'x' }, { oldText: 'zzz', newText: 'y' }] }),
      'old_text_not_found',
    );
    assert.equal(read('a.txt'), 'abcdef\n');
  });

  test('stale_file, not_found, is_directory, binary_file, empty oldText', async () => {
    write('a.txt', 'v1\n');
    const e = err(await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('v0\n'), edits: [{ oldText: 'v1', newText: 'v2' }] }), 'stale_file');
    assert.equal(e.suggestedAction, STALE_FILE_ACTION);
    err(await ws.call('edit_file', { path: 'no.txt', expectedSha256: sha(''), edits: [{ oldText: 'a', newText: 'b' }] }), 'not_found');
    fs.mkdirSync(path.join(root, 'd'));
    err(await ws.call('edit_file', { path: 'd', expectedSha256: sha(''), edits: [{ oldText: 'a', newText: 'b' }] }), 'is_directory');
    const bin = Buffer.from([1, 0, 2]);
    write('b.bin', bin);
    err(await ws.call('edit_file', { path: 'b.bin', expectedSha256: sha(bin), edits: [{ oldText: 'a', newText: 'b' }] }), 'binary_file');
    err(await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('v1\n'), edits: [{ oldText: '', newText: 'b' }] }), 'invalid_arguments');
    err(await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha('v1\n'), edits: [] }), 'invalid_arguments');
  });

  test('a big diff is capped with a notice', async () => {
    const text = Array.from({ length: 3000 }, (_, i) => `l${i}`).join('\n') + '\n';
    write('a.txt', text);
    const d = data<{ diff: string; diffTruncated: boolean; notice: string }>(
      await ws.call('edit_file', { path: 'a.txt', expectedSha256: sha(text), edits: [{ oldText: 'l', newText: 'L', replaceAll: true }] }),
    );
    assert.equal(d.diffTruncated, true);
    assert.ok(d.diff.split('\n').length <= 2001);
    assert.match(d.notice, /omitted/);
    assert.equal(read('a.txt'), text.replace(/l/g, 'L'));
  });
});

describe('delete_file and restore_file', () => {
  test('the approval preview says what goes, how big, where, and shows its first lines (no hashes)', async () => {
    write('notes.txt', 'alpha\nbeta\ngamma\n');
    const ctx = { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 's' };
    const p = await deleteFileTool.preview!({ path: 'notes.txt', expectedSha256: sha('alpha\nbeta\ngamma\n') }, ctx);
    assert.deepEqual(p, { kind: 'text', text: 'Delete notes.txt (3 lines, 17 bytes); it goes to the trash (:CabooseRestore brings it back).\n\nalpha\nbeta\ngamma' });
    write('bin.dat', Buffer.from([1, 0, 2]));
    const b = await deleteFileTool.preview!({ path: 'bin.dat', expectedSha256: sha(Buffer.from([1, 0, 2])) }, ctx);
    assert.deepEqual(b, { kind: 'text', text: 'Delete bin.dat (1 line, 3 bytes); it goes to the trash (:CabooseRestore brings it back).' });
    assert.ok(exists('notes.txt') && exists('bin.dat'), 'a preview deletes nothing');
  });

  test('delete moves the file to the trash and restore brings it back with its mode', async () => {
    write('d/a.sh', 'echo hi\n', 0o755);
    const del = data<{ trashId: string; path: string }>(await ws.call('delete_file', { path: 'd/a.sh', expectedSha256: sha('echo hi\n') }));
    assert.equal(exists('d/a.sh'), false);
    const list = ws.workspace.trash.list();
    assert.equal(list.length, 1);
    assert.deepEqual([list[0].id, list[0].originalPath, list[0].sha256, list[0].sessionId], [del.trashId, 'd/a.sh', sha('echo hi\n'), 'test']);
    assert.ok(list[0].deletedAt);
    assert.ok(fs.readdirSync(path.join(dataDir, 'trash')).includes(del.trashId));
    const res = data<{ path: string; sha256: string }>(await ws.call('restore_file', { trashId: del.trashId }));
    assert.equal(res.path, 'd/a.sh');
    assert.equal(read('d/a.sh'), 'echo hi\n');
    assert.equal(fs.statSync(path.join(root, 'd/a.sh')).mode & 0o777, 0o755);
    assert.equal(ws.workspace.trash.list().length, 0);
    err(await ws.call('restore_file', { trashId: del.trashId }), 'not_found');
  });

  test('restore to targetPath; already_exists when the target exists, never overwriting', async () => {
    write('a.txt', 'old');
    const { trashId } = data<{ trashId: string }>(await ws.call('delete_file', { path: 'a.txt', expectedSha256: sha('old') }));
    write('a.txt', 'new');
    err(await ws.call('restore_file', { trashId }), 'already_exists');
    assert.equal(read('a.txt'), 'new');
    data(await ws.call('restore_file', { trashId, targetPath: 'b/a-old.txt' }));
    assert.equal(read('b/a-old.txt'), 'old');
  });

  test('errors: stale_file, not_found, is_directory, unknown trash id', async () => {
    write('a.txt', 'v1');
    err(await ws.call('delete_file', { path: 'a.txt', expectedSha256: sha('v0') }), 'stale_file');
    assert.equal(exists('a.txt'), true);
    err(await ws.call('delete_file', { path: 'none.txt', expectedSha256: sha('v1') }), 'not_found');
    fs.mkdirSync(path.join(root, 'd'));
    err(await ws.call('delete_file', { path: 'd', expectedSha256: sha('v1') }), 'is_directory');
    err(await ws.call('restore_file', { trashId: 'nope' }), 'not_found');
  });

  test('expectedSha256 is required: without it nothing is deleted and the error says to read the file first', async () => {
    write('a.txt', 'keep\n');
    const e = err(await ws.call('delete_file', { path: 'a.txt' }), 'invalid_arguments');
    assert.match(e.message, /expectedSha256/);
    assert.match(e.message, /read_file/);
    assert.match(e.suggestedAction!, /read_file/);
    assert.equal(read('a.txt'), 'keep\n');
    assert.equal(ws.workspace.trash.list().length, 0);
    const spec = ws.tools.find((t) => t.name === 'delete_file')!;
    assert.deepEqual((spec.parameters as { required: string[] }).required, ['path', 'expectedSha256']);
    // A wrong one is still stale_file with the re-read advice.
    const stale = err(await ws.call('delete_file', { path: 'a.txt', expectedSha256: sha('other') }), 'stale_file');
    assert.equal(stale.suggestedAction, STALE_FILE_ACTION);
  });

  test('trash retention purges old entries', async () => {
    write('a.txt', 'x');
    const { trashId } = data<{ trashId: string }>(await ws.call('delete_file', { path: 'a.txt', expectedSha256: sha('x') }));
    assert.equal(await ws.workspace.trash.purge(new Date(Date.now() + 29 * 86_400_000)), 0);
    assert.equal(await ws.workspace.trash.purge(new Date(Date.now() + 31 * 86_400_000)), 1);
    assert.equal(ws.workspace.trash.list().length, 0);
    assert.equal(fs.existsSync(path.join(dataDir, 'trash', trashId)), false);
  });
});

describe('move_file', () => {
  test('moves and renames, creating folders; sha unchanged', async () => {
    write('a.txt', 'content\n', 0o640);
    const d = data<{ from: string; to: string; sha256: string }>(await ws.call('move_file', { from: 'a.txt', to: 'n/b.txt', expectedSha256: sha('content\n') }));
    assert.deepEqual([d.from, d.to, d.sha256], ['a.txt', 'n/b.txt', sha('content\n')]);
    assert.equal(exists('a.txt'), false);
    assert.equal(read('n/b.txt'), 'content\n');
    assert.equal(fs.statSync(path.join(root, 'n/b.txt')).mode & 0o777, 0o640);
  });

  test('never overwrites; stale_file; not_found; is_directory', async () => {
    write('a.txt', 'a');
    write('b.txt', 'b');
    err(await ws.call('move_file', { from: 'a.txt', to: 'b.txt', expectedSha256: sha('a') }), 'already_exists');
    assert.deepEqual([read('a.txt'), read('b.txt')], ['a', 'b']);
    err(await ws.call('move_file', { from: 'a.txt', to: 'c.txt', expectedSha256: sha('zz') }), 'stale_file');
    err(await ws.call('move_file', { from: 'x.txt', to: 'c.txt', expectedSha256: sha('a') }), 'not_found');
    fs.mkdirSync(path.join(root, 'd'));
    err(await ws.call('move_file', { from: 'd', to: 'e', expectedSha256: sha('a') }), 'is_directory');
    err(await ws.call('move_file', { from: 'a.txt', to: '../out.txt', expectedSha256: sha('a') }), 'outside_workspace');
    assert.equal(exists('c.txt'), false);
  });

  test('expectedSha256 is required: without it nothing moves and the error says to read the file first', async () => {
    write('a.txt', 'a');
    const e = err(await ws.call('move_file', { from: 'a.txt', to: 'b.txt' }), 'invalid_arguments');
    assert.match(e.message, /expectedSha256/);
    assert.match(e.message, /read_file/);
    assert.match(e.suggestedAction!, /read_file/);
    assert.deepEqual([exists('a.txt'), exists('b.txt')], [true, false]);
    const spec = ws.tools.find((t) => t.name === 'move_file')!;
    assert.deepEqual((spec.parameters as { required: string[] }).required, ['from', 'to', 'expectedSha256']);
    const stale = err(await ws.call('move_file', { from: 'a.txt', to: 'b.txt', expectedSha256: sha('b') }), 'stale_file');
    assert.equal(stale.suggestedAction, STALE_FILE_ACTION);
    assert.deepEqual([exists('a.txt'), exists('b.txt')], [true, false]);
  });
});

describe('apply_patch', () => {
  const envelope = (body: string): string => `*** Begin Patch\n${body}*** End Patch\n`;

  test('add, update, delete and move in one envelope; deleted files go to the trash', async () => {
    write('mod.txt', 'a\nb\nc\n');
    write('del.txt', 'bye\n');
    write('mv.txt', 'x\ny\n');
    const d = data<{ files: { path: string; action: string; trashId?: string; moveTo?: string }[]; diff: string }>(
      await ws.call('apply_patch', {
        patch: envelope(
          '*** Add File: new/n.txt\n+hello\n*** Delete File: del.txt\n*** Update File: mod.txt\n@@\n a\n-b\n+B\n c\n' +
            '*** Update File: mv.txt\n*** Move to: moved/mv.txt\n@@\n x\n-y\n+Y\n',
        ),
      }),
    );
    assert.equal(read('new/n.txt'), 'hello\n');
    assert.equal(exists('del.txt'), false);
    assert.equal(read('mod.txt'), 'a\nB\nc\n');
    assert.equal(exists('mv.txt'), false);
    assert.equal(read('moved/mv.txt'), 'x\nY\n');
    const del = d.files.find((f) => f.action === 'delete')!;
    assert.ok(del.trashId);
    assert.equal(ws.workspace.trash.get(del.trashId!)!.originalPath, 'del.txt');
    assert.match(d.diff, /\+hello/);
    assert.match(d.diff, /-b\n\+B/);
  });

  test('several @@ lines in a row pick one of identical spots (class, then method); the description says so', async () => {
    const src = 'class A:\n    def run(self):\n        return 0\n\nclass B:\n    def run(self):\n        return 0\n';
    write('m.py', src);
    data(await ws.call('apply_patch', {
      patch: envelope('*** Update File: m.py\n@@ class B:\n@@     def run(self):\n-        return 0\n+        return 1\n'),
      expectedSha256ByPath: { 'm.py': sha(src) },
    }));
    assert.equal(read('m.py'), src.replace(/return 0\n$/, 'return 1\n'));
    const spec = ws.tools.find((t) => t.name === 'apply_patch')!;
    assert.match(spec.description, /several @@ lines/);
  });

  test('plain unified diffs are accepted', async () => {
    write('u.txt', 'one\ntwo\nthree\n');
    data(await ws.call('apply_patch', { patch: '--- a/u.txt\n+++ b/u.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n' }));
    assert.equal(read('u.txt'), 'one\nTWO\nthree\n');
  });

  test('expectedSha256ByPath: match passes, mismatch is stale_file, "" asserts absence, absent paths are unchecked', async () => {
    write('a.txt', 'a\n');
    write('b.txt', 'b\n');
    const patch = envelope('*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n*** Add File: c.txt\n+c\n');
    const e = err(await ws.call('apply_patch', { patch, expectedSha256ByPath: { 'a.txt': sha('a\n'), 'b.txt': sha('old\n') } }), 'stale_file');
    assert.equal(e.suggestedAction, STALE_FILE_ACTION);
    assert.equal(e.path, 'b.txt');
    assert.deepEqual([read('a.txt'), read('b.txt'), exists('c.txt')], ['a\n', 'b\n', false]);
    write('c.txt', 'sneaky\n');
    err(await ws.call('apply_patch', { patch: envelope('*** Update File: a.txt\n@@\n-a\n+A\n'), expectedSha256ByPath: { 'c.txt': '' } }), 'stale_file');
    fs.unlinkSync(path.join(root, 'c.txt'));
    data(await ws.call('apply_patch', { patch, expectedSha256ByPath: { 'a.txt': sha('a\n'), 'c.txt': '' } }));
    assert.deepEqual([read('a.txt'), read('b.txt'), read('c.txt')], ['A\n', 'B\n', 'c\n']);
  });

  test('"" for an Add File target that exists is already_exists (the Add File rule), nothing written', async () => {
    write('a.txt', 'a\n');
    write('c.txt', 'sneaky\n');
    const patch = envelope('*** Update File: a.txt\n@@\n-a\n+A\n*** Add File: c.txt\n+c\n');
    const e = err(await ws.call('apply_patch', { patch, expectedSha256ByPath: { 'a.txt': sha('a\n'), 'c.txt': '' } }), 'already_exists');
    assert.equal(e.path, 'c.txt');
    assert.deepEqual([read('a.txt'), read('c.txt')], ['a\n', 'sneaky\n']);
  });

  test('Add File on an existing path is already_exists and nothing is written', async () => {
    write('a.txt', 'keep\n');
    err(await ws.call('apply_patch', { patch: envelope('*** Add File: new.txt\n+n\n*** Add File: a.txt\n+x\n') }), 'already_exists');
    assert.equal(read('a.txt'), 'keep\n');
    assert.equal(exists('new.txt'), false);
  });

  test('a failing hunk leaves every file as it was (patch_apply_error)', async () => {
    write('a.txt', 'a\n');
    write('b.txt', 'b\n');
    err(
      await ws.call('apply_patch', { patch: envelope('*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: b.txt\n*** Update File: b.txt\n@@\n-nothere\n+x\n') }),
      'not_found',
    );
    err(await ws.call('apply_patch', { patch: envelope('*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-nothere\n+x\n') }), 'patch_apply_error');
    assert.deepEqual([read('a.txt'), read('b.txt')], ['a\n', 'b\n']);
    assert.equal(ws.workspace.trash.list().length, 0);
  });

  test('patch_parse_error, outside_workspace, permission_denied, is_directory, binary_file', async () => {
    err(await ws.call('apply_patch', { patch: 'this is not a patch' }), 'patch_parse_error');
    err(await ws.call('apply_patch', { patch: '*** Begin Patch\n*** End Patch\n' }), 'patch_parse_error');
    err(await ws.call('apply_patch', { patch: envelope('*** Add File: ../x.txt\n+x\n') }), 'outside_workspace');
    err(await ws.call('apply_patch', { patch: envelope('*** Add File: .git/x\n+x\n') }), 'permission_denied');
    fs.mkdirSync(path.join(root, 'd'));
    err(await ws.call('apply_patch', { patch: envelope('*** Delete File: d\n') }), 'is_directory');
    write('b.bin', Buffer.from([0x61, 0, 0x0a]));
    err(await ws.call('apply_patch', { patch: envelope('*** Update File: b.bin\n@@\n-a\n+b\n') }), 'binary_file');
    assert.equal(exists('x.txt'), false);
  });

  test('CRLF and BOM survive a patch', async () => {
    const orig = Buffer.from('\ufeffa\r\nb\r\n', 'utf8');
    write('w.txt', orig);
    data(await ws.call('apply_patch', { patch: envelope('*** Update File: w.txt\n@@\n a\n-b\n+B\n'), expectedSha256ByPath: { 'w.txt': sha(orig) } }));
    assert.deepEqual(readBytes('w.txt'), Buffer.from('\ufeffa\r\nB\r\n', 'utf8'));
  });
});

describe('previews', () => {
  test('every write tool previews its change without writing', async () => {
    write('a.txt', 'a\n');
    const ctx = { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 'test' };
    const pv = (name: string, args: unknown) => ws.registry.get(name)!.preview!(args as never, ctx);
    const p1 = await pv('edit_file', { path: 'a.txt', expectedSha256: sha('a\n'), edits: [{ oldText: 'a', newText: 'b' }] });
    assert.equal(p1.kind, 'diff');
    assert.match((p1 as { diff: string }).diff, /-a\n\+b/);
    assert.match(((await pv('write_file', { path: 'a.txt', content: 'z\n', expectedSha256: sha('a\n') })) as { diff: string }).diff, /\+z/);
    assert.match(((await pv('create_file', { path: 'n.txt', content: 'n\n' })) as { diff: string }).diff, /\+n/);
    assert.match(((await pv('delete_file', { path: 'a.txt', expectedSha256: sha('a\n') })) as { text: string }).text, /Delete a\.txt/);
    assert.match(((await pv('move_file', { from: 'a.txt', to: 'b.txt', expectedSha256: sha('a\n') })) as { text: string }).text, /a\.txt → b\.txt/);
    assert.match(
      ((await pv('apply_patch', { patch: '*** Begin Patch\n*** Add File: p.txt\n+p\n*** Update File: a.txt\n@@\n-a\n+c\n*** End Patch' })) as { diff: string }).diff,
      /\+p[\s\S]*\+c/,
    );
    assert.equal(read('a.txt'), 'a\n');
    assert.deepEqual(fs.readdirSync(root), ['a.txt']);
    assert.equal(ws.workspace.audit.list().length, 0);
    write('t.txt', 't');
    const { trashId } = data<{ trashId: string }>(await ws.call('delete_file', { path: 't.txt', expectedSha256: sha('t') }));
    assert.match(((await pv('restore_file', { trashId })) as { diff: string }).diff, /\+t/);
    assert.equal(exists('t.txt'), false);
  });
});
