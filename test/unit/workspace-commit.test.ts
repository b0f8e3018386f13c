import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace } from '../../src/index';
import { fileTree } from '../support/files';
import { FileAccess } from '../../src/workspace/file-access';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

let tmp: string;
let root: string;
let ws: OpenedWorkspace;

function write(rel: string, content: string): void {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
}
const read = (rel: string): string => fs.readFileSync(path.join(root, rel), 'utf8');
const tree = (): Record<string, string> => fileTree(root);

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-commit-')));
  root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 'commit' });
});
afterEach(() => {
  ws.workspace.files.faultHook = undefined;
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('stale gate under concurrency', () => {
  test('two concurrent writes with the same expectedSha256: exactly one succeeds, the other is stale_file', async () => {
    write('a.txt', 'v0\n');
    const expected = sha('v0\n');
    const [r1, r2] = await Promise.all([
      ws.call('write_file', { path: 'a.txt', content: 'one\n', expectedSha256: expected }),
      ws.call('write_file', { path: 'a.txt', content: 'two\n', expectedSha256: expected }),
    ]);
    const oks = [r1, r2].filter((r) => r.ok);
    const stale = [r1, r2].filter((r) => !r.ok && r.error.kind === 'stale_file');
    assert.equal(oks.length, 1);
    assert.equal(stale.length, 1);
    assert.equal(read('a.txt'), r1.ok ? 'one\n' : 'two\n');
  });

  test('many concurrent edits of one file from one sha: one winner; mixed tools too', async () => {
    write('a.txt', 'counter 0\n');
    const expected = sha('counter 0\n');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? ws.call('edit_file', { path: 'a.txt', expectedSha256: expected, edits: [{ oldText: 'counter 0', newText: `counter ${i + 1}` }] })
          : i % 3 === 1
            ? ws.call('write_file', { path: 'a.txt', content: `w${i}\n`, expectedSha256: expected })
            : ws.call('apply_patch', { patch: `*** Begin Patch\n*** Update File: a.txt\n@@\n-counter 0\n+p${i}\n*** End Patch\n`, expectedSha256ByPath: { 'a.txt': expected } }),
      ),
    );
    assert.equal(results.filter((r) => r.ok).length, 1);
    assert.ok(results.every((r) => r.ok || r.error.kind === 'stale_file'));
  });

  test('the gate compares against the bytes at commit time, not at an earlier read', async () => {
    write('a.txt', 'v0\n');
    const expected = sha('v0\n');
    fs.writeFileSync(path.join(root, 'a.txt'), 'changed by the user\n');
    const r = await ws.call('edit_file', { path: 'a.txt', expectedSha256: expected, edits: [{ oldText: 'v0', newText: 'v1' }] });
    assert.equal(!r.ok && r.error.kind, 'stale_file');
    assert.equal(read('a.txt'), 'changed by the user\n');
  });
});

describe('atomic multi-file commit', () => {
  test('a failure at any step of a patch commit leaves every file as it was, with no leftovers', async () => {
    write('a.txt', 'a\n');
    write('b.txt', 'b\n');
    write('c.txt', 'c\n');
    const before = tree();
    const patch =
      '*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: b.txt\n*** Add File: n/new.txt\n+new\n' +
      '*** Update File: c.txt\n*** Move to: m/c2.txt\n@@\n-c\n+C\n*** End Patch\n';
    let steps = 0;
    ws.workspace.files.faultHook = () => {
      steps++;
    };
    assert.equal((await ws.call('apply_patch', { patch, expectedSha256ByPath: { 'a.txt': sha('a\n') } })).ok, true);
    const after = tree();
    // restore the starting tree
    fs.rmSync(root, { recursive: true });
    fs.mkdirSync(root);
    for (const [k, v] of Object.entries(before)) write(k, v);
    for (let failAt = 0; failAt < steps; failAt++) {
      let n = 0;
      ws.workspace.files.faultHook = () => {
        if (n++ === failAt) throw Object.assign(new Error('simulated EIO'), { code: 'EIO' });
      };
      const r = await ws.call('apply_patch', { patch });
      assert.equal(r.ok, false, `fail at step ${failAt}`);
      assert.deepEqual(tree(), before, `fail at step ${failAt}: tree restored`);
      assert.ok(!fs.existsSync(path.join(root, 'n')) && !fs.existsSync(path.join(root, 'm')), 'created folders removed');
    }
    assert.equal(ws.workspace.trash.list().length, 1, 'only the first successful run trashed b.txt');
    assert.equal(fs.readdirSync(path.join(tmp, 'data', 'trash')).length, 1, 'failed runs left no trash content');
    ws.workspace.files.faultHook = undefined;
    assert.equal((await ws.call('apply_patch', { patch })).ok, true);
    assert.deepEqual(tree(), after);
  });

  test('a rename failing midway restores files already replaced', async () => {
    const fa = new FileAccess();
    write('x.txt', 'x0');
    write('y.txt', 'y0');
    let commits = 0;
    fa.faultHook = ({ phase, index }) => {
      if (phase === 'commit' && index === 1) throw new Error('disk full');
      if (phase === 'commit') commits++;
    };
    await assert.rejects(
      fa.commit([
        { type: 'write', abs: path.join(root, 'x.txt'), bytes: Buffer.from('x1') },
        { type: 'write', abs: path.join(root, 'y.txt'), bytes: Buffer.from('y1') },
      ]),
      /disk full/,
    );
    assert.equal(commits, 1);
    assert.deepEqual(tree(), { 'x.txt': 'x0', 'y.txt': 'y0' });
  });

  test('createOnly never clobbers a file that appeared after planning', async () => {
    const fa = new FileAccess();
    fa.faultHook = ({ phase }) => {
      if (phase === 'commit') fs.writeFileSync(path.join(root, 'race.txt'), 'theirs');
    };
    await assert.rejects(fa.commit([{ type: 'write', abs: path.join(root, 'race.txt'), bytes: Buffer.from('ours'), createOnly: true }]), {
      kind: 'already_exists',
    });
    assert.deepEqual(tree(), { 'race.txt': 'theirs' });
  });
});
