/**
 * A cancelled write changes nothing: each write tool checks its call's abort signal up to its commit
 * point (after the write lock, after Neovim round trips, right before the rename / buffer update).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace, type ToolResult } from '../../src/index';
import { Agent } from '../../src/agent/loop';
import { FakeBridge } from '../support/fake-bridge';
import { startFakeOpenAI } from '../support/fake-openai';

const sha = (b: string | Buffer): string => createHash('sha256').update(b).digest('hex');

interface Env {
  root: string;
  dataDir: string;
  ws: OpenedWorkspace;
  bridge: FakeBridge | null;
  done(): void;
}

function open(bridged: boolean): Env {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-cancel-')));
  const root = path.join(tmp, 'ws');
  const dataDir = path.join(tmp, 'data');
  fs.mkdirSync(root);
  const bridge = bridged ? new FakeBridge() : null;
  const ws = openWorkspace({ root, dataDir, sessionId: 'cancel', bridge });
  return { root, dataDir, ws, bridge, done: () => (ws.close(), fs.rmSync(tmp, { recursive: true, force: true })) };
}

/** Each write tool with arguments that succeed when the call is not cancelled. */
const CASES: { tool: string; args: (e: Env) => Promise<unknown> }[] = [
  { tool: 'write_file', args: async () => ({ path: 'a.txt', content: 'new\n', expectedSha256: sha('alpha\n') }) },
  { tool: 'edit_file', args: async () => ({ path: 'a.txt', expectedSha256: sha('alpha\n'), edits: [{ oldText: 'alpha', newText: 'ALPHA' }] }) },
  { tool: 'create_file', args: async () => ({ path: 'sub/n.txt', content: 'n\n' }) },
  { tool: 'delete_file', args: async () => ({ path: 'a.txt', expectedSha256: sha('alpha\n') }) },
  { tool: 'move_file', args: async () => ({ from: 'a.txt', to: 'sub/b.txt', expectedSha256: sha('alpha\n') }) },
  {
    tool: 'restore_file',
    args: async (e) => {
      fs.writeFileSync(path.join(e.root, 'gone.txt'), 'gone\n');
      const r = await e.ws.call('delete_file', { path: 'gone.txt', expectedSha256: sha('gone\n') });
      assert.ok(r.ok, JSON.stringify(r));
      return { trashId: (r.data as { trashId: string }).trashId };
    },
  },
  {
    tool: 'apply_patch',
    args: async () => ({
      patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+patched\n*** Add File: p.txt\n+p\n*** Delete File: c.txt\n*** End Patch\n',
      expectedSha256ByPath: { 'a.txt': sha('alpha\n') },
    }),
  },
];

/** Files (bytes by path), the trash folder, the trash table, Neovim's buffers and the audit's ok rows. */
function state(e: Env) {
  const files: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const d of fs.readdirSync(path.join(e.root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(r);
      else files[r] = fs.readFileSync(path.join(e.root, r)).toString('base64');
    }
  };
  walk('');
  const trashDir = path.join(e.dataDir, 'trash');
  return {
    files,
    trashFiles: fs.existsSync(trashDir) ? fs.readdirSync(trashDir).sort() : [],
    trash: e.ws.listTrash().map((t) => t.id),
    buffers: e.bridge ? JSON.stringify([...e.bridge.bufs]) : null,
    bufferUpdates: e.bridge?.ops.length ?? 0,
    okRows: e.ws.workspace.audit.list().filter((r) => r.ok).length,
  };
}

async function prepare(bridged: boolean, c: (typeof CASES)[number]) {
  const e = open(bridged);
  for (const [f, text] of [['a.txt', 'alpha\n'], ['c.txt', 'c\n']]) {
    fs.writeFileSync(path.join(e.root, f), text);
    // Clean loaded buffers: a write that goes through also updates them.
    e.bridge?.bufs.set(path.join(e.root, f), { text, modified: false, tick: 1 });
  }
  const args = await c.args(e);
  return { e, args, before: state(e) };
}

function assertCancelled(r: ToolResult, tool: string): void {
  assert.equal(r.ok, false, `${tool} must be cancelled, got ${JSON.stringify(r)}`);
  if (!r.ok) assert.equal(r.error.kind, 'cancelled', `${tool}: ${JSON.stringify(r.error)}`);
}

function assertUnchanged(e: Env, before: ReturnType<typeof state>, tool: string): void {
  assert.deepEqual(state(e), before, `${tool} changed something`);
  const last = e.ws.workspace.audit.list().at(-1);
  assert.ok(last && !last.ok && last.errorKind === 'cancelled' && last.tool === tool, `${tool}: the attempt is audited as cancelled`);
}

for (const c of CASES) {
  describe(`${c.tool}: a cancelled call changes nothing`, () => {
    test('control: the same call with a live signal changes the files', async () => {
      const { e, args, before } = await prepare(false, c);
      try {
        const r = await e.ws.call(c.tool, args);
        assert.ok(r.ok, JSON.stringify(r));
        assert.notDeepEqual(state(e).files, before.files);
      } finally {
        e.done();
      }
    });

    test('an already aborted signal: cancelled, nothing written, no trash, no ok audit row', async () => {
      const { e, args, before } = await prepare(false, c);
      try {
        assertCancelled(await e.ws.call(c.tool, args, { signal: AbortSignal.abort() }), c.tool);
        assertUnchanged(e, before, c.tool);
      } finally {
        e.done();
      }
    });

    test('aborted while waiting for the write lock held by another call', async () => {
      const { e, args, before } = await prepare(false, c);
      try {
        let release!: () => void;
        const held = e.ws.workspace.withWriteLock(() => new Promise<void>((r) => (release = r)));
        const ac = new AbortController();
        const pending = e.ws.call(c.tool, args, { signal: ac.signal });
        await new Promise((r) => setTimeout(r, 20));
        ac.abort();
        release();
        await held;
        assertCancelled(await pending, c.tool);
        assertUnchanged(e, before, c.tool);
      } finally {
        e.done();
      }
    });

    for (const during of ['modified', 'never'] as const) {
      const what = during === 'modified' ? 'reading the buffers (the plan)' : 'the commit asks Neovim about the buffers';
      test(`aborted during a Neovim round trip while ${what}: disk and buffers unchanged`, async () => {
        const { e, args, before } = await prepare(true, c);
        try {
          const ac = new AbortController();
          e.bridge!.onStatus = (withBytes) => {
            if (withBytes === during) ac.abort();
          };
          assertCancelled(await e.ws.call(c.tool, args, { signal: ac.signal }), c.tool);
          assertUnchanged(e, before, c.tool);
        } finally {
          e.done();
        }
      });
    }
  });
}

// A change that lands only in an unsaved buffer has no disk part: its commit point is still checked.
for (const tool of ['write_file', 'edit_file', 'apply_patch'] as const) {
  test(`${tool} into an unsaved buffer, aborted while the commit asks Neovim: the buffer is unchanged`, async () => {
    const e = open(true);
    try {
      fs.writeFileSync(path.join(e.root, 'a.txt'), 'disk\n');
      e.bridge!.bufs.set(path.join(e.root, 'a.txt'), { text: 'alpha\n', modified: true, tick: 7 });
      const args = {
        write_file: { path: 'a.txt', content: 'new\n', expectedSha256: sha('alpha\n') },
        edit_file: { path: 'a.txt', expectedSha256: sha('alpha\n'), edits: [{ oldText: 'alpha', newText: 'ALPHA' }] },
        apply_patch: { patch: '*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+patched\n*** End Patch\n', expectedSha256ByPath: { 'a.txt': sha('alpha\n') } },
      }[tool];
      // Control: with a live signal the buffer (only) changes.
      const control = open(true);
      try {
        fs.writeFileSync(path.join(control.root, 'a.txt'), 'disk\n');
        control.bridge!.bufs.set(path.join(control.root, 'a.txt'), { text: 'alpha\n', modified: true, tick: 7 });
        const ok = await control.ws.call(tool, args);
        assert.ok(ok.ok, JSON.stringify(ok));
        assert.notEqual(control.bridge!.bufs.get(path.join(control.root, 'a.txt'))!.text, 'alpha\n');
        assert.equal(fs.readFileSync(path.join(control.root, 'a.txt'), 'utf8'), 'disk\n');
      } finally {
        control.done();
      }
      const before = state(e);
      const ac = new AbortController();
      e.bridge!.onStatus = (withBytes) => {
        if (withBytes === 'never') ac.abort();
      };
      assertCancelled(await e.ws.call(tool, args, { signal: ac.signal }), tool);
      assertUnchanged(e, before, tool);
      assert.equal(e.bridge!.ops.length, 0, 'no buffer update was sent');
    } finally {
      e.done();
    }
  });
}

test('the agent stopped while write_file waits for the write lock: the file is never written', async (t) => {
  const e = open(false);
  const fake = await startFakeOpenAI();
  t.after(async () => {
    await fake.close();
    e.done();
  });
  fs.writeFileSync(path.join(e.root, 'a.txt'), 'alpha\n');
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'sk-test', model: 'fake-model', retryBaseDelayMs: 1 },
    registry: e.ws.registry,
    makeContext: (signal) => ({ signal, workspace: e.ws.workspace, sessionId: 'cancel' }),
    mode: 'chug',
    requestApproval: async () => ({ decision: 'once' }),
  });
  fake.script({ toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'a.txt', content: 'agent\n', expectedSha256: sha('alpha\n') } }] });
  let release!: () => void;
  let entered!: () => void;
  const inLock = new Promise<void>((r) => (entered = r));
  const held = e.ws.workspace.withWriteLock(() => {
    entered();
    return new Promise<void>((r) => (release = r));
  });
  await inLock;
  agent.send('write it');
  const deadline = Date.now() + 10_000;
  while (agent.state !== 'executing_tools' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.equal(agent.state, 'executing_tools');
  agent.stop();
  await agent.idle();
  release();
  await held;
  // FIFO lock: once this runs, the stopped call's turn has passed.
  await e.ws.workspace.withWriteLock(async () => undefined);
  assert.equal(fs.readFileSync(path.join(e.root, 'a.txt'), 'utf8'), 'alpha\n');
  assert.deepEqual(
    e.ws.workspace.audit.list().map((r) => [r.tool, r.ok, r.errorKind]),
    [['write_file', false, 'cancelled']],
  );
});
