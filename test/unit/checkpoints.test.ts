import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openWorkspace, type ToolResult } from '../../src/index';
import { CheckpointRepository, migrate } from '../../src/store';
import { listCheckpoints, previewCheckpoint, rewindCheckpoints, type RewindResult } from '../../src/workspace/rewind';
import { FakeBridge } from '../support/fake-bridge';
import { createBashTool } from '../../src/tools/bash';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');
const SESSION = 's1';

function setup(opts: { bridge?: boolean } = {}) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-cp-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  const bridge = new FakeBridge();
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: SESSION, bridge: opts.bridge ? bridge : null });
  const abs = (p: string) => path.join(root, p);
  const file = (p: string) => (fs.existsSync(abs(p)) ? fs.readFileSync(abs(p), 'utf8') : null);
  const put = (p: string, text: string, mode?: number) => {
    fs.mkdirSync(path.dirname(abs(p)), { recursive: true });
    fs.writeFileSync(abs(p), text);
    if (mode !== undefined) fs.chmodSync(abs(p), mode);
  };
  const ok = async (name: string, args: unknown) => {
    const r: ToolResult = await ws.call(name, args);
    assert.ok(r.ok, `${name}: ${JSON.stringify(r)}`);
    return r.data as Record<string, unknown>;
  };
  /** Runs `fn` as the turn of a user message. */
  const turn = async (text: string, fn: () => Promise<unknown>) => {
    ws.workspace.checkpoints.begin({ sessionId: SESSION, messageId: text, text });
    try {
      await fn();
    } finally {
      ws.workspace.checkpoints.end();
    }
  };
  const rewind = (o: { id?: number; force?: boolean } = {}) => rewindCheckpoints(ws.workspace, SESSION, o);
  const list = () => listCheckpoints(ws.workspace, SESSION);
  return { tmp, root, bridge, ws, abs, file, put, ok, turn, rewind, list, done: () => (ws.close(), fs.rmSync(tmp, { recursive: true, force: true })) };
}

const rewound = (r: RewindResult) => {
  assert.equal(r.status, 'rewound', JSON.stringify(r));
  return r as RewindResult & { status: 'rewound' };
};

describe('CheckpointRepository', () => {
  test('content-addressed pre-images are stored once; the first pre-image per path stays, the after-state follows', () => {
    const db = new Database(':memory:');
    migrate(db);
    const repo = new CheckpointRepository(db);
    const meta = { sessionId: 's', root: '/r', messageId: '1', message: 'hi', createdAt: new Date().toISOString() };
    repo.putBlob(sha('a'), Buffer.from('a'));
    repo.putBlob(sha('a'), Buffer.from('a'));
    assert.equal(repo.blobCount(), 1);
    const id = repo.record(null, meta, [{ path: 'x', before: { sha256: sha('a'), mode: 0o644 }, afterSha256: sha('b') }]);
    assert.equal(repo.record(id, meta, [{ path: 'x', before: { sha256: sha('b'), mode: 0o600 }, afterSha256: sha('c') }, { path: 'y', before: null, afterSha256: null }]), id);
    assert.deepEqual(repo.files(id), [
      { checkpointId: id, path: 'x', beforeSha256: sha('a'), beforeMode: 0o644, afterSha256: sha('c') },
      { checkpointId: id, path: 'y', beforeSha256: null, beforeMode: null, afterSha256: null },
    ]);
    assert.deepEqual(repo.blob(sha('a')), Buffer.from('a'));
    repo.markRewound([id], 'then');
    assert.equal(repo.get(id)!.rewoundAt, 'then');
    db.close();
  });

  test('purge drops old checkpoints and the pre-images nothing else needs', () => {
    const db = new Database(':memory:');
    migrate(db);
    const repo = new CheckpointRepository(db);
    const old = '2000-01-01T00:00:00.000Z';
    repo.putBlob(sha('old'), Buffer.from('old'));
    repo.putBlob(sha('shared'), Buffer.from('shared'));
    db.prepare('UPDATE checkpoint_blobs SET stored_at = ?').run(old);
    repo.record(null, { sessionId: 's', root: '/r', messageId: null, message: 'a', createdAt: old }, [
      { path: 'x', before: { sha256: sha('old'), mode: 0o644 }, afterSha256: null },
      { path: 'z', before: { sha256: sha('shared'), mode: 0o644 }, afterSha256: null },
    ]);
    const keep = repo.record(null, { sessionId: 's', root: '/r', messageId: null, message: 'b', createdAt: new Date().toISOString() }, [
      { path: 'y', before: { sha256: sha('shared'), mode: 0o644 }, afterSha256: null },
    ]);
    assert.equal(repo.purge('2001-01-01T00:00:00.000Z'), 1);
    assert.deepEqual(repo.list('s').map((c) => c.id), [keep]);
    assert.equal(repo.blob(sha('old')), undefined);
    assert.ok(repo.blob(sha('shared')));
    db.close();
  });
});

describe('checkpoint capture', () => {
  test('one checkpoint per turn that changed files; none outside a turn, for a turn without changes or for a refused write', async () => {
    const s = setup();
    try {
      s.put('a.txt', 'one\n');
      await s.ok('write_file', { path: 'a.txt', content: 'outside\n', expectedSha256: sha('one\n') });
      await s.turn('read only', () => s.ok('read_file', { path: 'a.txt' }));
      await s.turn('refused', async () => {
        const r = await s.ws.call('write_file', { path: 'a.txt', content: 'x\n', expectedSha256: sha('stale') });
        assert.equal(r.ok, false);
      });
      assert.deepEqual(s.list(), []);
      await s.turn('edit twice', async () => {
        await s.ok('edit_file', { path: 'a.txt', expectedSha256: sha('outside\n'), edits: [{ oldText: 'outside', newText: 'first' }] });
        await s.ok('edit_file', { path: 'a.txt', expectedSha256: sha('first\n'), edits: [{ oldText: 'first', newText: 'second' }] });
      });
      const [cp] = s.list();
      assert.equal(cp.message, 'edit twice');
      assert.deepEqual(cp.files, [{ path: 'a.txt', change: 'modified' }]);
      const [f] = s.ws.workspace.checkpoints.repo.files(cp.id);
      assert.equal(f.beforeSha256, sha('outside\n'), 'the first pre-image of the turn');
      assert.equal(f.afterSha256, sha('second\n'), 'the state the last write left');
    } finally {
      s.done();
    }
  });

  test('the same content is stored once across checkpoints', async () => {
    const s = setup();
    try {
      s.put('a.txt', 'same\n');
      s.put('b.txt', 'same\n');
      await s.turn('one', () => s.ok('write_file', { path: 'a.txt', content: 'A\n', expectedSha256: sha('same\n') }));
      await s.turn('two', () => s.ok('write_file', { path: 'b.txt', content: 'B\n', expectedSha256: sha('same\n') }));
      assert.equal(s.list().length, 2);
      assert.equal(s.ws.workspace.checkpoints.repo.blobCount(), 1);
    } finally {
      s.done();
    }
  });
});

describe('rewind on disk', () => {
  test('write, edit, patch, create, delete and move in one turn come back exactly (bytes and mode); created files go to the trash', async () => {
    const s = setup();
    try {
      s.put('w.txt', 'write me\n');
      s.put('e.txt', 'edit me\n');
      s.put('p.txt', 'one\ntwo\nthree\n');
      s.put('d.sh', '#!/bin/sh\necho deleted\n', 0o755);
      s.put('m.txt', 'move me\n', 0o600);
      await s.turn('change everything', async () => {
        await s.ok('write_file', { path: 'w.txt', content: 'written\n', expectedSha256: sha('write me\n') });
        await s.ok('edit_file', { path: 'e.txt', expectedSha256: sha('edit me\n'), edits: [{ oldText: 'edit me', newText: 'edited' }] });
        await s.ok('apply_patch', { patch: '--- a/p.txt\n+++ b/p.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n' });
        await s.ok('create_file', { path: 'new/c.txt', content: 'created\n' });
        await s.ok('delete_file', { path: 'd.sh', expectedSha256: sha('#!/bin/sh\necho deleted\n') });
        await s.ok('move_file', { from: 'm.txt', to: 'sub/moved.txt', expectedSha256: sha('move me\n') });
      });
      const trashBefore = s.ws.listTrash().length;
      const r = rewound(await s.rewind());
      assert.equal(s.file('w.txt'), 'write me\n');
      assert.equal(s.file('e.txt'), 'edit me\n');
      assert.equal(s.file('p.txt'), 'one\ntwo\nthree\n');
      assert.equal(s.file('new/c.txt'), null);
      assert.equal(s.file('d.sh'), '#!/bin/sh\necho deleted\n');
      assert.equal(fs.statSync(s.abs('d.sh')).mode & 0o777, 0o755);
      assert.equal(s.file('m.txt'), 'move me\n');
      assert.equal(fs.statSync(s.abs('m.txt')).mode & 0o777, 0o600);
      assert.equal(s.file('sub/moved.txt'), null);
      const actions = Object.fromEntries(r.files.map((f) => [f.path, f.action]));
      assert.deepEqual(actions, { 'w.txt': 'restored', 'e.txt': 'restored', 'p.txt': 'restored', 'new/c.txt': 'trashed', 'd.sh': 'recreated', 'm.txt': 'moved' });
      // The created file can come back with :CabooseRestore; the moved one went nowhere.
      const trash = s.ws.listTrash();
      assert.equal(trash.length, trashBefore + 1);
      assert.equal(trash[0].originalPath, 'new/c.txt');
      assert.equal(s.list()[0].rewound, true);
      const audit = s.ws.workspace.audit.list().filter((a) => a.tool === 'checkpoint');
      assert.equal(audit.length, 6);
      assert.ok(audit.every((a) => a.ok && a.operation === 'rewind'));
      assert.equal(s.ws.verifyAuditLog().ok, true);
      // The model learns it with the next message, once.
      const note = s.ws.workspace.checkpoints.takeNotes();
      assert.match(note, /rewound the file changes made for their message "change everything"/);
      assert.match(note, /w\.txt restored.*new\/c\.txt removed.*d\.sh recreated.*sub\/moved\.txt moved back to m\.txt/);
      assert.equal(s.ws.workspace.checkpoints.takeNotes(), '');
      await assert.rejects(s.rewind(), /nothing to rewind/);
    } finally {
      s.done();
    }
  });

  test('a file changed after the agent wrote it stops the rewind (nothing changes) until forced', async () => {
    const s = setup();
    try {
      s.put('a.txt', 'orig a\n');
      s.put('b.txt', 'orig b\n');
      await s.turn('edit both', async () => {
        await s.ok('write_file', { path: 'a.txt', content: 'agent a\n', expectedSha256: sha('orig a\n') });
        await s.ok('write_file', { path: 'b.txt', content: 'agent b\n', expectedSha256: sha('orig b\n') });
        await s.ok('create_file', { path: 'c.txt', content: 'agent c\n' });
      });
      s.put('b.txt', 'user b\n');
      // Deleting the file the agent created is no conflict: the rewind would remove it anyway.
      fs.rmSync(s.abs('c.txt'));
      const r = await s.rewind();
      assert.deepEqual(r, { status: 'conflict', id: s.list()[0].id, conflicts: [{ path: 'b.txt', reason: 'changed' }] });
      assert.equal(s.file('a.txt'), 'agent a\n', 'nothing was rewound');
      assert.equal(s.file('b.txt'), 'user b\n');
      assert.equal(s.list()[0].rewound, false);
      assert.equal(s.ws.workspace.audit.list().filter((a) => a.tool === 'checkpoint').length, 0);
      assert.equal(s.ws.workspace.checkpoints.takeNotes(), '');
      rewound(await s.rewind({ force: true }));
      assert.equal(s.file('a.txt'), 'orig a\n');
      assert.equal(s.file('b.txt'), 'orig b\n');
      assert.equal(s.file('c.txt'), null);
    } finally {
      s.done();
    }
  });

  test('rewinding to an older checkpoint undoes every later one; each file gets its earliest pre-image', async () => {
    const s = setup();
    try {
      s.put('a.txt', 'v0\n');
      await s.turn('first', () => s.ok('write_file', { path: 'a.txt', content: 'v1\n', expectedSha256: sha('v0\n') }));
      await s.turn('second', async () => {
        await s.ok('write_file', { path: 'a.txt', content: 'v2\n', expectedSha256: sha('v1\n') });
        await s.ok('create_file', { path: 'b.txt', content: 'b\n' });
      });
      await s.turn('third', () => s.ok('write_file', { path: 'b.txt', content: 'b2\n', expectedSha256: sha('b\n') }));
      const [third, second, first] = s.list();
      assert.deepEqual([third.message, second.message, first.message], ['third', 'second', 'first']);
      // Rewind the newest alone, then go back to the first: the rewound one is not undone twice.
      rewound(await s.rewind({ id: third.id }));
      assert.equal(s.file('b.txt'), 'b\n');
      const preview = await previewCheckpoint(s.ws.workspace, SESSION, first.id);
      assert.deepEqual(preview.undoes.map((u) => u.message), ['second', 'first']);
      assert.match(preview.diff, /-v0\n\+v2/);
      assert.match(preview.diff, /\+\+\+ b\/b\.txt\n@@ -0,0 \+1,1 @@\n\+b\n/);
      assert.deepEqual(preview.changed, []);
      const r = rewound(await s.rewind({ id: first.id }));
      assert.deepEqual(r.checkpoints.map((c) => c.message), ['second', 'first']);
      assert.equal(s.file('a.txt'), 'v0\n');
      assert.equal(s.file('b.txt'), null);
      assert.ok(s.list().every((c) => c.rewound));
      await assert.rejects(s.rewind({ id: second.id }), /already rewound/);
      assert.equal((await previewCheckpoint(s.ws.workspace, SESSION, second.id)).rewound, true);
    } finally {
      s.done();
    }
  });

  test('no rewind while a turn is running', async () => {
    const s = setup();
    try {
      s.put('a.txt', 'v0\n');
      await s.turn('first', () => s.ok('write_file', { path: 'a.txt', content: 'v1\n', expectedSha256: sha('v0\n') }));
      s.ws.workspace.checkpoints.begin({ sessionId: SESSION, text: 'running' });
      await assert.rejects(s.rewind(), /CabooseStop/);
      s.ws.workspace.checkpoints.end();
      assert.equal(s.file('a.txt'), 'v1\n');
    } finally {
      s.done();
    }
  });
});

describe('rewind through buffers', () => {
  test('a clean loaded buffer is updated in place (clean) and an unsaved one in the buffer only, never on disk', async () => {
    const s = setup({ bridge: true });
    try {
      s.put('clean.txt', 'clean before\n');
      s.put('dirty.txt', 'disk\n');
      s.bridge.bufs.set(s.abs('clean.txt'), { text: 'clean before\n', modified: false, tick: 1 });
      s.bridge.bufs.set(s.abs('dirty.txt'), { text: 'typed by user\n', modified: true, tick: 4 });
      await s.turn('edit buffers', async () => {
        await s.ok('edit_file', { path: 'clean.txt', expectedSha256: sha('clean before\n'), edits: [{ oldText: 'before', newText: 'after' }] });
        const d = await s.ok('edit_file', { path: 'dirty.txt', expectedSha256: sha('typed by user\n'), edits: [{ oldText: 'typed', newText: 'edited' }] });
        assert.equal(d.savedToDisk, false);
      });
      assert.equal(s.bridge.bufs.get(s.abs('dirty.txt'))!.text, 'edited by user\n');
      s.bridge.ops = [];
      const r = rewound(await s.rewind());
      assert.deepEqual(s.bridge.bufs.get(s.abs('clean.txt')), { text: 'clean before\n', modified: false, tick: 3 });
      assert.equal(s.file('clean.txt'), 'clean before\n');
      assert.deepEqual(s.bridge.bufs.get(s.abs('dirty.txt')), { text: 'typed by user\n', modified: true, tick: 6 });
      assert.equal(s.file('dirty.txt'), 'disk\n', 'the unsaved buffer was never written');
      const sets = s.bridge.ops.flat().filter((o) => o.type === 'set');
      assert.deepEqual(sets.map((o) => o.type === 'set' && [path.basename(o.abs), o.clean]), [['dirty.txt', false], ['clean.txt', true]]);
      assert.deepEqual(r.files.map((f) => [f.path, f.savedToDisk]), [['clean.txt', true], ['dirty.txt', false]]);
    } finally {
      s.done();
    }
  });

  test('a user edit in the buffer after the agent wrote it counts as a later change; a moved file takes its buffer back', async () => {
    const s = setup({ bridge: true });
    try {
      s.put('a.txt', 'a\n');
      s.put('m.txt', 'm\n');
      s.bridge.bufs.set(s.abs('a.txt'), { text: 'a\n', modified: false, tick: 1 });
      s.bridge.bufs.set(s.abs('m.txt'), { text: 'm\n', modified: false, tick: 1 });
      await s.turn('edit and move', async () => {
        await s.ok('write_file', { path: 'a.txt', content: 'agent\n', expectedSha256: sha('a\n') });
        await s.ok('move_file', { from: 'm.txt', to: 'n.txt', expectedSha256: sha('m\n') });
      });
      assert.ok(s.bridge.bufs.has(s.abs('n.txt')));
      s.bridge.type(s.abs('a.txt'), 'agent and user\n');
      assert.deepEqual(await s.rewind(), { status: 'conflict', id: s.list()[0].id, conflicts: [{ path: 'a.txt', reason: 'changed' }] });
      assert.equal(s.bridge.bufs.get(s.abs('a.txt'))!.text, 'agent and user\n');
      s.bridge.ops = [];
      rewound(await s.rewind({ force: true }));
      assert.deepEqual(s.bridge.bufs.get(s.abs('a.txt')), { text: 'a\n', modified: true, tick: 4 }, 'forced: the buffer gets the old text, still unsaved');
      assert.equal(s.file('a.txt'), 'agent\n', 'the disk keeps what was saved');
      assert.ok(s.bridge.bufs.has(s.abs('m.txt')) && !s.bridge.bufs.has(s.abs('n.txt')), 'the buffer moved back');
      assert.ok(s.bridge.ops.flat().some((o) => o.type === 'rename'));
      assert.equal(s.file('m.txt'), 'm\n');
    } finally {
      s.done();
    }
  });
});

describe('checkpoints of shell commands', () => {
  test('files a bash call created, changed or deleted during a turn are rewound with it', async () => {
    const s = setup();
    try {
      s.ws.registry.add(createBashTool());
      s.put('keep.txt', 'kept\n');
      s.put('edit.txt', 'old text\n');
      s.put('gone.txt', 'to be deleted\n', 0o600);
      await s.turn('run the script', () => s.ok('bash', { command: 'printf "new text\\n" > edit.txt && rm gone.txt && printf "made\\n" > made.txt' }));
      assert.equal(s.file('edit.txt'), 'new text\n');
      const [cp] = s.list();
      assert.deepEqual(cp.files.map((f) => f.path).sort(), ['edit.txt', 'gone.txt', 'made.txt']);
      const r = rewound(await s.rewind());
      assert.equal(r.files.length, 3);
      assert.equal(s.file('edit.txt'), 'old text\n');
      assert.equal(s.file('gone.txt'), 'to be deleted\n');
      assert.equal(fs.statSync(s.abs('gone.txt')).mode & 0o777, 0o600);
      assert.equal(s.file('made.txt'), null, 'the created file went to the trash');
      assert.equal(s.file('keep.txt'), 'kept\n');
      // Outside a turn, a command is audited but not checkpointed.
      await s.ok('bash', { command: 'printf "x\\n" > keep.txt' });
      assert.equal(s.list().length, 1);
    } finally {
      s.done();
    }
  });
});
