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
