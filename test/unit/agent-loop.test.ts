import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { startFakeOpenAI, type FakeOpenAI, type FakeRequest } from '../support/fake-openai';
import { Agent, type AgentState, type ApprovalDecision, type ApprovalRequest, type PermissionMode } from '../../src/agent/loop';
import { INTERRUPTED_MARKER } from '../../src/agent/messages';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolDefinition, ToolResult } from '../../src/tools/tool';
import { ToolError } from '../../src/tools/errors';
import type { Workspace } from '../../src/workspace/workspace';

/* ------------------------------------------------------------------------------------------------
 * Harness: fake tools with each policy, an agent wired to the fake server, recorded events
 * ---------------------------------------------------------------------------------------------- */

const workspace = { root: '/tmp/ws', dataDir: '/tmp/data', sessionId: 's1' } as Workspace;

interface Harness {
  fake: FakeOpenAI;
  agent: Agent;
  executed: string[];
  approvals: ApprovalRequest[];
  states: string[];
  errors: { kind: string; message: string }[];
  notices: string[];
  texts: string[];
  ends: boolean[];
  results: { id: string; name: string; result: ToolResult }[];
  approvalsCancelled: string[];
  /** Per-path gates for read_thing (concurrency tests). */
  readGates: Map<string, Promise<void>>;
  readStarted: string[];
}

interface SetupOptions {
  mode?: PermissionMode;
  stepLimit?: number;
  approve?: (req: ApprovalRequest) => ApprovalDecision | Promise<ApprovalDecision>;
  extraTools?: ToolDefinition[];
}

async function setup(t: { after(fn: () => unknown): void }, o: SetupOptions = {}): Promise<Harness> {
  const fake = await startFakeOpenAI();
  const h = {
    fake,
    executed: [] as string[],
    approvals: [] as ApprovalRequest[],
    states: ['idle'],
    errors: [] as { kind: string; message: string }[],
    notices: [] as string[],
    texts: [] as string[],
    ends: [] as boolean[],
    results: [] as Harness['results'],
    approvalsCancelled: [] as string[],
    readGates: new Map<string, Promise<void>>(),
    readStarted: [] as string[],
  };
  const tools: ToolDefinition[] = [
    {
      name: 'read_thing',
      description: 'Read a thing',
      policy: 'read',
      parameters: z.object({ path: z.string() }),
      async execute(args: { path: string }) {
        h.readStarted.push(args.path);
        await h.readGates.get(args.path);
        h.executed.push(`read:${args.path}`);
        return { content: `content of ${args.path}` };
      },
    } as ToolDefinition,
    {
      name: 'edit_thing',
      description: 'Edit a thing',
      policy: 'edit',
      parameters: z.object({ path: z.string(), text: z.string() }),
      async execute(args: { path: string; text: string }) {
        h.executed.push(`edit:${args.path}`);
        return { written: args.text.length };
      },
      async preview(args: { path: string; text: string }) {
        return { kind: 'diff', path: args.path, diff: `+${args.text}` };
      },
    } as ToolDefinition,
    {
      name: 'run_cmd',
      description: 'Run a command',
      policy: 'exec',
      parameters: z.object({ command: z.string() }),
      async execute(args: { command: string }) {
        h.executed.push(`exec:${args.command}`);
        return { exitCode: 0, output: 'done' };
      },
      async preview() {
        throw new Error('preview exploded'); // a failing preview must not block the approval
      },
    } as ToolDefinition,
    {
      name: 'ask_thing',
      description: 'Ask the user',
      policy: 'interactive',
      parameters: z.object({ question: z.string() }),
      async execute() {
        h.executed.push('ask');
        return { answer: 'yes' };
      },
    } as ToolDefinition,
    ...(o.extraTools ?? []),
  ];
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'sk-test', model: 'fake-model', retryBaseDelayMs: 1 },
    registry: new ToolRegistry(tools),
    makeContext: (signal) => ({ signal, workspace, sessionId: 's1' }),
    mode: o.mode,
    stepLimit: o.stepLimit,
    requestApproval: async (req) => {
      h.approvals.push(req);
      return o.approve ? o.approve(req) : { decision: 'once' };
    },
    events: {
      state: (s) => h.states.push(s),
      text: (d) => h.texts.push(d),
      assistantEnd: (i) => h.ends.push(i.interrupted),
      toolResult: (r) => h.results.push(r),
      error: (e) => h.errors.push(e),
      notice: (n) => h.notices.push(n),
      approvalCancelled: (r) => h.approvalsCancelled.push(r.id),
    },
  });
  t.after(async () => {
    agent.stop();
    await agent.idle();
    await fake.close();
  });
  return { ...h, agent };
}

/** Tool results the agent sent in a recorded request, keyed by tool_call_id, in message order. */
function toolResults(req: FakeRequest): { id: string; result: ToolResult }[] {
  return (req.body?.messages ?? [])
    .filter((m) => m.role === 'tool')
    .map((m) => ({ id: String(m.tool_call_id), result: JSON.parse(String(m.content)) as ToolResult }));
}

function lastToolResults(req: FakeRequest): Map<string, ToolResult> {
  const msgs = req.body?.messages ?? [];
  const lastAssistant = msgs.map((m) => m.role).lastIndexOf('assistant');
  const out = new Map<string, ToolResult>();
  for (const m of msgs.slice(lastAssistant + 1)) if (m.role === 'tool') out.set(String(m.tool_call_id), JSON.parse(String(m.content)) as ToolResult);
  return out;
}

function errorOf(r: ToolResult | undefined): { kind: string; message: string } {
  assert.ok(r && !r.ok, `expected an error result, got ${JSON.stringify(r)}`);
  return r.error;
}

/* ------------------------------------------------------------------------------------------------
 * Tests
 * ---------------------------------------------------------------------------------------------- */

test('a full turn: read → edit → exec → final answer, with the exact state sequence', async (t) => {
  const h = await setup(t);
  h.fake.script(
    { text: 'Reading.', toolCalls: [{ id: 'r1', name: 'read_thing', arguments: { path: 'a.ts' } }] },
    { toolCalls: [{ id: 'e1', name: 'edit_thing', arguments: { path: 'a.ts', text: 'x' } }] },
    { toolCalls: [{ id: 'x1', name: 'run_cmd', arguments: { command: 'make' } }] },
    { text: 'All done.' },
  );
  assert.deepEqual(h.agent.send('fix a.ts'), { status: 'started' });
  await h.agent.idle();

  assert.deepEqual(h.executed, ['read:a.ts', 'edit:a.ts', 'exec:make']);
  assert.deepEqual(h.approvals.map((a) => a.tool), ['edit_thing', 'run_cmd']);
  assert.deepEqual(h.approvals[0].preview, { kind: 'diff', path: 'a.ts', diff: '+x' });
  // Calls carry ids of our own (the provider's 'e1' goes back to it on the wire).
  const editCall = h.agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).find((c) => (c as { function: { name: string } }).function.name === 'edit_thing');
  assert.equal(h.approvals[0].toolCallId, editCall?.id);
  assert.ok(JSON.stringify(h.fake.chatRequests[2].body?.messages).includes('"e1"'), 'the provider id is sent back');
  assert.equal(h.approvals[1].preview, undefined, 'a throwing preview is dropped, the approval still happens');
  assert.equal(h.fake.chatRequests.length, 4);
  assert.deepEqual(h.errors, []);

  const reqs = h.fake.chatRequests;
  assert.equal(reqs[0].body?.messages?.[0].role, 'system');
  assert.deepEqual(reqs[0].body?.messages?.slice(1), [{ role: 'user', content: 'fix a.ts' }]);
  assert.deepEqual(reqs[0].body?.tools?.map((x) => x.function.name), ['read_thing', 'edit_thing', 'run_cmd', 'ask_thing']);
  assert.deepEqual(toolResults(reqs[1]), [{ id: 'r1', result: { ok: true, data: { content: 'content of a.ts' } } }]);
  assert.deepEqual(lastToolResults(reqs[2]).get('e1'), { ok: true, data: { written: 1 } });
  assert.deepEqual(lastToolResults(reqs[3]).get('x1'), { ok: true, data: { exitCode: 0, output: 'done' } });

  const history = h.agent.messages;
  assert.deepEqual(history.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
  assert.deepEqual(history.at(-1), { role: 'assistant', content: 'All done.', caboose: { model: 'fake-model' } }, 'the model that wrote the reply is kept beside it');
  assert.ok(!JSON.stringify(reqs.map((r) => r.body?.messages)).includes('caboose'), 'never sent');
  assert.equal(h.texts.join(''), 'Reading.All done.');

  assert.deepEqual(h.states, [
    'idle',
    'streaming',
    'executing_tools',
    'streaming',
    'executing_tools',
    'pending_approval',
    'executing_tools',
    'streaming',
    'executing_tools',
    'pending_approval',
    'executing_tools',
    'streaming',
    'idle',
  ]);
  assert.equal(h.agent.state, 'idle');
});

const MODE_TABLE: { mode: PermissionMode; asked: string[]; blocked: string[] }[] = [
  { mode: 'plan', asked: [], blocked: ['edit_thing', 'run_cmd'] },
  { mode: 'create', asked: ['edit_thing', 'run_cmd'], blocked: [] },
  { mode: 'auto-edit', asked: ['run_cmd'], blocked: [] },
  { mode: 'chug', asked: [], blocked: [] },
];

for (const row of MODE_TABLE) {
  test(`mode ${row.mode}: asks for ${row.asked.join(', ') || 'nothing'}, blocks ${row.blocked.join(', ') || 'nothing'}`, async (t) => {
    const h = await setup(t, { mode: row.mode });
    h.fake.script(
      {
        toolCalls: [
          { id: 'c1', name: 'read_thing', arguments: { path: 'a' } },
          { id: 'c2', name: 'edit_thing', arguments: { path: 'a', text: 't' } },
          { id: 'c3', name: 'run_cmd', arguments: { command: 'ls' } },
          { id: 'c4', name: 'ask_thing', arguments: { question: 'ok?' } },
        ],
      },
      { text: 'fin' },
    );
    h.agent.send('go');
    await h.agent.idle();
    assert.equal(h.agent.mode, row.mode);
    assert.deepEqual(h.approvals.map((a) => a.tool), row.asked);
    const results = lastToolResults(h.fake.chatRequests[1]);
    const byName: Record<string, string> = { c1: 'read_thing', c2: 'edit_thing', c3: 'run_cmd', c4: 'ask_thing' };
    for (const [id, result] of results) {
      const name = byName[id];
      if (row.blocked.includes(name)) {
        const e = errorOf(result);
        assert.equal(e.kind, 'blocked_by_mode');
        assert.match(e.message, /plan mode/);
      } else {
        assert.equal(result.ok, true, `${name} should have run in ${row.mode}`);
      }
    }
    assert.equal(results.size, 4);
    const expectedRun = ['read:a', 'edit:a', 'exec:ls', 'ask'].filter((x, i) => !row.blocked.includes(Object.values(byName)[i]));
    assert.deepEqual(h.executed, expectedRun);
    const sys = String(h.fake.chatRequests[0].body?.messages?.[0].content);
    assert.match(sys, new RegExp(`${row.mode} mode`));
  });
}

test('setMode switches the gate between turns', async (t) => {
  const h = await setup(t, { mode: 'plan' });
  const call = { toolCalls: [{ id: 'e', name: 'edit_thing', arguments: { path: 'p', text: 't' } }] };
  h.fake.script(call, { text: 'blocked' }, call, { text: 'done' });
  h.agent.send('one');
  await h.agent.idle();
  assert.deepEqual(h.executed, []);
  h.agent.setMode('chug');
  h.agent.send('two');
  await h.agent.idle();
  assert.deepEqual(h.executed, ['edit:p']);
  assert.equal(h.approvals.length, 0);
});

test('approval "always" remembers the tool for the session; "once" does not', async (t) => {
  const decisions: ApprovalDecision[] = [{ decision: 'once' }, { decision: 'always' }];
  const h = await setup(t, { approve: () => decisions.shift() ?? { decision: 'reject' } });
  const edit = (id: string) => ({ toolCalls: [{ id, name: 'edit_thing', arguments: { path: id, text: 't' } }] });
  h.fake.script(edit('1'), { text: 'a' }, edit('2'), { text: 'b' }, edit('3'), { text: 'c' });
  for (const msg of ['m1', 'm2', 'm3']) {
    h.agent.send(msg);
    await h.agent.idle();
  }
  assert.equal(h.approvals.length, 2, 'third edit ran without asking');
  assert.deepEqual(h.executed, ['edit:1', 'edit:2', 'edit:3']);
  assert.deepEqual(h.agent.alwaysAllowedTools, ['edit_thing']);
});

test('revoke() withdraws "always" grants: one tool, or all; the tool asks again', async (t) => {
  const h = await setup(t, { approve: () => ({ decision: 'always' }) });
  const call = (id: string, name: string, args: Record<string, unknown>) => ({ toolCalls: [{ id, name, arguments: args }] });
  h.fake.script(call('1', 'edit_thing', { path: 'a', text: 't' }), call('2', 'run_cmd', { command: 'ls' }), { text: 'a' }, call('3', 'edit_thing', { path: 'b', text: 't' }), { text: 'b' });
  h.agent.send('m1');
  await h.agent.idle();
  assert.deepEqual(h.agent.alwaysAllowedTools, ['edit_thing', 'run_cmd']);
  assert.deepEqual(h.agent.revoke('nope'), []);
  assert.deepEqual(h.agent.revoke('edit_thing'), ['edit_thing']);
  assert.deepEqual(h.agent.alwaysAllowedTools, ['run_cmd']);
  h.agent.send('m2');
  await h.agent.idle();
  assert.deepEqual(h.approvals.map((a) => a.tool), ['edit_thing', 'run_cmd', 'edit_thing'], 'the revoked tool asked again');
  assert.deepEqual(h.agent.revoke(), ['run_cmd', 'edit_thing']);
  assert.deepEqual(h.agent.alwaysAllowedTools, []);
  assert.deepEqual(h.agent.revoke(), []);
});

test('approval "reject" with a reason reaches the model and the tool does not run', async (t) => {
  const h = await setup(t, { approve: () => ({ decision: 'reject', reason: 'use tabs, not spaces' }) });
  h.fake.script({ toolCalls: [{ id: 'e1', name: 'edit_thing', arguments: { path: 'x', text: 'y' } }] }, { text: 'ok, sorry' });
  h.agent.send('edit');
  await h.agent.idle();
  assert.deepEqual(h.executed, []);
  const e = errorOf(lastToolResults(h.fake.chatRequests[1]).get('e1'));
  assert.equal(e.kind, 'rejected_by_user');
  assert.match(e.message, /use tabs, not spaces/);
});

test('parallel read calls run concurrently and results keep the original order', async (t) => {
  const h = await setup(t);
  const releases: (() => void)[] = [];
  for (const p of ['p1', 'p2', 'p3']) h.readGates.set(p, new Promise<void>((r) => releases.push(r)));
  h.fake.script(
    {
      toolCalls: [
        { id: 'a', name: 'read_thing', arguments: { path: 'p1' } },
        { id: 'b', name: 'read_thing', arguments: { path: 'p2' } },
        { id: 'c', name: 'read_thing', arguments: { path: 'p3' } },
      ],
    },
    { text: 'read them' },
  );
  h.agent.send('read all');
  // All three started before any finished: they run concurrently.
  while (h.readStarted.length < 3) await new Promise((r) => setImmediate(r));
  assert.deepEqual(h.executed, []);
  releases[2]();
  releases[1]();
  releases[0]();
  await h.agent.idle();
  assert.deepEqual(h.executed, ['read:p3', 'read:p2', 'read:p1'], 'completion order is reversed');
  const sent = toolResults(h.fake.chatRequests[1]);
  assert.deepEqual(sent.map((r) => r.id), ['a', 'b', 'c']);
  assert.deepEqual(sent.map((r) => (r.result.ok ? (r.result.data as { content: string }).content : '')), ['content of p1', 'content of p2', 'content of p3']);
});

test('malformed JSON, unknown tools and schema violations go back to the model as structured errors', async (t) => {
  const h = await setup(t, { mode: 'chug' });
  h.fake.script(
    {
      toolCalls: [
        { id: 'bad', name: 'read_thing', arguments: '{"path": "a.ts"' },
        { id: 'unk', name: 'teleport', arguments: {} },
        { id: 'schema', name: 'edit_thing', arguments: { path: 3 } },
        { id: 'good', name: 'read_thing', arguments: { path: 'b.ts' } },
      ],
    },
    { text: 'recovered' },
  );
  h.agent.send('go');
  await h.agent.idle();
  const r = lastToolResults(h.fake.chatRequests[1]);
  const bad = errorOf(r.get('bad'));
  assert.equal(bad.kind, 'invalid_arguments');
  assert.match(bad.message, /^arguments are not valid JSON: /);
  assert.equal(errorOf(r.get('unk')).kind, 'invalid_arguments');
  assert.match(errorOf(r.get('unk')).message, /Unknown tool/);
  assert.equal(errorOf(r.get('schema')).kind, 'invalid_arguments');
  assert.equal(r.get('good')?.ok, true);
  assert.deepEqual(h.executed, ['read:b.ts']);
  assert.deepEqual(h.errors, []);
  assert.equal(h.agent.messages.at(-1)?.content, 'recovered');
});

test('invalid arguments to a tool needing approval are reported without asking the user', async (t) => {
  const h = await setup(t);
  h.fake.script({ toolCalls: [{ id: 's', name: 'run_cmd', arguments: { cmd: 'ls' } }] }, { text: 'k' });
  h.agent.send('go');
  await h.agent.idle();
  assert.equal(h.approvals.length, 0);
  assert.equal(errorOf(lastToolResults(h.fake.chatRequests[1]).get('s')).kind, 'invalid_arguments');
});

test('a call whose preview fails with a ToolError comes back to the model without asking the user', async (t) => {
  const strict: ToolDefinition = {
    name: 'strict_edit',
    description: 'An edit whose preview knows it cannot apply',
    policy: 'edit',
    parameters: z.object({ path: z.string() }),
    async execute() {
      throw new Error('must not run');
    },
    async preview(args: { path: string }) {
      throw new ToolError('old_text_not_found', `Edit 1: oldText was not found in "${args.path}".`, { path: args.path });
    },
  } as ToolDefinition;
  const h = await setup(t, { extraTools: [strict] });
  h.fake.script({ toolCalls: [{ id: 's1', name: 'strict_edit', arguments: { path: 'a.ts' } }] }, { text: 'will re-read' });
  h.agent.send('edit');
  await h.agent.idle();
  assert.equal(h.approvals.length, 0, 'no approval for a call that cannot apply');
  assert.ok(!h.states.includes('pending_approval'));
  const e = errorOf(lastToolResults(h.fake.chatRequests[1]).get('s1'));
  assert.equal(e.kind, 'old_text_not_found');
  assert.match(e.message, /oldText was not found in "a\.ts"/);
  assert.deepEqual(h.results.map((r) => [r.name, r.result.ok]), [['strict_edit', false]]);
});

test('429 with retry-after: 0 is retried, with a notice, then the turn succeeds', async (t) => {
  const h = await setup(t);
  h.fake.script({ status: 429, headers: { 'retry-after': '0' } }, { text: 'after retry' });
  h.agent.send('hi');
  await h.agent.idle();
  assert.equal(h.fake.chatRequests.length, 2);
  assert.deepEqual(h.errors, []);
  assert.equal(h.notices.length, 1);
  assert.match(h.notices[0], /rate limited.*retrying in 0 ms/);
  const last = h.agent.messages.at(-1);
  assert.deepEqual([last?.role, last?.content], ['assistant', 'after retry']);
});

test('a cut stream ends the turn with an error, keeps the partial text marked, and the next message works', async (t) => {
  const h = await setup(t);
  h.fake.script({ text: 'partial answer that never ends', cutAfterChunks: 2 }, { text: 'second try' });
  h.agent.send('hi');
  await h.agent.idle();
  assert.equal(h.errors.length, 1);
  assert.equal(h.errors[0].kind, 'interrupted');
  assert.deepEqual(h.ends, [true]);
  assert.equal(h.agent.state, 'idle');
  assert.deepEqual(h.agent.messages, [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: `partial answer\n\n${INTERRUPTED_MARKER}` },
  ]);
  h.agent.send('again');
  await h.agent.idle();
  const sent = h.fake.chatRequests[1].body?.messages?.slice(1);
  assert.deepEqual(sent?.map((m) => m.content), ['hi', `partial answer\n\n${INTERRUPTED_MARKER}`, 'again']);
  assert.equal(h.agent.messages.at(-1)?.content, 'second try');
});

test('a provider error (401) ends the turn with a clear error and the queued message still runs', async (t) => {
  const h = await setup(t);
  h.fake.script({ status: 401 }, { text: 'fine now' });
  h.agent.send('first');
  assert.deepEqual(h.agent.send('second'), { status: 'queued', position: 1 });
  await h.agent.idle();
  assert.equal(h.errors.length, 1);
  assert.equal(h.errors[0].kind, 'auth');
  assert.match(h.errors[0].message, /OPENAI_API_KEY/);
  assert.deepEqual(h.agent.messages.map((m) => m.content), ['first', 'second', 'fine now']);
});

test('stop() during a hanging stream returns to idle quickly and aborts the request', async (t) => {
  const h = await setup(t);
  h.fake.script({ hang: true });
  h.agent.send('hang please');
  await h.fake.waitForRequest(1);
  assert.equal(h.agent.state, 'streaming');
  const t0 = Date.now();
  h.agent.stop();
  await h.agent.idle();
  assert.ok(Date.now() - t0 < 1000);
  assert.equal(h.agent.state, 'idle');
  assert.deepEqual(h.errors, [], 'a user stop is not an error');
  assert.deepEqual(h.ends, [false], 'no text was shown, so there is no interrupted reply to mark');
  await h.fake.waitForClientClose(1);
  assert.deepEqual(h.agent.messages, [{ role: 'user', content: 'hang please' }]);
});

test('stop() mid-stream keeps the text received so far', async (t) => {
  const h = await setup(t);
  h.fake.script({ text: 'first words then more', gate: new Promise(() => undefined) });
  let sawText!: () => void;
  const textSeen = new Promise<void>((r) => (sawText = r));
  const agent = new Agent({
    provider: { baseURL: h.fake.url, apiKey: 'k', model: 'm' },
    registry: new ToolRegistry(),
    makeContext: (signal) => ({ signal, workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'reject' }),
    events: { text: () => sawText() },
  });
  agent.send('talk');
  await textSeen;
  agent.stop();
  await agent.idle();
  assert.deepEqual(agent.messages.at(-1), { role: 'assistant', content: `first\n\n${INTERRUPTED_MARKER}` });
});

test('stop() during a tool that ignores its signal returns to idle and pairs the call with a cancelled result', async (t) => {
  let started!: () => void;
  const toolStarted = new Promise<void>((r) => (started = r));
  const stuck: ToolDefinition = {
    name: 'stuck',
    description: 'never returns',
    policy: 'read',
    parameters: z.object({}),
    execute: () => {
      started();
      return new Promise(() => undefined);
    },
  };
  const h = await setup(t, { extraTools: [stuck] });
  h.fake.script({ toolCalls: [{ id: 's1', name: 'stuck', arguments: {} }, { id: 's2', name: 'edit_thing', arguments: { path: 'a', text: 'b' } }] });
  h.agent.send('go');
  await toolStarted;
  assert.equal(h.agent.state, 'executing_tools');
  h.agent.stop();
  await h.agent.idle();
  assert.equal(h.agent.state, 'idle');
  assert.equal(h.approvals.length, 0, 'no approval asked after stop');
  const msgs = h.agent.messages;
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant', 'tool', 'tool']);
  for (const m of msgs.slice(2)) assert.equal((JSON.parse(String(m.content)) as { error: { kind: string } }).error.kind, 'cancelled');
  assert.equal(h.fake.chatRequests.length, 1, 'no further model call after stop');
});

test('stop() while an approval is pending withdraws it as a rejection and clears the queue', async (t) => {
  let asked!: () => void;
  const approvalAsked = new Promise<void>((r) => (asked = r));
  const h = await setup(t, {
    approve: () => {
      asked();
      return new Promise<ApprovalDecision>(() => undefined);
    },
  });
  h.fake.script({ toolCalls: [{ id: 'e1', name: 'edit_thing', arguments: { path: 'a', text: 'b' } }] });
  h.agent.send('edit');
  h.agent.send('queued 1');
  await approvalAsked;
  assert.equal(h.agent.state, 'pending_approval');
  h.agent.stop();
  await h.agent.idle();
  assert.equal(h.agent.state, 'idle');
  assert.deepEqual(h.approvalsCancelled, [h.approvals[0].id]);
  assert.deepEqual(h.agent.queued, []);
  assert.deepEqual(h.executed, []);
  const tool = h.agent.messages.at(-1);
  assert.equal(tool?.role, 'tool');
  assert.equal((JSON.parse(String(tool?.content)) as { error: { kind: string } }).error.kind, 'rejected_by_user');
  assert.equal(h.fake.chatRequests.length, 1);
});

test('step limit: stops after N model calls with a clear error', async (t) => {
  const h = await setup(t, { stepLimit: 3 });
  h.fake.setDefaultReply({ toolCalls: [{ name: 'read_thing', arguments: { path: 'loop' } }] });
  h.agent.send('loop forever');
  await h.agent.idle();
  assert.equal(h.fake.chatRequests.length, 3);
  assert.equal(h.errors.length, 1);
  assert.equal(h.errors[0].kind, 'step_limit');
  assert.match(h.errors[0].message, /^stopped after 3 steps/);
  assert.equal(h.agent.messages.at(-1)?.role, 'tool', 'the last tool results stay in the history');
});

test('queue: up to 3 messages wait while busy, a 4th is rejected, all run in order', async (t) => {
  const h = await setup(t);
  let release!: () => void;
  h.fake.script({ text: 'one done', gate: new Promise<void>((r) => (release = r)) });
  assert.deepEqual(h.agent.send('one'), { status: 'started' });
  assert.deepEqual(h.agent.send('two'), { status: 'queued', position: 1 });
  assert.deepEqual(h.agent.send('three'), { status: 'queued', position: 2 });
  assert.deepEqual(h.agent.send('four'), { status: 'queued', position: 3 });
  const rejected = h.agent.send('five');
  assert.equal(rejected.status, 'rejected');
  assert.match(rejected.status === 'rejected' ? rejected.reason : '', /3 messages are already queued/);
  assert.deepEqual(h.agent.queued, ['two', 'three', 'four']);
  await h.fake.waitForRequest(1);
  release();
  await h.agent.idle();
  const lastUser = (r: FakeRequest) => r.body?.messages?.filter((m) => m.role === 'user').at(-1)?.content;
  assert.deepEqual(h.fake.chatRequests.map(lastUser), ['one', 'two', 'three', 'four']);
  assert.deepEqual(h.agent.messages.filter((m) => m.role === 'user').map((m) => m.content), ['one', 'two', 'three', 'four']);
  assert.equal(h.agent.send('six').status, 'started', 'idle again: a new message starts at once');
  await h.agent.idle();
});

test('turnStart hands back each message with its meta when its turn starts; stop() reports the queued ones it drops', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const starts: string[] = [];
  const discarded: unknown[] = [];
  const order: string[] = [];
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm' },
    registry: new ToolRegistry(),
    makeContext: (signal) => ({ signal, workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'once' }),
    events: {
      turnStart: (m) => starts.push(`${m.text}:${JSON.stringify(m.meta)}`),
      queueDiscarded: (ms) => {
        discarded.push(...ms.map((m) => m.meta));
        order.push('queueDiscarded');
      },
      assistantEnd: (info) => order.push(`assistantEnd${info.interrupted ? ' (interrupted)' : ''}`),
      turnEnd: () => order.push('turnEnd'),
    },
  });
  let release!: () => void;
  fake.script({ text: 'one done', gate: new Promise<void>((r) => (release = r)) }, { text: 'two done' });
  agent.send('one', { id: 1 });
  agent.send('two', { id: 2 });
  await fake.waitForRequest(1);
  assert.deepEqual(starts, ['one:{"id":1}'], 'the queued message has not started');
  release();
  await agent.idle();
  assert.deepEqual(starts, ['one:{"id":1}', 'two:{"id":2}']);

  fake.script({ hang: true });
  agent.send('three', { id: 3 });
  agent.send('four', { id: 4 });
  agent.send('five', { id: 5 });
  await fake.waitForRequest(3);
  order.length = 0;
  const dropped = agent.stop();
  assert.deepEqual(dropped.map((m) => m.text), ['four', 'five']);
  await agent.idle();
  assert.deepEqual(discarded, [{ id: 4 }, { id: 5 }]);
  assert.deepEqual(order, ['assistantEnd', 'turnEnd', 'queueDiscarded'], 'the drop is reported after the stopped turn');
  assert.deepEqual(starts.at(-1), 'three:{"id":3}');
});

test('a throwing event handler does not break the loop', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const states: AgentState[] = [];
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm' },
    registry: new ToolRegistry(),
    makeContext: (signal) => ({ signal, workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'once' }),
    events: {
      text: () => {
        throw new Error('ui bug');
      },
      state: (s) => states.push(s),
    },
  });
  fake.script({ text: 'still fine' });
  agent.send('hi');
  await agent.idle();
  assert.deepEqual(states, ['streaming', 'idle']);
  assert.equal(agent.messages.at(-1)?.content, 'still fine');
});

test('each tool call and its preview see the call\'s id in their context', async (t) => {
  const seen: string[] = [];
  const h = await setup(t, {
    extraTools: [
      {
        name: 'whoami',
        description: 'Reports the call id',
        policy: 'edit',
        parameters: z.object({}),
        async execute(_args: unknown, ctx: { toolCallId?: string }) {
          seen.push(`run ${ctx.toolCallId}`);
          return {};
        },
        async preview(_args: unknown, ctx: { toolCallId?: string }) {
          seen.push(`preview ${ctx.toolCallId}`);
          return { kind: 'text', text: 'x' };
        },
      } as ToolDefinition,
    ],
  });
  h.fake.script({ toolCalls: [{ id: 'call_a', name: 'whoami', arguments: {} }, { id: 'call_b', name: 'whoami', arguments: {} }] }, { text: 'done' });
  h.agent.send('go');
  await h.agent.idle();
  const ids = h.agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).map((c) => c.id);
  assert.equal(new Set(ids).size, 2);
  assert.deepEqual(seen, [`preview ${ids[0]}`, `run ${ids[0]}`, `preview ${ids[1]}`, `run ${ids[1]}`]);
});

test('each tool result joins the history as soon as the calls before it are done (a crash keeps what finished)', async (t) => {
  let seen: string[] = [];
  let approveNow!: () => void;
  const h = await setup(t, {
    approve: async () => {
      // While the edit waits for approval, the read before it is already in the history.
      seen = h.agent.messages.filter((m) => m.role === 'tool').map((m) => String(m.tool_call_id));
      await new Promise<void>((r) => (approveNow = r));
      return { decision: 'once' };
    },
  });
  h.fake.script(
    {
      toolCalls: [
        { id: 'r1', name: 'read_thing', arguments: { path: 'a.ts' } },
        { id: 'e1', name: 'edit_thing', arguments: { path: 'a.ts', text: 'x' } },
      ],
    },
    { text: 'done' },
  );
  h.agent.send('go');
  while (!approveNow) await new Promise((r) => setTimeout(r, 5));
  const callIds = h.agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).map((c) => c.id);
  assert.deepEqual(seen, [callIds[0]]);
  approveNow();
  await h.agent.idle();
  assert.deepEqual(
    h.agent.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id),
    callIds,
  );
});
