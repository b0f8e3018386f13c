/**
 * Issue 21: real providers' streams (test/fixtures/streams/, sources in SOURCE.md) replayed byte for byte
 * through a local fake server and the real model client. One test per numbered behaviour of the issue.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAI } from '../support/fake-openai';
import { FIXTURES, fixture, messages, replay } from '../support/stream-replay';
import { OpenAIProvider, ProviderError, type ModelEvent } from '../../src/agent/provider';
import { parseUsage, readSse, StreamAssembler } from '../../src/agent/stream';
import { Agent } from '../../src/agent/loop';
import { pruneToolOutputs } from '../../src/agent/context';
import { ToolRegistry } from '../../src/tools/registry';
import { z } from 'zod';
import type { ToolDefinition } from '../../src/tools/tool';



test('1. content as typed parts (Mistral): text parts are the reply, thinking parts reasoning, no [object Object]', async (t) => {
  const { done, events } = await replay(t, 'mistral/reasoning.sse');
  assert.ok(done);
  assert.equal(done.text, '2 + 2 = 4');
  assert.equal(done.reasoning, 'The user is asking for 2+2. This is basic arithmetic. 2+2=4.');
  assert.ok(!events.some((e) => e.type === 'text' && e.delta.includes('[object')));
  // Unknown part types are ignored.
  const asm = new StreamAssembler();
  asm.push({ choices: [{ delta: { content: [{ type: 'image_url', image_url: { url: 'x' } }, { type: 'text', text: 'ok' }] } }] });
  assert.equal(asm.text, 'ok');
});

test('2. no finish_reason: a stream that ends cleanly is complete; tool calls infer tool_calls', async (t) => {
  // Snowflake Cortex, recorded: usage and [DONE], never a finish_reason.
  const text = await replay(t, 'snowflake/text-no-finish-reason.sse');
  assert.equal(text.error, undefined);
  assert.equal(text.done?.finishReason, 'stop');
  assert.equal(text.done?.text, '4');
  const calls = await replay(t, 'vllm/no-finish-reason-tool-call.sse');
  assert.equal(calls.error, undefined);
  assert.equal(calls.done?.finishReason, 'tool_calls');
  assert.deepEqual(calls.done?.toolCalls.map((c) => [c.name, c.arguments]), [['read_file', '{"path": "a.txt"}']]);
  // A body that stops with no [DONE], no usage and no finish_reason is still an interruption.
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ raw: 'data: {"choices":[{"index":0,"delta":{"content":"Hal"}}]}\n\n' });
  const p = new OpenAIProvider({ baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 });
  await assert.rejects(
    (async () => {
      for await (const _ of p.stream({ messages })) void _;
    })(),
    (e: unknown) => e instanceof ProviderError && e.kind === 'interrupted' && e.partialText === 'Hal',
  );
});

test('3. errors inside a 200 stream: classified by their own code, not retried when a retry cannot help, no false "partial reply is kept"', async (t) => {
  // OpenRouter (recorded), code 400 in the stream: one request, a bad_response with the server's message.
  const a = await replay(t, 'openrouter/recorded-error-in-stream.sse');
  assert.equal(a.fake.chatRequests.length, 1, 'not retried');
  assert.equal(a.error?.kind, 'bad_response');
  assert.match(a.error?.message ?? '', /Token limit reached/);
  assert.doesNotMatch(a.error?.message ?? '', /partial reply is kept/);
  assert.ok(!a.events.some((e) => e.type === 'retry'));
  // `event: error` (Groq, recorded): a string code, the status in `status_code: 400`.
  const b = await replay(t, 'groq/tool-use-failed-event-error.sse');
  assert.equal(b.fake.chatRequests.length, 1);
  assert.equal(b.error?.kind, 'bad_response');
  assert.match(b.error?.message ?? '', /Tool call validation failed/);
  // llama.cpp's bare `error:` line: a prompt too large for the context is context_length (compaction), not a retry.
  const c = await replay(t, 'llamacpp/error-line.sse');
  assert.equal(c.fake.chatRequests.length, 1);
  assert.equal(c.error?.kind, 'context_length');
  assert.match(c.error?.message ?? '', /available context size/);
  // A server fault after text arrived: no retry (output was delivered), the partial text is kept and said so.
  const d = await replay(t, 'openrouter/server-error-in-stream.sse');
  assert.equal(d.fake.chatRequests.length, 1);
  assert.equal(d.error?.kind, 'server');
  assert.equal(d.error?.partialText, 'Let me');
  assert.match(d.error?.message ?? '', /Provider disconnected unexpectedly.*partial reply is kept/);
  // A server fault before any output is worth another attempt.
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ raw: 'data: {"error":{"message":"overloaded","code":503}}\n\n' }, { text: 'fine' });
  const p = new OpenAIProvider({ baseURL: fake.url, apiKey: 'k', model: 'm', retryBaseDelayMs: 1 });
  const out: ModelEvent[] = [];
  for await (const ev of p.stream({ messages })) out.push(ev);
  assert.equal(fake.chatRequests.length, 2);
  assert.equal((out.at(-1) as { text: string }).text, 'fine');
});

test('4. parallel calls with a repeated index (Ollama), repeated names, continuation chunks without index (Gemini)', async (t) => {
  const ollama = await replay(t, 'ollama/parallel-tool-calls-index0.sse');
  assert.deepEqual(ollama.done?.toolCalls.map((c) => [c.name, c.arguments, c.providerId]), [
    ['read_file', '{"path":"a.txt"}', 'call_4u0ykq2m'],
    ['read_file', '{"path":"b.txt"}', 'call_x7r1c0qe'],
  ]);
  const named = await replay(t, 'gemini/repeated-name.sse');
  assert.deepEqual(named.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]), [['write_file', { path: 'w.txt', content: 'hi' }]]);
  const noIndex = await replay(t, 'gemini/tool-call-no-index.sse');
  assert.deepEqual(noIndex.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]), [['read_file', { path: 'a.txt' }]]);
  // Mistral's recorded call carries no index at all; Z.ai's continuation repeats an empty name.
  const mistral = await replay(t, 'mistral/tool-call.sse');
  assert.deepEqual(mistral.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]), [['weather', { location: 'San Francisco' }]]);
  const zai = await replay(t, 'zai/incremental-tool-call.sse');
  assert.deepEqual(zai.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]), [['webSearchTool', { query: 'current Berlin weather' }]]);
});

test('5. empty or repeated ids (Qwen, Gemini): ids of our own; the provider id goes back where it had one', async (t) => {
  const qwen = await replay(t, 'qwen/tool-call.sse');
  const calls = qwen.done?.toolCalls ?? [];
  assert.equal(calls.length, 1, 'the empty-id continuation chunks join the open call');
  assert.deepEqual(JSON.parse(calls[0].arguments), { location: 'San Francisco' });
  assert.equal(calls[0].providerId, 'call_eee11723464a4b9eb8cee71d');
  assert.match(calls[0].id, /^[A-Za-z0-9]{9}$/);
  const gemini = await replay(t, 'gemini/tool-call-no-index.sse');
  assert.equal(gemini.done?.toolCalls[0].providerId, undefined, 'an empty id is not the provider’s');
  assert.ok(gemini.done?.toolCalls[0].id);
  // Two calls sharing one provider id keep distinct own ids and neither sends the shared one back.
  const asm = new StreamAssembler();
  asm.push({ choices: [{ delta: { tool_calls: [{ index: 0, id: 'same', function: { name: 'a', arguments: '{}' } }] } }] });
  asm.push({ choices: [{ delta: { tool_calls: [{ index: 1, id: 'same', function: { name: 'a', arguments: '{}' } }] } }] });
  const two = asm.calls();
  assert.equal(two.length, 2);
  assert.notEqual(two[0].id, two[1].id);
  assert.deepEqual(two.map((c) => c.providerId), [undefined, undefined]);
});

test('6. reasoning (DeepSeek reasoning_content, xAI, OpenRouter reasoning, Copilot reasoning_text, llama.cpp) never mixes into the reply', async (t) => {
  const cases: [string, RegExp, RegExp][] = [
    ['deepseek/reasoning.sse', /^We need to/, /./],
    ['xai/tool-call.sse', /^First, the user is asking/, /^$/],
    ['openrouter/claude-reasoning.sse', /^This is a simple arithmetic question\. 2\+2 equals 4\.$/, /^2 \+ 2 = 4$/],
    ['copilot/gemini-3-pro-opaque-at-end.sse', /^\*\*Analyzing the Inquiry's Nature\*\*/, /^I am Tidewave/],
    ['snowflake/thinking.sse', /^15 \* 27 = 405$/, /^15 × 27 = \*\*405\*\*/],
    ['zai/thinking.sse', /Analyze the User's Request/, /^4$/],
    ['groq/reasoning.sse', /^Okay, let me try to figure out/, /^The word/],
    ['llamacpp/reasoning.sse', /^Thinking about the answer\.$/, /^It is 4\.$/],
    ['qwen/reasoning.sse', /./, /./],
  ];
  for (const [name, reasoning, text] of cases) {
    const r = await replay(t, name);
    assert.equal(r.error, undefined, name);
    assert.match(r.done?.reasoning ?? '', reasoning, name);
    assert.match(r.done?.text ?? '', text, name);
    const reasoningDeltas = r.events.filter((e) => e.type === 'reasoning').map((e) => (e as { delta: string }).delta).join('');
    assert.equal(reasoningDeltas, r.done?.reasoning, name);
    assert.ok(!(r.done?.text ?? '').includes((r.done?.reasoning ?? '').slice(0, 30)), `${name}: reasoning not in the reply`);
  }
  const copilot = await replay(t, 'copilot/gemini-3-pro-opaque-at-end.sse');
  assert.equal(copilot.done?.reasoningOpaque, '/PMlTqxqSJZnUBDHgnnJKLVI4eZQ');
});

test('7. usage details: cached tokens (incl. DeepSeek prompt_cache_hit_tokens), reasoning tokens; zero placeholders left out', async (t) => {
  const ds = await replay(t, 'deepseek/tool-call.sse');
  assert.deepEqual(ds.done?.usage, { promptTokens: 339, completionTokens: 83, totalTokens: 422, cachedTokens: 320, reasoningTokens: 39 });
  const zero = await replay(t, 'deepseek/reasoning.sse');
  assert.deepEqual(zero.done?.usage, { promptTokens: 18, completionTokens: 219, totalTokens: 237, reasoningTokens: 205 }, 'cached 0 is a placeholder');
  assert.deepEqual(parseUsage({ prompt_tokens: 5, completion_tokens: 1, prompt_cache_hit_tokens: 4, prompt_cache_miss_tokens: 1 }), { promptTokens: 5, completionTokens: 1, totalTokens: 6, cachedTokens: 4 });
  assert.equal(parseUsage({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }), undefined);
  const xai = await replay(t, 'xai/tool-call.sse');
  assert.equal(xai.done?.usage?.cachedTokens, 306);
  assert.equal(xai.done?.usage?.reasoningTokens, 227);
});

test('recorded streams from every stored provider replay to a done event', async (t) => {
  for (const name of ['openai/text.sse', 'azure/model-router.sse', 'groq/tool-call.sse', 'deepseek/tool-call.sse', 'qwen/reasoning.sse']) {
    const r = await replay(t, name);
    assert.equal(r.error, undefined, name);
    assert.ok(r.done, name);
  }
});

test('readSse: CRLF, comments, data split over lines, a last event without its blank line', async () => {
  const bytes = new TextEncoder().encode(': ping\r\ndata: {"a":\r\ndata: 1}\r\n\r\nerror: {"message":"x","code":429}');
  async function* body(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < bytes.length; i += 7) yield bytes.slice(i, i + 7);
  }
  const items = [];
  for await (const it of readSse(body())) items.push(it);
  assert.deepEqual(items, [
    { kind: 'data', data: { a: 1 } },
    { kind: 'error', error: { message: 'x', status: 429 } },
  ]);
});

test('issue 17 defect 13: stored-output stubs name the right tool when providers repeat or empty their ids', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  // Gemini-style ids: "" on every call, two steps in a row, two different tools.
  const call = (name: string, args: string) =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { tool_calls: [{ id: '', index: 0, type: 'function', function: { name, arguments: args } }] } }] })}\n\n` +
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] })}\n\ndata: [DONE]\n\n`;
  fake.script({ raw: call('alpha', '{}') }, { raw: call('beta', '{}') }, { text: 'done' });
  const registry = new ToolRegistry(
    ['alpha', 'beta'].map((name) => ({ name, description: name, policy: 'read', parameters: z.object({}), execute: async () => ({ out: `${name} output `.repeat(50) }) }) as unknown as ToolDefinition),
  );
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm' },
    registry,
    makeContext: (signal) => ({ signal }) as never,
    requestApproval: async () => ({ decision: 'once' }),
  });
  agent.send('go');
  await agent.idle();
  const history = agent.messages;
  const ids = history.filter((m) => m.role === 'tool').map((m) => (m as { tool_call_id: string }).tool_call_id);
  assert.equal(ids.length, 2);
  assert.notEqual(ids[0], ids[1], 'distinct ids of our own');
  const pruned = pruneToolOutputs(history, 0, () => 7);
  const stubs = pruned.filter((m) => m.role === 'tool').map((m) => String(m.content));
  assert.match(stubs[0], /alpha/);
  assert.doesNotMatch(stubs[0], /beta/);
  assert.match(stubs[1], /beta/);
  // The wire never carried our ids for calls the provider gave none: ours went, consistently paired.
  const sent = fake.chatRequests[2].body?.messages ?? [];
  const assistantIds = sent.flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
  const toolIds = sent.filter((m) => m.role === 'tool').map((m) => m.tool_call_id);
  assert.deepEqual(assistantIds, toolIds);
});

test('6b/5b. what goes back: reasoning stays out (DeepSeek), Copilot gets its opaque reasoning back, provider ids restored', async () => {
  const { assistantMessage, toolMessage } = await import('../../src/agent/messages');
  const { toWireMessages } = await import('../../src/agent/stream');
  const ds = assistantMessage('4', [], { model: 'deepseek-reasoner', reasoning: 'We need to add.' });
  assert.deepEqual(toWireMessages([ds]), [{ role: 'assistant', content: '4' }]);
  const cp = assistantMessage('Yes.', [], { reasoning: 'Checking the question.', reasoningOpaque: 'OPAQUE' });
  assert.deepEqual(toWireMessages([cp]), [{ role: 'assistant', content: 'Yes.', reasoning_opaque: 'OPAQUE', reasoning_text: 'Checking the question.' }]);
  const call = assistantMessage('', [{ id: 'own123456', providerId: 'call_eee', name: 'weather', arguments: '{}' }]);
  const wire = toWireMessages([call, toolMessage('own123456', { ok: true, data: {} })]);
  assert.equal((wire[0] as { tool_calls: { id: string }[] }).tool_calls[0].id, 'call_eee');
  assert.equal((wire[1] as { tool_call_id: string }).tool_call_id, 'call_eee');
});

test('a whole `message` instead of deltas is read once; a final `message` repeating the deltas is not added again', () => {
  const whole = new StreamAssembler();
  whole.push({ choices: [{ message: { role: 'assistant', content: 'all at once' }, finish_reason: 'stop' }] });
  assert.equal(whole.text, 'all at once');
  const repeated = new StreamAssembler();
  repeated.push({ choices: [{ delta: { content: 'Hel' } }] });
  repeated.push({ choices: [{ delta: { content: 'lo' } }] });
  repeated.push({ choices: [{ message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }] });
  assert.equal(repeated.text, 'Hello');
});

test('every fixture reads the same however the bytes are split (UTF-8 and lines cut anywhere)', async () => {
  const { readdirSync } = await import('node:fs');
  const files = readdirSync(FIXTURES, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.sse'));
  assert.ok(files.length >= 20, `${files.length} fixtures`);
  let seed = 7;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const read = async (bytes: Uint8Array, cut: () => number) => {
    async function* body(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < bytes.length; ) {
        const n = Math.max(1, cut());
        yield bytes.slice(i, i + n);
        i += n;
      }
    }
    const asm = new StreamAssembler(() => 'fixedid00');
    const items: unknown[] = [];
    for await (const it of readSse(body())) {
      items.push(it.kind === 'data' ? 'data' : it);
      if (it.kind === 'data') asm.push(it.data);
    }
    return { items, text: asm.text, reasoning: asm.reasoning, calls: asm.calls(), usage: asm.usage, finish: asm.finishReason };
  };
  for (const f of files) {
    const bytes = new TextEncoder().encode(fixture(f));
    const whole = await read(bytes, () => bytes.length);
    for (let round = 0; round < 5; round++) assert.deepEqual(await read(bytes, () => 1 + rand(40)), whole, f);
  }
});

test('calls without id or index: two in one chunk, or a new name after complete arguments, are two calls', () => {
  const asm = new StreamAssembler();
  asm.push({ choices: [{ delta: { tool_calls: [{ id: '', function: { name: 'a', arguments: '{"x":1}' } }, { id: '', function: { name: 'b', arguments: '{}' } }] } }] });
  asm.push({ choices: [{ delta: { tool_calls: [{ function: { name: 'c', arguments: '{"y":' } }] } }] });
  asm.push({ choices: [{ delta: { tool_calls: [{ function: { arguments: '2}' } }] } }] });
  asm.push({ choices: [{ delta: { tool_calls: [{ function: { name: 'c', arguments: '{}' } }] } }] });
  assert.deepEqual(asm.calls().map((c) => [c.name, c.arguments]), [['a', '{"x":1}'], ['b', '{}'], ['c', '{"y":2}'], ['c', '{}']]);
});

test('a reply split over several choices (Copilot) and a refusal are read', () => {
  const asm = new StreamAssembler();
  asm.push({ choices: [{ index: 0, delta: { content: 'Let me look.' } }, { index: 1, delta: { tool_calls: [{ index: 0, id: 'toolu_1', function: { name: 'read_file', arguments: '{}' } }] } }] });
  asm.push({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
  assert.equal(asm.text, 'Let me look.');
  assert.deepEqual(asm.calls().map((c) => c.name), ['read_file']);
  const r = new StreamAssembler();
  r.push({ choices: [{ delta: { content: null, refusal: 'I can’t help with that.' } }] });
  assert.equal(r.text, 'I can’t help with that.');
});

test('3b. a retryable error inside the stream: the server’s message is said once, later attempts say "the same error again"', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const overloaded = { raw: 'data: {"error":{"message":"Model is overloaded","code":503}}\n\n' };
  fake.script(overloaded, overloaded, { text: 'finally' });
  const notices: string[] = [];
  const errors: string[] = [];
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'm', retryBaseDelayMs: 1 },
    registry: new ToolRegistry([]),
    makeContext: (signal) => ({ signal }) as never,
    requestApproval: async () => ({ decision: 'once' }),
    events: { notice: (n) => notices.push(n), error: (e) => errors.push(e.message) },
  });
  agent.send('hi');
  await agent.idle();
  assert.equal(fake.chatRequests.length, 3);
  assert.deepEqual(errors, []);
  assert.equal(notices.length, 2);
  assert.match(notices[0], /Model is overloaded; retrying/);
  assert.match(notices[1], /^the same error again; retrying/);
  assert.equal(agent.messages.at(-1)?.content, 'finally');
});
