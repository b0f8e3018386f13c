/**
 * Issue 21, more real recordings (test/fixtures/streams/, sources and licences in SOURCE.md) replayed byte for
 * byte through a local fake server and the real model client: what the user would get from each service.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAI } from '../support/fake-openai';
import { fixture, messages, replay } from '../support/stream-replay';
import { OpenAIProvider, ProviderError, type ModelEvent } from '../../src/agent/provider';
import { Agent } from '../../src/agent/loop';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolDefinition } from '../../src/tools/tool';
import { z } from 'zod';



test('Anthropic compatible endpoint (claude-haiku-4-5): text, then one call at index 1 with no call at index 0', async (t) => {
  const r = await replay(t, 'anthropic/tool-call-index1.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.text, 'Reading it.');
  assert.equal(r.done?.finishReason, 'tool_calls');
  assert.deepEqual(r.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments), c.providerId]), [['read_file', { path: 'a.txt' }, 'toolu_sanitized']]);
  assert.equal(r.fake.chatRequests.length, 1);
});

test('Groq reasoning (qwen3-32b): delta.reasoning kept apart; x_groq usage does not double count; reasoning tokens shown', async (t) => {
  const r = await replay(t, 'groq/reasoning.sse');
  assert.equal(r.error, undefined);
  assert.match(r.done?.reasoning ?? '', /^Okay, let me try to figure out how many times the letter 'r'/);
  assert.match(r.done?.text ?? '', /^The word \*\*"strawberry"\*\*/);
  assert.doesNotMatch(r.done?.text ?? '', /<think>|Okay, let me/);
  assert.equal(r.streamed('reasoning'), r.done?.reasoning);
  assert.equal(r.streamed('text'), r.done?.text);
  assert.equal(r.done?.finishReason, 'stop');
  assert.deepEqual(r.done?.usage, { promptTokens: 17, completionTokens: 1107, totalTokens: 1124, reasoningTokens: 963 });
  const text = await replay(t, 'groq/text.sse');
  assert.match(text.done?.text ?? '', /^Introducing "Luminaria"/);
  assert.equal(text.done?.reasoning ?? '', '');
  assert.deepEqual(text.done?.usage, { promptTokens: 45, completionTokens: 662, totalTokens: 707 });
});

test('DeepSeek text cut at max_tokens: finish "length" kept; zero cache hits are placeholders, not figures', async (t) => {
  const r = await replay(t, 'deepseek/text-length.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.finishReason, 'length');
  assert.match(r.done?.text ?? '', /^## \*\*Holiday Name:\*\* Starlight Remembrance/);
  assert.deepEqual(r.done?.usage, { promptTokens: 13, completionTokens: 400, totalTokens: 413 });
});

test('xAI grok-3-mini: reasoning_content apart from a one-word reply; usage in a choices:[] chunk with cached and reasoning tokens', async (t) => {
  const r = await replay(t, 'xai/text-reasoning.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.text, 'Grok');
  assert.match(r.done?.reasoning ?? '', /^First, the user said: "Say a single word\."/);
  assert.equal(r.streamed('reasoning'), r.done?.reasoning);
  assert.deepEqual(r.done?.usage, { promptTokens: 12, completionTokens: 2, totalTokens: 354, cachedTokens: 11, reasoningTokens: 340 });
});

test('Alibaba Qwen qwen3-max text: finish in an empty-content chunk, usage after it in choices:[]', async (t) => {
  const r = await replay(t, 'qwen/text.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.finishReason, 'stop');
  assert.match(r.done?.text ?? '', /^## The Festival of Shared Stories: "Taleweave Day"/);
  assert.deepEqual(r.done?.usage, { promptTokens: 18, completionTokens: 779, totalTokens: 797 });
});

test('Azure AI Foundry deepseek-v4-pro: null fields in every delta, reasoning apart, a top-level zero reasoning_tokens not shown', async (t) => {
  const r = await replay(t, 'azure/deepseek-reasoning.sse');
  assert.equal(r.error, undefined);
  assert.match(r.done?.reasoning ?? '', /^We need to invent a new holiday around the latest Knicks gam/);
  assert.match(r.done?.text ?? '', /^Exciting news, Knicks fans/);
  assert.doesNotMatch(r.done?.text ?? '', /null/);
  assert.equal(r.streamed('text'), r.done?.text);
  assert.equal(r.done?.finishReason, 'stop');
  assert.deepEqual(r.done?.toolCalls, []);
  assert.deepEqual(r.done?.usage, { promptTokens: 19, completionTokens: 1720, totalTokens: 1739 });
});

test('GitHub Copilot (Gemini 3 Pro / 2.5 Pro behind Copilot): reasoning_text apart, reasoning_opaque kept, zero usage placeholders on every chunk ignored', async (t) => {
  const two = await replay(t, 'copilot/gemini-3-pro-reasoning-two-calls.sse');
  assert.equal(two.error, undefined);
  assert.equal(two.done?.text, '');
  assert.match(two.done?.reasoning ?? '', /^\*\*Understanding Dayzee's Purpose\*\*\n\nI'm starting to get a better handle on `dayzee`\.\n\n\*\*Assessing/);
  assert.equal(two.done?.finishReason, 'tool_calls');
  assert.deepEqual(two.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments), c.providerId]), [
    ['read_file', { filePath: '/README.md' }, 'call_abc123'],
    ['read_file', { filePath: '/mix.exs' }, 'call_def456'],
  ]);
  assert.equal(two.done?.reasoningOpaque, '4CUQ6696CwSXOdQ5rtvDimqA91tBzfmga4ieRbmZ5P67T2NLW3');
  // Copilot puts reasoning_tokens beside (not inside) completion_tokens_details.
  assert.deepEqual(two.done?.usage, { promptTokens: 19581, completionTokens: 53, totalTokens: 19768, cachedTokens: 17068, reasoningTokens: 134 });

  const end = await replay(t, 'copilot/gemini-3-pro-opaque-at-end.sse');
  assert.equal(end.done?.text, 'I am Tidewave, a highly skilled AI coding agent.\n\nHow can I help you?');
  assert.equal(end.streamed('text'), end.done?.text);
  assert.equal(end.done?.reasoningOpaque, '/PMlTqxqSJZnUBDHgnnJKLVI4eZQ');
  assert.deepEqual(end.done?.usage, { promptTokens: 5778, completionTokens: 59, totalTokens: 5932, reasoningTokens: 95 });

  const same = await replay(t, 'copilot/gemini-2.5-pro-opaque-with-content.sse');
  assert.equal(same.done?.text, "Of course. I'm thinking right now. What's on your mind?");
  assert.equal(same.done?.reasoningOpaque, 'ExXaGwW7jBo39OXRe9EPoFGN1rOtLJBx');
  assert.doesNotMatch(same.done?.text ?? '', /Framing the Response/);
});

test('GitHub Copilot: a reasoning-then-call turn sends its reasoning_opaque and the provider call id back on the next request', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ raw: fixture('copilot/gemini-3-pro-reasoning-to-tool-call.sse') }, { text: 'It is 2.' });
  const registry = new ToolRegistry([
    { name: 'project_eval', description: 'eval', policy: 'read', parameters: z.object({ code: z.string() }), execute: async () => ({ out: '2' }) } as unknown as ToolDefinition,
  ]);
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'gemini-3-pro-preview' },
    registry,
    makeContext: (signal) => ({ signal }) as never,
    requestApproval: async () => ({ decision: 'once' }),
  });
  agent.send('eval 1 + 1');
  await agent.idle();
  assert.equal(fake.chatRequests.length, 2);
  const sent = fake.chatRequests[1].body?.messages ?? [];
  const assistant = sent.find((m) => m.role === 'assistant') as Record<string, unknown> | undefined;
  assert.ok(assistant, 'the assistant turn went back');
  assert.equal(assistant.reasoning_opaque, 'ytGNWFf2doK38peANDvm7whkLPKrd+Fv6/k34zEPBF6Qwitj4bTZT0FBXleydLb6');
  assert.deepEqual((assistant.tool_calls as { id: string; function: { name: string; arguments: string } }[]).map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]), [
    ['call_MHw3RDhmT1J5Z3B6WlhpVjlveTc', 'project_eval', { code: '1 + 1' }],
  ]);
  const tool = sent.find((m) => m.role === 'tool') as { tool_call_id: string } | undefined;
  assert.equal(tool?.tool_call_id, 'call_MHw3RDhmT1J5Z3B6WlhpVjlveTc');
  assert.equal(agent.messages.at(-1)?.content, 'It is 2.');
});

test('Snowflake Cortex (claude-sonnet-4-6): no finish_reason at all, ids empty, refusal "" on every chunk; the reply is complete', async (t) => {
  const r = await replay(t, 'snowflake/text-no-finish-reason.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.text, '4');
  assert.equal(r.done?.finishReason, 'stop');
  assert.deepEqual(r.done?.toolCalls, []);
  assert.deepEqual(r.done?.usage, { promptTokens: 22, completionTokens: 5, totalTokens: 27 });
  assert.equal(r.fake.chatRequests.length, 1);
});

test('Snowflake Cortex thinking: reasoning that arrives only as reasoning_details text is reasoning, not lost and not the reply', async (t) => {
  const r = await replay(t, 'snowflake/thinking.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.reasoning, '15 * 27 = 405');
  assert.equal(r.streamed('reasoning'), '15 * 27 = 405');
  assert.equal(r.done?.text, "15 × 27 = **405**\n\nHere's the breakdown:\n- 15 × 20 = 300\n- 15 × 7 = 105\n- 300 + 105 = **405**");
  assert.equal(r.done?.finishReason, 'stop');
  assert.deepEqual(r.done?.usage, { promptTokens: 45, completionTokens: 73, totalTokens: 118 });
});

test('OpenRouter: reasoning given twice (reasoning and reasoning_details) is kept once; encrypted-only reasoning (o3) adds nothing', async (t) => {
  const claude = await replay(t, 'openrouter/claude-reasoning.sse');
  assert.equal(claude.error, undefined);
  assert.equal(claude.done?.reasoning, 'This is a simple arithmetic question. 2+2 equals 4.');
  assert.equal(claude.done?.text, '2 + 2 = 4');
  assert.equal(claude.done?.usage?.reasoningTokens, 13);
  const o3 = await replay(t, 'openrouter/o3-reasoning.sse');
  assert.equal(o3.error, undefined);
  assert.equal(o3.done?.reasoning ?? '', '');
  assert.match(o3.done?.text ?? '', /^I’m ChatGPT, a large-language-model assistant created by OpenAI\./);
  assert.doesNotMatch(o3.done?.text ?? '', /gAAAA/);
});

test('OpenRouter, a real error inside the 200 stream (Minimax "Token limit reached", code 400): one request, the server’s message, no retry', async (t) => {
  const r = await replay(t, 'openrouter/recorded-error-in-stream.sse');
  assert.equal(r.fake.chatRequests.length, 1);
  assert.equal(r.error?.kind, 'bad_response');
  assert.match(r.error?.message ?? '', /Token limit reached/);
  assert.equal((r.error?.message.match(/Token limit reached/g) ?? []).length, 1, 'said once');
  assert.doesNotMatch(r.error?.message ?? '', /partial reply is kept/, 'no reply text arrived, only reasoning');
  assert.ok(!r.events.some((e) => e.type === 'retry'));
});

test('Groq `event: error` (tool_use_failed, status_code 400) after reasoning: not retried, the server’s message; after text the partial reply is kept', async (t) => {
  const a = await replay(t, 'groq/tool-use-failed-event-error.sse');
  assert.equal(a.fake.chatRequests.length, 1);
  assert.equal(a.error?.kind, 'bad_response');
  assert.match(a.error?.message ?? '', /^.*Tool call validation failed: .*did not match schema/);
  assert.doesNotMatch(a.error?.message ?? '', /partial reply is kept/);
  assert.ok(!a.events.some((e) => e.type === 'retry'));
  const b = await replay(t, 'groq/tool-use-failed-after-text.sse');
  assert.equal(b.fake.chatRequests.length, 1);
  assert.equal(b.error?.kind, 'bad_response');
  assert.equal(b.error?.partialText, 'maybe');
  assert.match(b.error?.message ?? '', /Tool choice is required, but model did not call a tool/);
});

test('Z.ai glm-4.7 thinking: reasoning_content apart from the reply, reasoning tokens shown', async (t) => {
  const r = await replay(t, 'zai/thinking.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.text, '4');
  assert.match(r.done?.reasoning ?? '', /^\n1\. {2}\*\*Analyze the User's Request:\*\*/);
  assert.equal(r.streamed('reasoning'), r.done?.reasoning);
  assert.deepEqual(r.done?.usage, { promptTokens: 13, completionTokens: 564, totalTokens: 577, reasoningTokens: 561 });
});

test('GitHub Copilot claude-3.7-sonnet: text, then one call whose name comes alone and arguments in pieces; no `object`, usage with the finish', async (t) => {
  const r = await replay(t, 'copilot/claude-3.7-tool-call.sse');
  assert.equal(r.error, undefined);
  assert.match(r.done?.text ?? '', /^I need to check the weather for both London and Paris, .*Let me check the weather for London first, and then for Paris:$/s);
  assert.equal(r.done?.finishReason, 'tool_calls');
  assert.deepEqual(r.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments), c.providerId]), [
    ['weather', { location: 'London, UK', units: 'celsius' }, 'tooluse_ZnSMh7lhSxWDIuVBKd_vLg'],
  ]);
  assert.deepEqual(r.done?.usage, { promptTokens: 422, completionTokens: 48, totalTokens: 470 });
});

test('GitHub Copilot gemini-3-pro-preview: reasoning, a line of text, then a call with reasoning_opaque; no [DONE] after the finish is still complete', async (t) => {
  const r = await replay(t, 'copilot/gemini-3-pro-text-then-call.sse');
  assert.equal(r.error, undefined);
  assert.equal(r.done?.text, 'I will search for the `quotes.lua` file to locate it within the repository.\n');
  assert.match(r.done?.reasoning ?? '', /^\*\*Discovering Update Scope\*\*/);
  assert.doesNotMatch(r.done?.text ?? '', /Discovering|Commencing/);
  assert.deepEqual(r.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]), [['file_search', { query: '**/quotes.lua' }]]);
  assert.match(r.done?.reasoningOpaque ?? '', /^lgxMQq0m\/J6cVjsaH8bbfhxHtAvK4Y/);
  assert.equal(r.done?.usage?.reasoningTokens, 92);
});

test('OpenRouter (OpenAI gpt-5.4-mini / gpt-5.5): reasoning summaries given twice are read once; a streamed call assembles', async (t) => {
  const call = await replay(t, 'openrouter/gpt-5.4-mini-tool-call.sse');
  assert.equal(call.error, undefined);
  assert.equal(call.done?.text, '');
  assert.equal(call.done?.reasoning?.length, 412);
  assert.match(call.done?.reasoning ?? '', /^\*\*Locating file for user\*\*\n\nI need to comply/);
  assert.equal(call.done?.finishReason, 'tool_calls');
  assert.deepEqual(call.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments), c.providerId]), [
    ['read_file', { filepath: '/Users/Oli/Code/Neovim/codecompanion.nvim/version.txt', end_line_number_base_zero: -1, start_line_number_base_zero: 0 }, 'call_yqZoquE7i7crGNV4S4uZo902'],
  ]);
  assert.deepEqual(call.done?.usage, { promptTokens: 2817, completionTokens: 91, totalTokens: 2908, reasoningTokens: 39 });
  const text = await replay(t, 'openrouter/gpt-5.5-reasoning-summary.sse');
  assert.equal(text.done?.text, 'Expressive language');
  assert.equal(text.done?.reasoning?.length, 508);
  assert.equal(text.streamed('reasoning'), text.done?.reasoning);
});

test('Gemini 3 on the compatible endpoint: a call’s extra_content.google.thought_signature goes back with that call (else Gemini answers 400)', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ raw: fixture('gemini/gemini-3-thought-signature.sse') }, { text: 'Both read.' });
  const registry = new ToolRegistry([
    { name: 'read_file', description: 'read', policy: 'read', parameters: z.object({ path: z.string() }), execute: async () => ({ out: 'x' }) } as unknown as ToolDefinition,
  ]);
  const agent = new Agent({
    provider: { baseURL: fake.url, apiKey: 'k', model: 'gemini-3-pro-preview' },
    registry,
    makeContext: (signal) => ({ signal }) as never,
    requestApproval: async () => ({ decision: 'once' }),
  });
  agent.send('read a and b');
  await agent.idle();
  assert.equal(fake.chatRequests.length, 2);
  const sent = fake.chatRequests[1].body?.messages ?? [];
  const assistant = sent.find((m) => m.role === 'assistant') as { tool_calls: Record<string, unknown>[] } | undefined;
  assert.ok(assistant);
  assert.deepEqual(
    assistant.tool_calls.map((c) => [c.id, c.extra_content]),
    [
      ['function-call-8012775226145637123', { google: { thought_signature: 'EpYCCpMCAXLI2nxConstructedSignatureA==' } }],
      ['function-call-8012775226145637124', undefined],
    ],
  );
  assert.ok(!JSON.stringify(sent).includes('"caboose"'), 'our metadata stays home');
  assert.equal(agent.messages.at(-1)?.content, 'Both read.');
});

test('Mistral magistral-medium: 58 thinking parts are reasoning, later plain-string content the reply, no [object Object]', async (t) => {
  const r = await replay(t, 'mistral/magistral-thinking.sse');
  assert.equal(r.error, undefined);
  assert.match(r.done?.reasoning ?? '', /^Okay, the user is asking how to cross the street\./);
  assert.match(r.done?.text ?? '', /^To cross the street safely, follow these steps:\n\n1\. Look both ways/);
  assert.doesNotMatch((r.done?.text ?? '') + (r.done?.reasoning ?? ''), /\[object|"type"/);
  assert.equal(r.streamed('text'), r.done?.text);
  assert.deepEqual(r.done?.usage, { promptTokens: 10, completionTokens: 232, totalTokens: 242 });
});

test('DeepSeek deepseek-reasoner and deepseek-v4-flash: reasoning apart, parallel calls (one without parameters), cached and reasoning tokens', async (t) => {
  const reasoner = await replay(t, 'deepseek/reasoner-thinking.sse');
  assert.equal(reasoner.done?.text, 'Hello there! 😊 How can I help you today?');
  assert.match(reasoner.done?.reasoning ?? '', /^Hmm, the user just said "Hello"\./);
  assert.deepEqual(reasoner.done?.usage, { promptTokens: 6, completionTokens: 212, totalTokens: 218, reasoningTokens: 198 });
  const noParams = await replay(t, 'deepseek/v4-flash-tool-no-params.sse');
  assert.equal(noParams.done?.text, 'Let me check the weather for both locations.');
  assert.deepEqual(noParams.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments), c.providerId]), [
    ['weather_with_default', {}, 'call_00_YOblREljHrrLmGtaHE72LNh3'],
    ['weather_with_default', { location: 'Paris, France', units: 'celsius' }, 'call_01_bKIQfFOpGabMlK7midnRZaBQ'],
  ]);
  assert.deepEqual(noParams.done?.usage, { promptTokens: 1387, completionTokens: 156, totalTokens: 1543, cachedTokens: 256, reasoningTokens: 69 });
  const two = await replay(t, 'deepseek/v4-tools.sse');
  assert.equal(two.done?.finishReason, 'tool_calls');
  assert.deepEqual(two.done?.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)]), [
    ['weather', { location: 'London, UK', units: 'celsius' }],
    ['weather', { location: 'Paris, France', units: 'celsius' }],
  ]);
  assert.equal(two.done?.usage?.cachedTokens, 1024);
});

test('one reasoning text per delta: the same text under two names is not doubled; reasoning_details summaries count, encrypted ones not', async () => {
  const { StreamAssembler } = await import('../../src/agent/stream');
  const asm = new StreamAssembler();
  asm.push({ choices: [{ delta: { reasoning: 'Think', reasoning_content: 'Think' } }] });
  asm.push({ choices: [{ delta: { reasoning_details: [{ type: 'reasoning.summary', summary: ' more' }, { type: 'reasoning.encrypted', data: 'gAAAA' }] } }] });
  asm.push({ choices: [{ delta: { reasoning: null, reasoning_details: [{ type: 'reasoning.encrypted', data: 'gAAAA' }], content: 'Done.' } }] });
  assert.equal(asm.reasoning, 'Think more');
  assert.equal(asm.text, 'Done.');
});

test('after a switch to another model, what one provider gave (its call ids, Gemini signatures, Copilot opaque reasoning) is not sent to the other', async () => {
  const { assistantMessage, toolMessage } = await import('../../src/agent/messages');
  const { toWireMessages } = await import('../../src/agent/stream');
  const history = [
    { role: 'user' as const, content: 'read a' },
    assistantMessage('', [{ id: 'own000001', providerId: 'function-call-1', name: 'read_file', arguments: '{}', extraContent: { google: { thought_signature: 'SIG' } } }], { model: 'gemini-3-pro-preview' }),
    toolMessage('own000001', { ok: true, data: {} }),
    assistantMessage('Done.', [], { model: 'gemini-3-pro-preview', reasoning: 'r', reasoningOpaque: 'OPAQUE' }),
  ];
  const same = toWireMessages(history, 'gemini-3-pro-preview') as unknown as Record<string, unknown>[];
  assert.deepEqual((same[1].tool_calls as Record<string, unknown>[])[0].extra_content, { google: { thought_signature: 'SIG' } });
  assert.equal((same[1].tool_calls as Record<string, unknown>[])[0].id, 'function-call-1');
  assert.equal(same[2].tool_call_id, 'function-call-1');
  assert.equal(same[3].reasoning_opaque, 'OPAQUE');
  const other = toWireMessages(history, 'gpt-4.1') as unknown as Record<string, unknown>[];
  assert.equal((other[1].tool_calls as Record<string, unknown>[])[0].extra_content, undefined);
  assert.equal((other[1].tool_calls as Record<string, unknown>[])[0].id, 'own000001', 'our own id, valid everywhere');
  assert.equal(other[2].tool_call_id, 'own000001');
  assert.equal(other[3].reasoning_opaque, undefined);
  assert.ok(!JSON.stringify(other).includes('caboose'));
  // Without a model (callers that do not say), everything the provider gave goes back as before.
  assert.equal((toWireMessages(history) as unknown as Record<string, unknown>[])[3].reasoning_opaque, 'OPAQUE');
});

test('an error object without an `error` key (`{"object":"error", message, code}`: older vLLM, FastChat-style servers) is an error, not an empty complete reply', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({
    raw:
      'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n' +
      'data: {"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}\n\n' +
      'data: [DONE]\n\n',
  });
  const provider = new OpenAIProvider({ baseURL: fake.url, apiKey: 'k', model: 'm', retryBaseDelayMs: 1 });
  const events: ModelEvent[] = [];
  let error: ProviderError | undefined;
  try {
    for await (const ev of provider.stream({ messages })) events.push(ev);
  } catch (e) {
    error = e as ProviderError;
  }
  assert.ok(error, 'not a complete reply');
  assert.ok(!events.some((e) => e.type === 'done'));
  assert.match(error.message, /maximum context length is 4096 tokens/);
  assert.equal(fake.chatRequests.length, 1);
});

test('llama.cpp: prompt tokens reused from its cache (`timings.cache_n` beside usage) show as cached; cache_n 0 is not a figure', async () => {
  const { StreamAssembler } = await import('../../src/agent/stream');
  const asm = new StreamAssembler();
  asm.push({ choices: [{ index: 0, delta: { content: 'Hi' } }], object: 'chat.completion.chunk' });
  asm.push({ choices: [{ finish_reason: 'stop', index: 0, delta: {} }], object: 'chat.completion.chunk' });
  asm.push({
    choices: [],
    object: 'chat.completion.chunk',
    usage: { completion_tokens: 61, prompt_tokens: 1350, total_tokens: 1411 },
    timings: { cache_n: 1100, prompt_n: 250, prompt_ms: 277.8, predicted_n: 61, predicted_ms: 1605.3 },
  });
  assert.deepEqual(asm.usage, { promptTokens: 1350, completionTokens: 61, totalTokens: 1411, cachedTokens: 1100 });
  const cold = new StreamAssembler();
  cold.push({ choices: [], usage: { completion_tokens: 3, prompt_tokens: 13, total_tokens: 16 }, timings: { cache_n: 0, prompt_n: 13 } });
  assert.deepEqual(cold.usage, { promptTokens: 13, completionTokens: 3, totalTokens: 16 });
  // The server's own cached figure wins when it gives one.
  const both = new StreamAssembler();
  both.push({ choices: [], usage: { completion_tokens: 3, prompt_tokens: 13, total_tokens: 16, prompt_tokens_details: { cached_tokens: 9 } }, timings: { cache_n: 8 } });
  assert.equal(both.usage?.cachedTokens, 9);
});
