/** The report after a write, with a scripted DiagnosticsSource (no Neovim): waits, timeouts, failures, caps. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostEditDiagnostics, MAX_REPORTED, type PostEditOptions } from '../../src/workspace/post-edit-diagnostics';
import type { BufferDiagnostics, Diagnostic, DiagnosticsSource, WatchPoll, WatchedBuffer } from '../../src/workspace/diagnostics';
import { openWorkspace } from '../../src/index';
import type { FileChange } from '../../src/workspace/commit-disk';

const ROOT = '/ws';
const rel = (abs: string) => path.relative(ROOT, abs);
const err = (line: number, message: string): Diagnostic => ({ severity: 'error', line, col: 1, endLine: line, endCol: 2, message, source: 'ts' });
const buf = (abs: string, diagnostics: Diagnostic[], clients = ['tsls']): BufferDiagnostics => ({
  abs,
  modified: false,
  clients,
  counts: { error: diagnostics.length, warning: 0, info: 0, hint: 0 },
  matched: diagnostics.length,
  diagnostics,
});
const watched = (b: BufferDiagnostics, extra: Partial<WatchedBuffer> = {}): WatchedBuffer => ({ ...b, changed: true, answered: true, hunks: [], ...extra });
const write = (abs: string): FileChange & { type: 'write' } => ({ type: 'write', abs, bytes: Buffer.from('x') });

/** A source whose watch returns `before` and whose polls answer from `polls` (the last one repeats). */
class FakeSource implements DiagnosticsSource {
  calls: string[] = [];
  constructor(
    private readonly before: BufferDiagnostics[] | null,
    private readonly polls: (WatchPoll | Error)[],
  ) {}
  async list(): Promise<BufferDiagnostics[]> {
    return [];
  }
  async watch(paths: string[]) {
    this.calls.push(`watch ${paths.map(rel).join(',')}`);
    return this.before ? { token: 7, before: this.before } : null;
  }
  async poll(token: number, settleMs: number, final: boolean): Promise<WatchPoll> {
    this.calls.push(`poll ${token} ${settleMs}${final ? ' final' : ''}`);
    const p = this.polls.length > 1 ? this.polls.shift()! : this.polls[0];
    if (p instanceof Error) throw p;
    if (final && !p.done) throw new Error('a final poll must be done');
    return p;
  }
  async cancel(token: number) {
    this.calls.push(`cancel ${token}`);
  }
}

const opts = (o: Partial<PostEditOptions> = {}): PostEditOptions => ({ waitMs: 500, settleMs: 100, pollMs: 5, ...o });

test('nothing to watch: no report, and no poll', async () => {
  const none = new FakeSource(null, [{ done: true, buffers: [] }]);
  const pe = new PostEditDiagnostics(none, rel, opts());
  assert.equal(await pe.arm([write('/ws/a.ts')]), null);
  assert.equal(await pe.arm([{ type: 'delete', abs: '/ws/a.ts' }]), null, 'deletes are not watched');
  assert.equal(await pe.arm([{ ...write('/ws/b.ts'), movedFrom: '/ws/a.ts' }]), null, 'nor moves');
  assert.deepEqual(none.calls, ['watch a.ts']);
});

test('waits until the source settles, then reports what the write introduced and resolved', async () => {
  const a = '/ws/src/a.ts';
  const src = new FakeSource(
    [buf(a, [err(3, 'old'), err(5, 'stays')])],
    [{ done: false }, { done: false }, { done: true, buffers: [watched(buf(a, [err(1, 'new'), err(6, 'stays')]), { hunks: [{ start: 0, count: 0, newStart: 1, newCount: 1 }] })] }],
  );
  const pending = await new PostEditDiagnostics(src, rel, opts()).arm([write(a), write(a)]);
  assert.ok(pending);
  const r = await pending.settle();
  assert.ok(r);
  assert.deepEqual(r.introduced, [{ path: 'src/a.ts', ...err(1, 'new') }]);
  assert.deepEqual(r.resolved, [{ path: 'src/a.ts', ...err(3, 'old') }]);
  assert.equal(r.unchangedCount, 1);
  assert.equal(r.timedOut, undefined);
  assert.equal(r.notice, undefined);
  assert.ok(r.waitedMs >= 0 && r.waitedMs < 500);
  assert.deepEqual(src.calls, ['watch src/a.ts', 'poll 7 100', 'poll 7 100', 'poll 7 100']);
});

test('a server that does not answer within waitMs: a final poll, timedOut and a notice naming it', async () => {
  const a = '/ws/a.ts';
  const src = new FakeSource([buf(a, [])], [{ done: false }]);
  let final = false;
  const orig = src.poll.bind(src);
  src.poll = async (token, settleMs, isFinal) => {
    if (!isFinal) return orig(token, settleMs, isFinal);
    final = true;
    return { done: true, buffers: [watched(buf(a, []), { answered: false })] };
  };
  const t0 = performance.now();
  const r = await (await new PostEditDiagnostics(src, rel, opts({ waitMs: 60 })).arm([write(a)]))!.settle();
  assert.ok(final);
  assert.ok(performance.now() - t0 >= 55);
  assert.ok(r);
  assert.equal(r.timedOut, true);
  assert.match(r.notice ?? '', /No report from tsls on a\.ts within 60 ms/);
  assert.deepEqual([r.introduced, r.resolved, r.unchangedCount], [[], [], 0]);
});

test('buffers the write did not change give no report', async () => {
  const a = '/ws/a.ts';
  const src = new FakeSource([buf(a, [err(1, 'x')])], [{ done: true, buffers: [watched(buf(a, []), { changed: false })] }]);
  assert.equal(await (await new PostEditDiagnostics(src, rel, opts()).arm([write(a)]))!.settle(), null);
});

test('a failing source never fails the write: no report, the error goes to onError, the watch is cancelled', async () => {
  const errors: unknown[] = [];
  const src = new FakeSource([buf('/ws/a.ts', [])], [new Error('Lua exploded')]);
  const pe = new PostEditDiagnostics(src, rel, opts({ onError: (e) => errors.push(e) }));
  assert.equal(await (await pe.arm([write('/ws/a.ts')]))!.settle(), null);
  assert.match(String(errors[0]), /Lua exploded/);
  assert.ok(src.calls.includes('cancel 7'));
  const broken: DiagnosticsSource = { ...src, list: src.list, watch: async () => Promise.reject(new Error('no nvim')), poll: src.poll, cancel: src.cancel };
  assert.equal(await new PostEditDiagnostics(broken, rel, opts({ onError: (e) => errors.push(e) })).arm([write('/ws/a.ts')]), null);
  assert.match(String(errors[1]), /no nvim/);
});

test('an abort stops the wait at once: no report, the watch is cancelled', async () => {
  const src = new FakeSource([buf('/ws/a.ts', [])], [{ done: false }]);
  const ac = new AbortController();
  const pending = await new PostEditDiagnostics(src, rel, opts({ waitMs: 10_000, pollMs: 1000 })).arm([write('/ws/a.ts')]);
  setTimeout(() => ac.abort(), 20);
  const t0 = performance.now();
  assert.equal(await pending!.settle(ac.signal), null);
  assert.ok(performance.now() - t0 < 1000);
  assert.deepEqual(src.calls.slice(-1), ['cancel 7']);
});

test('long lists are capped, with the number left out', async () => {
  const a = '/ws/a.ts';
  const many = Array.from({ length: MAX_REPORTED + 5 }, (_, i) => err(i + 1, `e${i}`));
  const src = new FakeSource([buf(a, [])], [{ done: true, buffers: [watched(buf(a, many))] }]);
  const r = (await (await new PostEditDiagnostics(src, rel, opts()).arm([write(a)]))!.settle())!;
  assert.equal(r.introduced.length, MAX_REPORTED);
  assert.equal(r.omitted, 5);
  assert.match(r.notice ?? '', /5 more introduced or resolved/);
});

test('write tools: agent calls (reportDiagnostics) carry the report; user calls do not watch; a failed write cancels', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-postedit-'));
  const root = path.join(dir, 'ws');
  fs.mkdirSync(root);
  const file = path.join(fs.realpathSync(root), 'a.ts');
  fs.writeFileSync(file, 'let a = 1;\n');
  const calls: string[] = [];
  const source: DiagnosticsSource = {
    list: async () => [],
    watch: async (paths) => (calls.push(`watch ${paths.map((p) => path.basename(p)).join(',')}`), { token: 1, before: [buf(file, [])] }),
    poll: async () => (calls.push('poll'), { done: true, buffers: [watched(buf(file, [err(1, 'bad')]))] }),
    cancel: async () => void calls.push('cancel'),
  };
  let failNext = false;
  const ws = openWorkspace({
    root,
    dataDir: path.join(dir, 'data'),
    diagnostics: source,
    postEditDiagnostics: opts(),
    faultHook: () => {
      if (failNext) throw new Error('disk full');
    },
  });
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  const ctx = (reportDiagnostics: boolean) => ({ signal: new AbortController().signal, workspace: ws.workspace, sessionId: 's', reportDiagnostics });
  try {
    const agent = await ws.registry.call('edit_file', { path: 'a.ts', expectedSha256: sha('let a = 1;\n'), edits: [{ oldText: '1', newText: '2' }] }, ctx(true));
    assert.ok(agent.ok, JSON.stringify(agent));
    const report = (agent.data as { diagnostics?: { introduced: { message: string }[] } }).diagnostics;
    assert.deepEqual(report?.introduced.map((x) => x.message), ['bad']);
    assert.deepEqual(calls, ['watch a.ts', 'poll']);
    calls.length = 0;
    const user = await ws.registry.call('edit_file', { path: 'a.ts', expectedSha256: sha('let a = 2;\n'), edits: [{ oldText: '2', newText: '3' }] }, ctx(false));
    assert.ok(user.ok);
    assert.equal('diagnostics' in (user.data as object), false);
    assert.deepEqual(calls, []);
    failNext = true;
    const failed = await ws.registry.call('edit_file', { path: 'a.ts', expectedSha256: sha('let a = 3;\n'), edits: [{ oldText: '3', newText: '4' }] }, ctx(true));
    assert.equal(failed.ok, false);
    assert.deepEqual(calls, ['watch a.ts', 'cancel']);
  } finally {
    ws.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an edit that breaks another loaded buffer reports its new diagnostics with its path (issue 17, defect 15)', async () => {
  const a = '/ws/a.ts';
  const b = '/ws/b.ts';
  const c = '/ws/c.ts';
  let rootAsked: string | undefined;
  const src: DiagnosticsSource = {
    list: async () => [],
    async watch(_paths, _limit, root) {
      rootAsked = root;
      return { token: 1, before: [buf(a, [])], others: [buf(b, []), buf(c, [err(2, 'fixed by the edit')])] };
    },
    poll: async () => ({
      done: true,
      buffers: [watched(buf(a, []))],
      others: [buf(b, [err(4, "Type 'string' is not assignable to type 'number'.")]), buf(c, [])],
    }),
    cancel: async () => undefined,
  };
  const pending = await new PostEditDiagnostics(src, rel, opts(), ROOT).arm([write(a)]);
  assert.equal(rootAsked, ROOT, 'the watch covers the workspace');
  const r = await pending!.settle();
  assert.ok(r);
  assert.deepEqual(r.introduced, [{ path: 'b.ts', ...err(4, "Type 'string' is not assignable to type 'number'.") }]);
  assert.deepEqual(r.resolved, [{ path: 'c.ts', ...err(2, 'fixed by the edit') }]);
});

test('other buffers whose diagnostics did not change add nothing', async () => {
  const a = '/ws/a.ts';
  const same = [err(1, 'stays')];
  const src: DiagnosticsSource = {
    list: async () => [],
    watch: async () => ({ token: 1, before: [buf(a, [])], others: [buf('/ws/b.ts', same)] }),
    poll: async () => ({ done: true, buffers: [watched(buf(a, [err(1, 'new in a')]))], others: [buf('/ws/b.ts', same)] }),
    cancel: async () => undefined,
  };
  const r = await (await new PostEditDiagnostics(src, rel, opts(), ROOT).arm([write(a)]))!.settle();
  assert.deepEqual(r?.introduced.map((d) => d.path), ['a.ts']);
  assert.equal(r?.unchangedCount, 0);
});
