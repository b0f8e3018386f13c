import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pruneToolOutputs, PRUNED_TOOL_OUTPUT } from '../../src/agent/context';
import type { ChatMessage } from '../../src/agent/provider';

const big = 'x'.repeat(1000);
const turn = (n: number): ChatMessage[] => [
  { role: 'user', content: `q${n}` },
  { role: 'assistant', content: null, tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'read_file', arguments: '{}' } }] },
  { role: 'tool', tool_call_id: `c${n}`, content: big },
  { role: 'tool', tool_call_id: `s${n}`, content: 'short' },
  { role: 'assistant', content: `a${n}` },
];

test('tool outputs older than the last 3 user turns are replaced; short ones, calls and text stay', () => {
  const history = [1, 2, 3, 4, 5].flatMap(turn);
  const pruned = pruneToolOutputs(history, 3);
  const contents = pruned.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.deepEqual(contents, [PRUNED_TOOL_OUTPUT, 'short', PRUNED_TOOL_OUTPUT, 'short', big, 'short', big, 'short', big, 'short']);
  assert.equal(pruned.length, history.length);
  assert.deepEqual(pruned.filter((m) => m.role !== 'tool'), history.filter((m) => m.role !== 'tool'));
  assert.equal(history[2].content, big, 'the original history is not altered');
});

test('a short conversation is sent unchanged', () => {
  const history = [1, 2].flatMap(turn);
  assert.deepEqual(pruneToolOutputs(history, 3), history);
});

import { startFakeOpenAI } from '../support/fake-openai';
import { Agent } from '../../src/agent/loop';
import { ToolRegistry } from '../../src/tools/registry';
import { SUMMARY_PREFIX, SUMMARIZE_INSTRUCTION } from '../../src/agent/context';
import type { Workspace } from '../../src/workspace/workspace';

test('near the context window the earlier turns are summarized by the model and replaced', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const notices: string[] = [];
  const compacted: { removed: number; summary: string }[] = [];
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 },
    registry: new ToolRegistry(),
    contextWindow: 1000,
    makeContext: (signal) => ({ signal, workspace: { root: '/', dataDir: '/', sessionId: 's' } as Workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'reject' }),
    events: { notice: (n) => void notices.push(n), compacted: (c) => void compacted.push({ removed: c.removed.length, summary: c.summary }) },
  });
  fake.script(
    { text: 'first answer', usage: { prompt_tokens: 850, completion_tokens: 20 } },
    { text: 'SUMMARY: user asked one thing' },
    { text: 'second answer' },
  );
  agent.send('first question');
  await agent.idle();
  agent.send('second question');
  await agent.idle();
  assert.equal(fake.chatRequests.length, 3);
  const summarize = fake.chatRequests[1].body!;
  assert.equal(summarize.messages!.at(-1)!.content, SUMMARIZE_INSTRUCTION);
  assert.equal(summarize.tools, undefined, 'the summary request offers no tools');
  const after = fake.chatRequests[2].body!.messages!.map((m) => `${m.role}:${String(m.content).slice(0, 40)}`);
  assert.equal(after.length, 4);
  assert.match(after[1], new RegExp(`^user:${SUMMARY_PREFIX.replace(/[[\]]/g, '\\$&')}`));
  assert.equal(after[3], 'user:second question');
  assert.deepEqual(compacted, [{ removed: 2, summary: 'SUMMARY: user asked one thing' }]);
  assert.ok(notices.some((n) => /compacted 2 earlier messages/.test(n)));
  assert.deepEqual(agent.messages.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
});

import { estimateTokens, fitForSummary } from '../../src/agent/context';

const fullTurn = (i: number, size = 100): ChatMessage[] => [
  { role: 'user', content: `question ${i} ` + 'q'.repeat(size) },
  { role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read_file', arguments: `{"path":"f${i}"}` } }] } as ChatMessage,
  { role: 'tool', tool_call_id: `c${i}`, content: `output ${i} ` + 'o'.repeat(size) } as ChatMessage,
  { role: 'assistant', content: `answer ${i} ` + 'a'.repeat(size) },
];

test('fitForSummary: a head within the budget is sent unchanged', () => {
  const head = [...fullTurn(1), ...fullTurn(2)];
  assert.deepEqual(fitForSummary(head, 10_000), head);
});

test('fitForSummary: a 10 MB reply keeps its beginning and end around a cut notice; huge tool arguments are cut', () => {
  const big = 'start-of-reply ' + 'x'.repeat(10 * 1024 * 1024) + ' end-of-reply';
  const args = JSON.stringify({ path: 'big.txt', content: 'y'.repeat(500_000) });
  const head: ChatMessage[] = [
    { role: 'user', content: 'write it' },
    { role: 'assistant', content: big },
    { role: 'user', content: 'now save' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'w1', type: 'function', function: { name: 'write_file', arguments: args } }] } as ChatMessage,
    { role: 'tool', tool_call_id: 'w1', content: '{"ok":true}' } as ChatMessage,
  ];
  const budget = 19_000;
  const out = fitForSummary(head, budget);
  assert.ok(estimateTokens(out) <= budget, `${estimateTokens(out)} tokens`);
  assert.equal(out.length, head.length, 'nothing had to be left out');
  const reply = String(out[1].content);
  assert.match(reply, /^start-of-reply x+\n\[… \d+ characters cut for the summary …\]\nx+ end-of-reply$/);
  const call = (out[3] as { tool_calls: { function: { arguments: string } }[] }).tool_calls[0].function.arguments;
  const parsed = JSON.parse(call) as { cut_for_summary: string; start: string };
  assert.match(parsed.cut_for_summary, /^\d+ characters of arguments$/);
  assert.ok(parsed.start.startsWith('{"path":"big.txt"'));
  assert.equal(head[1].content, big, 'the history itself is not changed');
});

test('fitForSummary: over the budget, the oldest whole turns are left out (no tool result without its call)', () => {
  const head = Array.from({ length: 40 }, (_, i) => fullTurn(i, 1000)).flat();
  const budget = 8_000;
  const out = fitForSummary(head, budget);
  assert.ok(estimateTokens(out) <= budget + 50, `${estimateTokens(out)} tokens`);
  assert.match(String(out[0].content), /^\[(\d+) earlier messages are left out of this summary request; they stay archived\.\]$/);
  const left = Number(/\[(\d+)/.exec(String(out[0].content))![1]);
  assert.equal(left % 4, 0, 'whole turns');
  assert.equal(out[1].role, 'user');
  assert.deepEqual(out.slice(1), head.slice(left), 'the newest turns are kept as they were');
  assert.equal(String(out.at(-1)!.content).slice(0, 9), 'answer 39');
});

test('a summary request after a 10 MB reply fits the context window; the next message is answered', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 },
    registry: new ToolRegistry(),
    contextWindow: 32_000,
    makeContext: (signal) => ({ signal, workspace: { root: '/', dataDir: '/', sessionId: 's' } as Workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'reject' }),
  });
  const big = 'line of a long reply\n'.repeat(500_000);
  const chunks = Array.from({ length: Math.ceil(big.length / 65_536) }, (_, i) => big.slice(i * 65_536, (i + 1) * 65_536));
  fake.script({ text: big, chunks, delayMs: 0 }, { text: 'SUMMARY: one long reply' }, { text: 'recovered fine' });
  agent.send('first question');
  await agent.idle();
  agent.send('second question');
  await agent.idle();
  assert.equal(fake.chatRequests.length, 3);
  const summarize = fake.chatRequests[1].body!.messages!;
  assert.equal(summarize.at(-1)!.content, SUMMARIZE_INSTRUCTION);
  assert.ok(estimateTokens(summarize as ChatMessage[]) <= 32_000 * 0.8, `${estimateTokens(summarize as ChatMessage[])} tokens`);
  assert.equal(agent.messages.at(-1)!.content, 'recovered fine');
  assert.match(String(fake.chatRequests[2].body!.messages![1].content), /SUMMARY: one long reply/);
});

test('a window too small for the system prompt and tools: one summary per turn (not one per step), and a warning once', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const notices: string[] = [];
  const { z } = await import('zod');
  const registry = new ToolRegistry([
    { name: 'look', description: 'Look at something. '.repeat(200), policy: 'read', parameters: z.object({ what: z.string() }), execute: async () => 'seen' },
  ]);
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 },
    registry,
    contextWindow: 1000,
    makeContext: (signal) => ({ signal, workspace: { root: '/', dataDir: '/', sessionId: 's' } as Workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'once' }),
    events: { notice: (n) => void notices.push(n) },
  });
  // Every reply reports a prompt over the window (the tools alone are ~1,000 tokens).
  const over = { prompt_tokens: 1200, completion_tokens: 10 };
  fake.script({ text: 'first answer', usage: over });
  agent.send('first question');
  await agent.idle();
  fake.script(
    { text: '## Intent\nsummary', usage: over },
    { toolCalls: [{ id: 'l1', name: 'look', arguments: { what: 'a' } }], usage: over },
    { toolCalls: [{ id: 'l2', name: 'look', arguments: { what: 'b' } }], usage: over },
    { toolCalls: [{ id: 'l3', name: 'look', arguments: { what: 'c' } }], usage: over },
    { text: 'second answer', usage: over },
  );
  agent.send('second question');
  await agent.idle();
  const summaries = fake.chatRequests.filter((r) => r.body?.messages?.at(-1)?.content === SUMMARIZE_INSTRUCTION);
  assert.equal(summaries.length, 1, 'the later steps of the turn do not summarize the summary again');
  assert.equal(fake.chatRequests.length, 6);
  assert.equal(agent.messages.at(-1)?.content, 'second answer');
  assert.equal(notices.filter((n) => /context window \(1000 tokens\) is too small for what every request carries/.test(n)).length, 1);
});

import { z } from 'zod';
import { fitToolOutputs } from '../../src/agent/context';
import type { ToolDefinition } from '../../src/tools/tool';

test("after a compaction the current turn's tool outputs never push a request over the window: they leave the prompt for stubs, said in the chat (issue 17, defect 14)", async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const notices: string[] = [];
  const WINDOW = 12_000;
  // Each call returns ~40 KB (~10k tokens): the current turn alone is several windows.
  const dump: ToolDefinition = {
    name: 'dump',
    description: 'Dump a big thing',
    policy: 'read',
    parameters: z.object({ n: z.number() }),
    async execute(args: { n: number }) {
      return { text: `dump ${args.n}: ${'y'.repeat(40_000)}` };
    },
  } as ToolDefinition;
  const stored = new Map<ChatMessage, number>();
  let nextId = 100;
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 },
    registry: new ToolRegistry([dump]),
    contextWindow: WINDOW,
    storedRef: (m) => {
      if (m.role !== 'tool') return undefined;
      if (!stored.has(m)) stored.set(m, nextId++);
      return stored.get(m);
    },
    makeContext: (signal) => ({ signal, workspace: { root: '/', dataDir: '/', sessionId: 's' } as Workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'once' }),
    events: { notice: (n) => void notices.push(n) },
  });
  fake.script(
    { text: 'earlier answer '.repeat(2000), usage: { prompt_tokens: 11_000, completion_tokens: 50 } },
    { text: 'SUMMARY: earlier' },
    { toolCalls: [{ id: 'd1', name: 'dump', arguments: { n: 1 } }, { id: 'd2', name: 'dump', arguments: { n: 2 } }] },
    { toolCalls: [{ id: 'd3', name: 'dump', arguments: { n: 3 } }] },
    { text: 'done' },
  );
  agent.send('earlier question');
  await agent.idle();
  agent.send('dump three things');
  await agent.idle();
  const reqs = fake.chatRequests;
  assert.equal(reqs.length, 5);
  assert.ok(notices.some((n) => /compacted 2 earlier messages/.test(n)), 'precondition: a compaction happened');
  for (const r of reqs.slice(2)) {
    const msgs = r.body!.messages! as ChatMessage[];
    const tokens = estimateTokens(msgs) + Math.ceil(JSON.stringify(r.body!.tools ?? []).length / 4);
    assert.ok(tokens <= WINDOW, `a request of ~${tokens} tokens exceeds the ${WINDOW}-token window`);
  }
  // The outputs that left the prompt are named by their stored id (recall reads them back); the newest stays.
  const last = (reqs[4].body!.messages! as ChatMessage[]).filter((m) => m.role === 'tool').map((m) => String(m.content));
  assert.equal(last.length, 3);
  assert.ok(last.filter((c) => /moved out of the prompt; stored as #\d+ — call recall/.test(c)).length >= 2, last.map((c) => c.slice(0, 80)).join('\n'));
  assert.ok(notices.some((n) => /this turn's tool outputs did not fit the context window \(12000 tokens\): \d+ moved out of the prompt \(stored as #\d+/.test(n)), notices.join('\n'));
  // The agent's own history keeps every output in full.
  assert.equal(agent.messages.filter((m) => m.role === 'tool' && String(m.content).length > 40_000).length, 3);
});

test('fitToolOutputs: the largest first, stubs when stored, a recall output is cut (never stubbed), short ones stay', () => {
  const prompt: ChatMessage[] = [
    { role: 'user', content: 'q' },
    { role: 'assistant', content: null, tool_calls: [
      { id: 'a', type: 'function', function: { name: 'read_file', arguments: '{}' } },
      { id: 'b', type: 'function', function: { name: 'recall', arguments: '{}' } },
      { id: 'c', type: 'function', function: { name: 'grep', arguments: '{}' } },
    ] },
    { role: 'tool', tool_call_id: 'a', content: `{"x":"${'a'.repeat(20_000)}"}` },
    { role: 'tool', tool_call_id: 'b', content: `{"x":"${'b'.repeat(30_000)}"}` },
    { role: 'tool', tool_call_id: 'c', content: 'short' },
  ];
  const r = fitToolOutputs(prompt, 3_000, (i) => 40 + i);
  assert.ok(estimateTokens(r.prompt) <= 3_000);
  assert.deepEqual(r.replaced, [{ index: 2, storedAs: 42 }, { index: 3 }]);
  assert.match(String(r.prompt[2].content), /^\[read_file output \(19\.5 KB\) moved out of the prompt; stored as #42/);
  assert.match(String(r.prompt[3].content), /^\{"x":"b+\n\[recall output cut from 30008 to \d+ characters to fit the context window; recall a smaller slice/);
  assert.equal(r.prompt[4].content, 'short');
  assert.equal(String(prompt[2].content).length, 20_008, 'the input is not altered');
  assert.deepEqual(fitToolOutputs(prompt, 100_000, () => 1).replaced, [], 'what fits is sent as it is');
});
