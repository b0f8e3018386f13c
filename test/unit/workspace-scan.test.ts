import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { DEFAULT_SCAN_LIMITS, diffScans, scanWorkspace, type WorkspaceScan } from '../../src/workspace/scan';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

let root: string;
const write = (rel: string, content: string | Buffer): void => {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
};
/** Moves a file's mtime into the past, out of the "modified just before the scan" window. */
const age = (rel: string, seconds = 60): void => {
  const t = new Date(Date.now() - seconds * 1000);
  fs.utimesSync(path.join(root, rel), t, t);
};

beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-scan-')));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe('scanWorkspace', () => {
  test('stamps every file with size, mtime and sha256; root-relative / paths in order', async () => {
    write('b.txt', 'bee\n');
    write('a/deep/c.ts', 'export {};\n');
    write('.hidden', 'h');
    const s = await scanWorkspace(root);
    assert.equal(s.complete, true);
    assert.deepEqual([...s.files.keys()], ['.hidden', 'a/deep/c.ts', 'b.txt']);
    const b = s.files.get('b.txt')!;
    assert.equal(b.size, 4);
    assert.equal(b.sha256, sha('bee\n'));
    assert.equal(b.mtimeMs, fs.statSync(path.join(root, 'b.txt')).mtimeMs);
  });

  test('skips .git, .gitignore rules (nested, negated, folder-only) and what isIgnored prunes', async () => {
    write('.git/HEAD', 'ref\n');
    write('.gitignore', 'node_modules/\n*.log\n!keep.log\nbuild\n');
    write('node_modules/x/index.js', 'x');
    write('app.log', 'l');
    write('keep.log', 'k');
    write('build/out.js', 'o');
    write('pkg/.gitignore', 'gen/\n');
    write('pkg/gen/a.ts', 'g');
    write('pkg/src/a.ts', 's');
    write('secret/key.pem', 'k');
    write('node_modules.txt', 'a file, not the folder');
    const asked: string[] = [];
    const s = await scanWorkspace(root, {
      isIgnored: (rel) => {
        asked.push(rel);
        return rel === 'secret';
      },
    });
    assert.deepEqual([...s.files.keys()], ['.gitignore', 'keep.log', 'node_modules.txt', 'pkg/.gitignore', 'pkg/src/a.ts']);
    assert.ok(!asked.includes('secret/key.pem'), 'a pruned folder is not entered');
    assert.ok(!asked.some((r) => r.startsWith('node_modules/')), 'ignored folders are not entered');

    const all = await scanWorkspace(root, { gitignore: false });
    assert.ok(all.files.has('node_modules/x/index.js') && all.files.has('build/out.js'));
    assert.ok(!all.files.has('.git/HEAD'), '.git is always skipped');
  });

  test('files above maxFileBytes and past maxTotalBytes are stamped without a hash; onContent gets what was read', async () => {
    write('big.bin', Buffer.alloc(3000, 1));
    write('a.txt', 'a'.repeat(600));
    write('b.txt', 'b'.repeat(600));
    const seen: [string, string][] = [];
    const s = await scanWorkspace(root, {
      limits: { maxFileBytes: 2000, maxTotalBytes: 1000 },
      onContent: (rel, bytes, h) => {
        assert.equal(sha(bytes), h);
        seen.push([rel, bytes.toString('utf8').slice(0, 1)]);
      },
    });
    assert.equal(s.complete, true, 'every file is listed');
    assert.equal(s.files.get('big.bin')!.sha256, '');
    assert.equal(s.files.get('big.bin')!.size, 3000);
    const hashed = ['a.txt', 'b.txt'].filter((r) => s.files.get(r)!.sha256 !== '');
    assert.equal(hashed.length, 1, 'the byte budget stops hashing after one 600-byte file');
    assert.deepEqual(seen.map(([r]) => r), hashed);
  });

  test('maxFiles and the time budget cut the scan and say so', async () => {
    for (let i = 0; i < 30; i++) write(`d${i % 3}/f${i}.txt`, String(i));
    const cut = await scanWorkspace(root, { limits: { maxFiles: 10 } });
    assert.equal(cut.complete, false);
    assert.equal(cut.files.size, 10);
    const exact = await scanWorkspace(root, { limits: { maxFiles: 30 } });
    assert.equal(exact.complete, true, 'exactly maxFiles files is complete');
    assert.equal(exact.files.size, 30);
    const late = await scanWorkspace(root, { limits: { timeBudgetMs: 0 } });
    assert.equal(late.complete, false);
    assert.equal(DEFAULT_SCAN_LIMITS.maxFiles, 5000);
  });

  test('symlinks are listed (by lstat, not followed); a folder symlink is not entered', async () => {
    write('real/a.txt', 'a');
    fs.symlinkSync('real/a.txt', path.join(root, 'link.txt'));
    fs.symlinkSync('real', path.join(root, 'dirlink'));
    const s = await scanWorkspace(root);
    assert.deepEqual([...s.files.keys()], ['dirlink', 'link.txt', 'real/a.txt']);
    assert.equal(s.files.get('link.txt')!.sha256, '');
  });

  test('previous: unchanged stamps keep their sha256 without a read; changed and just-written files are read', async () => {
    write('old.txt', 'old');
    write('edited.txt', 'v1');
    age('old.txt');
    age('edited.txt');
    write('fresh.txt', 'new'); // modified within a second of the first scan: may change again in the same tick
    const first = await scanWorkspace(root);
    write('edited.txt', 'v2!');
    const read: string[] = [];
    const second = await scanWorkspace(root, { previous: first, onContent: (rel) => read.push(rel) });
    assert.deepEqual(read.sort(), ['edited.txt', 'fresh.txt']);
    assert.equal(second.files.get('old.txt')!.sha256, sha('old'));
    assert.equal(second.files.get('edited.txt')!.sha256, sha('v2!'));
  });
});

test('FileWorkspace.scanFiles leaves out the deny globs and a data folder inside the workspace', async () => {
  write('src/a.ts', 'a');
  write('secret/key.pem', 'k');
  const ws = openWorkspace({ root, dataDir: path.join(root, '.data'), denyGlobs: ['.git/**', 'secret/**'] });
  try {
    await ws.call('create_file', { path: 'b.ts', content: 'b' }); // the database is written under .data
    const s = await ws.workspace.scanFiles();
    assert.deepEqual([...s.files.keys()], ['b.ts', 'src/a.ts']);
  } finally {
    ws.close();
  }
});

describe('diffScans', () => {
  test('created, changed and deleted; a rewrite with the same bytes is no change', async () => {
    write('keep.txt', 'same');
    write('touched.txt', 'same');
    write('edit.txt', 'one');
    write('gone.txt', 'bye');
    const before = await scanWorkspace(root);
    write('touched.txt', 'same');
    fs.utimesSync(path.join(root, 'touched.txt'), new Date(), new Date(Date.now() + 5000));
    write('edit.txt', 'two');
    fs.rmSync(path.join(root, 'gone.txt'));
    write('sub/new.txt', 'hi');
    const after = await scanWorkspace(root, { previous: before });
    assert.deepEqual(diffScans(before, after), { created: ['sub/new.txt'], changed: ['edit.txt'], deleted: ['gone.txt'] });
  });

  test('without hashes, stamps compare by size and mtime', () => {
    const scan = (entries: [string, number, number][], complete = true): WorkspaceScan => ({
      files: new Map(entries.map(([rel, size, mtimeMs]) => [rel, { size, mtimeMs, sha256: '' }])),
      complete,
    });
    const before = scan([['a', 1, 10], ['b', 1, 10], ['c', 1, 10]]);
    const after = scan([['a', 1, 10], ['b', 1, 11], ['c', 2, 10], ['d', 1, 1]]);
    assert.deepEqual(diffScans(before, after), { created: ['d'], changed: ['b', 'c'], deleted: [] });
  });

  test('an incomplete scan claims no creation (before) and no deletion (after) it cannot know', () => {
    const s = (rels: string[], complete: boolean): WorkspaceScan => ({
      files: new Map(rels.map((r) => [r, { size: 1, mtimeMs: 1, sha256: sha(r) }])),
      complete,
    });
    assert.deepEqual(diffScans(s(['a', 'b'], false), s(['a', 'c'], true)), { created: [], changed: [], deleted: ['b'] });
    assert.deepEqual(diffScans(s(['a', 'b'], true), s(['a', 'c'], false)), { created: ['c'], changed: [], deleted: [] });
  });
});
