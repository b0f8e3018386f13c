/** Issue 18, item 11: files that usually hold secrets are read or searched only with the user's approval, in every mode. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI } from '../support/fake-openai';
import { Agent, type ApprovalDecision, type ApprovalRequest, type PermissionMode } from '../../src/agent/loop';
import { openWorkspace } from '../../src/index';

const KEY = 'SECRET-TOKEN-abc123';
const PEM = 'PEM-BODY-xyz789';

async function setup(t: import('node:test').TestContext, mode: PermissionMode, answer: (r: ApprovalRequest) => ApprovalDecision, secretGlobs?: string[]) {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-secrets-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(path.join(root, 'config'), { recursive: true });
  fs.writeFileSync(path.join(root, '.env'), `API_TOKEN=${KEY}\n`);
  fs.writeFileSync(path.join(root, 'config', 'server.pem'), `-----BEGIN-----\n${PEM}\n`);
  fs.writeFileSync(path.join(root, 'vault.txt'), 'vault TOKEN\n');
  fs.writeFileSync(path.join(root, 'app.js'), `// uses API_TOKEN\n`);
  fs.symlinkSync('.env', path.join(root, 'env-link'));
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 's', ...(secretGlobs ? { secretGlobs } : {}) });
  const fake = await startFakeOpenAI();
  const approvals: ApprovalRequest[] = [];
  const notices: string[] = [];
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'sk-test', model: 'fake-model', retryBaseDelayMs: 1 },
    registry: ws.registry,
    makeContext: (signal) => ({ signal, workspace: ws.workspace, sessionId: 's' }),
    mode,
    requestApproval: async (req) => {
      approvals.push(req);
      return answer(req);
    },
    events: { notice: (n) => notices.push(n) },
  });
  t.after(async () => {
    agent.stop();
    await agent.idle();
    await fake.close();
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  const sent = () => JSON.stringify(fake.chatRequests.map((r) => r.body?.messages));
  return { agent, fake, approvals, notices, sent, ws };
}

for (const mode of ['plan', 'create', 'auto-edit', 'chug'] as const) {
  test(`${mode} mode: reading or grepping a secret file asks first and says why; refused, nothing reaches the model`, async (t) => {
    const h = await setup(t, mode, () => ({ decision: 'reject' }));
    h.fake.script(
      {
        toolCalls: [
          { id: 'r1', name: 'read_file', arguments: { path: '.env' } },
          { id: 'r2', name: 'read_file', arguments: { path: 'env-link' } },
          { id: 'g1', name: 'grep', arguments: { pattern: 'TOKEN', path: '.env' } },
          { id: 'g2', name: 'grep', arguments: { pattern: 'TOKEN|BEGIN' } },
          { id: 's1', name: 'search_files', arguments: { mode: 'text', query: 'TOKEN|BEGIN' } },
          { id: 'r3', name: 'read_file', arguments: { path: 'config/server.pem' } },
        ],
      },
      { text: 'ok' },
    );
    h.agent.send('show me the token');
    await h.agent.idle();
    assert.deepEqual(h.approvals.map((a) => `${a.tool} ${JSON.stringify(a.args)}`), [
      'read_file {"path":".env"}',
      'read_file {"path":"env-link"}',
      'grep {"pattern":"TOKEN","path":".env"}',
      'read_file {"path":"config/server.pem"}',
    ]);
    for (const a of h.approvals) assert.match(a.reason ?? '', /usually holds secrets \(secret_globs\)/);
    assert.ok(h.notices.some((n) => n.includes('read_file would read .env')), h.notices.join('\n'));
    const sent = h.sent();
    assert.ok(!sent.includes(KEY) && !sent.includes(PEM), 'no secret reached the model');
    assert.match(sent, /vault\.txt/, 'the folder search still ran');
    assert.match(sent, /usually hold secrets \(\.env, config\/server\.pem\) were left out/);
  });
}

test('approved once, the file is read; "always" allows that file (not the tool) for the session', async (t) => {
  const h = await setup(t, 'chug', (r) => ({ decision: (r.args as { path: string }).path === '.env' ? 'always' : 'once' }));
  h.fake.script(
    { toolCalls: [{ id: 'r1', name: 'read_file', arguments: { path: '.env' } }] },
    { toolCalls: [{ id: 'r2', name: 'read_file', arguments: { path: '.env' } }, { id: 'r3', name: 'read_file', arguments: { path: 'config/server.pem' } }] },
    { text: 'done' },
  );
  h.agent.send('read it');
  await h.agent.idle();
  assert.deepEqual(h.approvals.map((a) => (a.args as { path: string }).path), ['.env', 'config/server.pem']);
  assert.ok(h.sent().includes(KEY));
});

test('secret_globs is configurable', async (t) => {
  const h = await setup(t, 'chug', () => ({ decision: 'reject' }), ['vault.*']);
  h.fake.script({ toolCalls: [{ id: 'r1', name: 'read_file', arguments: { path: 'vault.txt' } }, { id: 'r2', name: 'read_file', arguments: { path: 'app.js' } }] }, { text: 'ok' });
  h.agent.send('read');
  await h.agent.idle();
  assert.deepEqual(h.approvals.map((a) => (a.args as { path: string }).path), ['vault.txt']);
});

test('a secret file cannot be read under another name or through an error hint without asking: move_file, a patch moving it, a failing edit', async (t) => {
  const h = await setup(t, 'chug', () => ({ decision: 'reject' }));
  const envSha = (await import('node:crypto')).createHash('sha256').update(`API_TOKEN=${KEY}\n`).digest('hex');
  h.fake.script(
    {
      toolCalls: [
        { id: 'm1', name: 'move_file', arguments: { from: '.env', to: 'innocent.txt', expectedSha256: envSha } },
        { id: 'p1', name: 'apply_patch', arguments: { patch: '*** Begin Patch\n*** Update File: .env\n*** Move to: plain.txt\n@@\n-x\n+y\n*** End Patch\n' } },
        // Fails in its preview (old_text_not_found with the closest lines): asked first all the same.
        { id: 'e1', name: 'edit_file', arguments: { path: '.env', expectedSha256: envSha, edits: [{ oldText: 'API_TOKEN=nope', newText: 'x' }] } },
      ],
    },
    { toolCalls: [{ id: 'r1', name: 'read_file', arguments: { path: 'innocent.txt' } }] },
    { text: 'ok' },
  );
  h.agent.send('move it');
  await h.agent.idle();
  assert.deepEqual(h.approvals.map((a) => a.tool), ['move_file', 'apply_patch', 'edit_file']);
  assert.match(h.approvals[0].reason ?? '', /move_file would give another name to \.env/);
  assert.ok(!h.sent().includes(KEY));
});

test('restoring a trashed secret file under another name asks first', async (t) => {
  const h = await setup(t, 'chug', () => ({ decision: 'reject' }));
  const envSha = (await import('node:crypto')).createHash('sha256').update(`API_TOKEN=${KEY}\n`).digest('hex');
  const del = await h.ws.call('delete_file', { path: '.env', expectedSha256: envSha });
  assert.ok(del.ok, JSON.stringify(del));
  const trashId = (del.data as { trashId: string }).trashId;
  h.fake.script(
    { toolCalls: [{ id: 'x1', name: 'restore_file', arguments: { trashId, targetPath: 'plain.txt' } }, { id: 'x2', name: 'restore_file', arguments: { trashId, targetPath: '.env.restored' } }] },
    { text: 'ok' },
  );
  h.agent.send('restore');
  await h.agent.idle();
  assert.deepEqual(h.approvals.map((a) => `${a.tool} ${(a.args as { targetPath: string }).targetPath}`), ['restore_file plain.txt']);
});
