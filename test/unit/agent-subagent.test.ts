import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { startFakeOpenAI, type FakeOpenAI, type FakeRequest } from '../support/fake-openai';
import { Agent, type ApprovalDecision, type ApprovalRequest, type PermissionMode } from '../../src/agent/loop';
import { createAgentTool, createExploreTool, type SubagentProgress, type SubagentTranscript } from '../../src/agent/subagent';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolDefinition, ToolResult } from '../../src/tools/tool';
import type { Workspace } from '../../src/workspace/workspace';

const workspace = { root: '/tmp/ws', dataDir: '/tmp/data', sessionId: 's' } as Workspace;

/* ------------------------------------------------------------------------------------------------
 * Harness: a parent Agent with read/edit/hidden tools, explore and agent, wired like the runtime
 * ---------------------------------------------------------------------------------------------- */

interface Harness {
  fake: FakeOpenAI;
  agent: Agent;
  executed: string[];
  approvals: ApprovalRequest[];
  cancelled: string[];
  /** Finished children's transcripts. */
  transcripts: SubagentTranscript[];
  /** How many messages each 'running' report carried, in order. */
  running: number[];
  progress: SubagentProgress[];
}

interface SetupOptions {
  mode?: PermissionMode;
  /** Default: approve once. */
  approve?: (req: ApprovalRequest) => Promise<ApprovalDecision>;
}

async function setup(t: { after(fn: () => unknown): void }, o: SetupOptions = {}): Promise<Harness> {
  const fake = await startFakeOpenAI({ defaultReply: { status: 500 } });
  t.after(() => fake.close());
  const provider = { baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 };
  const h = { fake, executed: [] as string[], approvals: [] as ApprovalRequest[], cancelled: [] as string[], transcripts: [] as SubagentTranscript[], running: [] as number[], progress: [] as SubagentProgress[] };
  const registry = new ToolRegistry([
    {
      name: 'read_thing',
      description: 'read',
      policy: 'read',
      parameters: z.object({ path: z.string() }),
      execute: async (a: { path: string }) => {
        h.executed.push(`read:${a.path}`);
        return { content: `body of ${a.path}` };
      },
    } as ToolDefinition,
    {
      name: 'edit_thing',
      description: 'edit',
      policy: 'edit',
      parameters: z.object({ path: z.string() }),
      execute: async (a: { path: string }) => {
        h.executed.push(`edit:${a.path}`);
        return { written: a.path };
      },
    } as ToolDefinition,
    { name: 'hidden_thing', description: 'hidden', policy: 'read', parameters: z.object({}), execute: async () => 'hidden' } as ToolDefinition,
    // The session's task list: the main agent's alone.
    { name: 'todo_write', description: 'tasks', policy: 'read', parameters: z.object({}), execute: async () => 'tasks' } as ToolDefinition,
  ]);
  const grants = new Set<string>();
  const approve = o.approve ?? (async () => ({ decision: 'once' as const }));
  const common = {
    provider,
    registry,
    offered: (d: ToolDefinition) => d.name !== 'hidden_thing',
    onTranscript: (x: SubagentTranscript) => void (x.status === 'running' ? h.running.push(x.messages.length) : h.transcripts.push(x)),
    onProgress: (p: SubagentProgress) => void h.progress.push(p),
  };
  registry.add(createExploreTool(common));
  const requestApproval = (req: ApprovalRequest) => {
    h.approvals.push(req);
    return approve(req);
  };
  registry.add(createAgentTool({ ...common, grants, mode: () => agent.mode, requestApproval, approvalCancelled: (r) => void h.cancelled.push(r.id) }));
  const agent: Agent = new Agent({
    provider,
    registry,
    mode: o.mode ?? 'create',
    grants,
    toolFilter: common.offered,
    makeContext: (signal) => ({ signal, workspace, sessionId: 's' }),
    requestApproval,
  });
  return { ...h, agent };
}

/** Waits until `cond()` holds; fails the test after `ms` instead of hanging. */
async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const toolNames = (r: FakeRequest | undefined) => r?.body?.tools?.map((x) => x.function.name);
const firstUser = (r: FakeRequest) => String(r.body?.messages?.find((m) => m.role === 'user')?.content);
/** The chat requests of the conversation whose first user message is `task`. */
const requestsOf = (fake: FakeOpenAI, task: string) => fake.chatRequests.filter((r) => firstUser(r) === task);
/** The tool results the parent's last request carried, in order. */
const parentResults = (fake: FakeOpenAI, task = 'go') =>
  (requestsOf(fake, task).at(-1)?.body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => JSON.parse(String(m.content)) as ToolResult<Record<string, unknown>>);

/* ------------------------------------------------------------------------------------------------
 * explore
 * ---------------------------------------------------------------------------------------------- */

test('explore runs a read-only child agent and returns its final report to the parent', async (t) => {
  const h = await setup(t);
  h.fake.script(
    { toolCalls: [{ id: 'x1', name: 'explore', arguments: { task: 'where is main?' } }] }, // parent
    { toolCalls: [{ id: 'c1', name: 'read_thing', arguments: { path: 'src/index.ts' } }] }, // child
    { text: 'main is in src/index.ts' }, // child final
    { text: 'The entry point is src/index.ts.' }, // parent final
  );
  h.agent.send('find main');
  await h.agent.idle();

  const [parent1, child1, child2] = h.fake.chatRequests;
  assert.deepEqual(toolNames(parent1), ['read_thing', 'edit_thing', 'todo_write', 'explore', 'agent']);
  assert.deepEqual(toolNames(child1), ['read_thing'], 'child sees offered read tools only, no nesting');
  assert.match(String(child1.body?.messages?.[0].content), /research subagent[\s\S]*Working directory .*\/tmp\/ws/);
  assert.deepEqual(child1.body?.messages?.[1], { role: 'user', content: 'where is main?' });
  assert.equal(child2.body?.messages?.filter((m) => m.role === 'tool').length, 1);
  assert.deepEqual(parentResults(h.fake, 'find main'), [{ ok: true, data: { answer: 'main is in src/index.ts', toolCalls: 1 } }]);
  assert.deepEqual(h.executed, ['read:src/index.ts']);
  assert.equal(h.agent.messages.at(-1)?.content, 'The entry point is src/index.ts.');
});

test('a failing child is reported to the parent model as a tool error', async (t) => {
  const h = await setup(t);
  h.fake.script({ toolCalls: [{ id: 'x1', name: 'explore', arguments: { task: 'look' } }] }, { status: 401 }, { text: 'sorry' });
  h.agent.send('go');
  await h.agent.idle();
  const [result] = parentResults(h.fake);
  assert.equal(result.ok, false);
  assert.match(result.ok ? '' : result.error.message, /subagent failed: auth/);
  assert.equal(h.transcripts[0].status, 'error');
});

test('a 128 KB subagent answer reaches the parent capped at 50 KB, with a notice that it was cut', async (t) => {
  const h = await setup(t);
  const line = 'x'.repeat(127);
  const huge = Array.from({ length: 1024 }, (_, i) => `${String(i).padStart(4, '0')} ${line}`).join('\n'); // 1024 lines, ~130 KB
  assert.ok(Buffer.byteLength(huge) > 128 * 1024);
  h.fake.script({ toolCalls: [{ id: 'x1', name: 'explore', arguments: { task: 'dump everything' } }] }, { text: huge, chunks: [huge] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  const content = String(h.fake.chatRequests[2].body?.messages?.at(-1)?.content);
  const result = JSON.parse(content) as ToolResult<{ answer: string; truncated?: boolean }>;
  assert.equal(result.ok, true);
  const answer = result.ok ? result.data.answer : '';
  assert.ok(Buffer.byteLength(answer) <= 50 * 1024 + 300, `answer is ${Buffer.byteLength(answer)} bytes`);
  assert.ok(answer.startsWith('0000 x'), 'the answer keeps its beginning');
  assert.match(answer, /\[output truncated: \d+ of 1024 lines \(\d+ bytes\) omitted; the subagent's answer was cut/);
  assert.equal(result.ok && result.data.truncated, true);
  assert.ok(Buffer.byteLength(content) < 60 * 1024, 'the tool message stays near the cap');
});

test('an agent answer over 2,000 lines is cut at 2,000 lines', async (t) => {
  const h = await setup(t);
  const many = Array.from({ length: 2500 }, (_, i) => `l${i}`).join('\n');
  h.fake.script({ toolCalls: [{ id: 'a1', name: 'agent', arguments: { task: 'list', tools: [] } }] }, { text: many, chunks: [many] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  const [result] = parentResults(h.fake);
  const answer = result.ok ? String(result.data.answer) : '';
  assert.equal(answer.split('\n').filter((l) => /^l\d+$/.test(l)).length, 2000);
  assert.match(answer, /\[output truncated: 500 of 2500 lines/);
});

/* ------------------------------------------------------------------------------------------------
 * agent: tool set, mode, approvals, grants
 * ---------------------------------------------------------------------------------------------- */

test('agent: the child gets every offered non-subagent tool by default, or the ones named; others are unknown to it', async (t) => {
  const h = await setup(t, { mode: 'chug' });
  h.fake.scriptFor('default set', { text: 'ok default' });
  h.fake.scriptFor('read only', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'x' } }, { name: 'agent', arguments: { task: 'nested' } }] }, { text: 'ok narrow' });
  h.fake.script({ toolCalls: [{ id: 'a1', name: 'agent', arguments: { task: 'default set' } }, { id: 'a2', name: 'agent', arguments: { task: 'read only', tools: ['read_thing'] } }] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  assert.deepEqual(toolNames(requestsOf(h.fake, 'default set')[0]), ['read_thing', 'edit_thing'], 'no hidden tool, no subagent tool');
  assert.deepEqual(toolNames(requestsOf(h.fake, 'read only')[0]), ['read_thing']);
  // Calling a tool outside its set by name (even in chug mode) is an unknown tool, listing what it has.
  const childResults = (requestsOf(h.fake, 'read only')[1].body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => JSON.parse(String(m.content)) as ToolResult);
  for (const r of childResults) {
    assert.equal(r.ok, false);
    assert.equal(r.ok ? '' : r.error.kind, 'invalid_arguments');
    assert.match(r.ok ? '' : String(r.error.suggestedAction), /Call one of: read_thing\.$/);
  }
  assert.deepEqual(h.executed, [], 'edit_thing never ran');
  assert.deepEqual(parentResults(h.fake).map((r) => r.ok && r.data.answer), ['ok default', 'ok narrow']);
});

test('agent: a child is never given the task list tools (its list would replace the main agent\'s)', async (t) => {
  const h = await setup(t);
  h.fake.script({ toolCalls: [{ id: 'a1', name: 'agent', arguments: { task: 'x', tools: ['read_thing', 'todo_write'] } }] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  assert.ok(toolNames(h.fake.chatRequests[0])?.includes('todo_write'), 'the main agent has it');
  const [r] = parentResults(h.fake);
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.error.kind, 'invalid_arguments');
  assert.match(r.error.message, /todo_write/);
});

test('agent: unknown or subagent tool names are invalid_arguments naming the valid ones; no child starts', async (t) => {
  const h = await setup(t);
  h.fake.script({ toolCalls: [{ id: 'a1', name: 'agent', arguments: { task: 'x', tools: ['read_thing', 'nope', 'explore', 'hidden_thing'] } }] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  assert.equal(h.fake.chatRequests.length, 2, 'the parent twice, no child');
  const [r] = parentResults(h.fake);
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.error.kind, 'invalid_arguments');
  assert.match(r.error.message, /nope, explore, hidden_thing/);
  assert.match(String(r.error.suggestedAction), /Name tools among: read_thing, edit_thing \(/);
  assert.deepEqual((r.error.details as { available: string[] }).available, ['read_thing', 'edit_thing']);
});

test('agent: the child runs in the parent\'s mode read at call time; its approvals carry its label', async (t) => {
  const h = await setup(t, { mode: 'create' });
  const edit = (task: string) => {
    h.fake.scriptFor(task, { toolCalls: [{ name: 'edit_thing', arguments: { path: task } }] }, { text: `${task} finished` });
    h.fake.script({ toolCalls: [{ name: 'agent', arguments: { task } }] }, { text: 'ok' });
  };
  edit('create mode task');
  h.agent.send('go 1');
  await h.agent.idle();
  assert.equal(h.approvals.length, 1, 'create: the edit asked');
  assert.equal(h.approvals[0].tool, 'edit_thing');
  assert.equal(h.approvals[0].label, 'agent #1: create mode task');
  assert.match(String(requestsOf(h.fake, 'create mode task')[0].body?.messages?.[0].content), /create mode/);

  h.agent.setMode('auto-edit');
  edit('auto edit task');
  h.agent.send('go 2');
  await h.agent.idle();
  assert.equal(h.approvals.length, 1, 'auto-edit: the edit ran without asking');

  h.agent.setMode('plan');
  edit('plan task');
  h.agent.send('go 3');
  await h.agent.idle();
  const planResult = JSON.parse(String(requestsOf(h.fake, 'plan task')[1].body?.messages?.at(-1)?.content)) as ToolResult;
  assert.equal(planResult.ok ? '' : planResult.error.kind, 'blocked_by_mode');
  assert.deepEqual(h.executed, ['edit:create mode task', 'edit:auto edit task']);
});

test('agent: a mode change while the child runs applies to its next tool call (plan stops its edit)', async (t) => {
  const h = await setup(t, { mode: 'chug' });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  h.fake.scriptFor('switch task', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'x' } }], gate, gateAfterChunks: 0 }, { text: 'child done' });
  h.fake.script({ toolCalls: [{ name: 'agent', arguments: { task: 'switch task' } }] }, { text: 'ok' });
  h.agent.send('go');
  await until(() => requestsOf(h.fake, 'switch task').length === 1, "the child's first request");
  h.agent.setMode('plan');
  release();
  await h.agent.idle();
  assert.deepEqual(h.executed, [], 'the edit did not run');
  const childResult = JSON.parse(String(requestsOf(h.fake, 'switch task')[1].body?.messages?.at(-1)?.content)) as ToolResult;
  assert.equal(childResult.ok ? '' : childResult.error.kind, 'blocked_by_mode');
});

test('agent: "always" given to a child is the session\'s grant: the parent and later children run the tool without asking', async (t) => {
  const h = await setup(t, { approve: async () => ({ decision: 'always' }) });
  h.fake.scriptFor('first', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'a' } }] }, { text: 'a done' });
  h.fake.scriptFor('second', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'b' } }] }, { text: 'b done' });
  h.fake.script(
    { toolCalls: [{ name: 'agent', arguments: { task: 'first' } }] },
    { toolCalls: [{ name: 'agent', arguments: { task: 'second' } }, { name: 'edit_thing', arguments: { path: 'c' } }] },
    { text: 'all done' },
  );
  h.agent.send('go');
  await h.agent.idle();
  assert.equal(h.approvals.length, 1);
  assert.deepEqual(h.agent.alwaysAllowedTools, ['edit_thing']);
  assert.deepEqual(h.executed, ['edit:a', 'edit:b', 'edit:c']);
  h.agent.revoke();
  assert.deepEqual(h.agent.alwaysAllowedTools, []);
});

/* ------------------------------------------------------------------------------------------------
 * Concurrency, cancellation, transcript
 * ---------------------------------------------------------------------------------------------- */

test('two agent calls in one reply run at the same time; both ask at once; results come back in call order', async (t) => {
  const waiting: { req: ApprovalRequest; answer: (d: ApprovalDecision) => void }[] = [];
  const h = await setup(t, { approve: (req) => new Promise((resolve) => waiting.push({ req, answer: resolve })) });
  h.fake.scriptFor('write a', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'a' } }] }, { text: 'wrote a' });
  h.fake.scriptFor('write b', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'b' } }] }, { text: 'wrote b' });
  h.fake.script({ toolCalls: [{ id: 'A', name: 'agent', arguments: { task: 'write a' } }, { id: 'B', name: 'agent', arguments: { task: 'write b' } }] }, { text: 'both written' });
  h.agent.send('go');
  // Both children ask before either is answered: they overlap in time.
  await until(() => waiting.length === 2, 'two approvals pending at once');
  assert.deepEqual(waiting.map((w) => w.req.label).sort(), ['agent #1: write a', 'agent #2: write b']);
  assert.deepEqual(h.executed, []);
  // Answer the second first: it finishes first, yet the parent gets the results in call order.
  waiting.find((w) => w.req.label?.endsWith('write b'))!.answer({ decision: 'once' });
  await until(() => h.executed.length === 1, 'the second child\'s edit');
  assert.deepEqual(h.executed, ['edit:b']);
  waiting.find((w) => w.req.label?.endsWith('write a'))!.answer({ decision: 'once' });
  await h.agent.idle();
  assert.deepEqual(parentResults(h.fake).map((r) => r.ok && r.data.answer), ['wrote a', 'wrote b']);
  const toolIds = (h.agent.messages.filter((m) => m.role === 'tool') as { tool_call_id: string }[]).map((m) => m.tool_call_id);
  // Ids of our own (issue 21), in call order; the provider's 'A' and 'B' go back to it on the wire.
  const callIds = h.agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).map((c) => c.id);
  assert.deepEqual(toolIds, callIds);
  assert.deepEqual(h.fake.chatRequests.at(-1)?.body?.messages?.filter((m) => m.role === 'tool').map((m) => m.tool_call_id), ['A', 'B']);
  assert.equal(h.agent.messages.at(-1)?.content, 'both written');
});

test('two children really overlap: the first child\'s reply is held until the second child\'s request arrives', async (t) => {
  const h = await setup(t);
  let overlapped = false;
  let timedOut = false;
  const secondArrived = new Promise<void>((resolve) => {
    // Run one after the other, the second request would only come after this (the assertion then fails).
    const timer = setTimeout(() => {
      timedOut = true;
      resolve();
    }, 3000);
    void h.fake.waitForRequest(3, 10_000).then(() => {
      overlapped = !timedOut && requestsOf(h.fake, 'task two').length === 1;
      clearTimeout(timer);
      resolve();
    }, () => undefined);
  });
  h.fake.scriptFor('task one', { text: 'one answered', gate: secondArrived, gateAfterChunks: 0 });
  h.fake.scriptFor('task two', { text: 'two answered' });
  h.fake.script({ toolCalls: [{ name: 'explore', arguments: { task: 'task one' } }, { name: 'agent', arguments: { task: 'task two', tools: [] } }] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  assert.ok(overlapped, 'the second child started while the first was still waiting for its model');
  assert.deepEqual(parentResults(h.fake).map((r) => r.ok && r.data.answer), ['one answered', 'two answered']);
});

test('stop() during two children waiting for approval cancels both and withdraws both requests', async (t) => {
  const h = await setup(t, { approve: () => new Promise<ApprovalDecision>(() => undefined) });
  h.fake.scriptFor('write a', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'a' } }] }, { text: 'unused' });
  h.fake.scriptFor('write b', { toolCalls: [{ name: 'edit_thing', arguments: { path: 'b' } }] }, { text: 'unused' });
  h.fake.script({ toolCalls: [{ id: 'A', name: 'agent', arguments: { task: 'write a' } }, { id: 'B', name: 'agent', arguments: { task: 'write b' } }] });
  h.agent.send('go');
  await until(() => h.approvals.length === 2, 'two approvals pending at once');
  h.agent.stop();
  await h.agent.idle();
  await until(() => h.transcripts.length === 2, 'both transcripts');
  assert.deepEqual(h.cancelled.sort(), h.approvals.map((a) => a.id).sort(), 'both pending approvals were withdrawn');
  assert.deepEqual(h.transcripts.map((x) => x.status), ['cancelled', 'cancelled']);
  const results = (h.agent.messages.filter((m) => m.role === 'tool') as { content: string }[]).map((m) => JSON.parse(m.content) as ToolResult);
  assert.deepEqual(results.map((r) => !r.ok && r.error.kind), ['cancelled', 'cancelled']);
  assert.deepEqual(h.executed, []);
  assert.equal(h.fake.chatRequests.length, 3, 'no further model call after the stop');
});

test('the child\'s transcript and progress are reported with the parent\'s tool call id', async (t) => {
  const h = await setup(t, { mode: 'auto-edit' });
  h.fake.scriptFor('fix it', { toolCalls: [{ id: 'c1', name: 'read_thing', arguments: { path: 'f' } }] }, { toolCalls: [{ id: 'c2', name: 'edit_thing', arguments: { path: 'f' } }] }, { text: 'fixed f' });
  h.fake.script({ toolCalls: [{ id: 'P1', name: 'agent', arguments: { task: 'fix it' } }] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  // The parent's call id is ours (issue 21); the provider's 'P1' goes back to it on the wire.
  const P1 = (h.agent.messages.find((m) => m.role === 'assistant' && m.tool_calls) as { tool_calls: { id: string }[] }).tool_calls[0].id;
  assert.deepEqual(h.progress.map((p) => [p.toolCallId, p.label, p.step, p.tool, p.args]), [
    [P1, 'agent #1: fix it', 1, 'read_thing', { path: 'f' }],
    [P1, 'agent #1: fix it', 2, 'edit_thing', { path: 'f' }],
  ]);
  assert.equal(h.transcripts.length, 1);
  const tr = h.transcripts[0];
  assert.deepEqual({ id: tr.toolCallId, name: tr.name, task: tr.task, mode: tr.mode, status: tr.status, tools: tr.tools }, {
    id: P1, name: 'agent', task: 'fix it', mode: 'auto-edit', status: 'ok', tools: ['read_thing', 'edit_thing'],
  });
  assert.deepEqual(tr.messages.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  assert.equal(tr.messages.at(-1)?.content, 'fixed f');
  assert.deepEqual(h.running, [1, 2, 3, 4, 5, 6], 'while it ran, the transcript was reported at each message');
  assert.deepEqual(parentResults(h.fake)[0], { ok: true, data: { answer: 'fixed f', toolCalls: 2 } });
});
