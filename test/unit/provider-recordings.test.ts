/**
 * Issue 21, more real recordings (test/fixtures/streams/, sources and licences in SOURCE.md) replayed byte for
 * byte through a local fake server and the real model client: what the user would get from each service.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startFakeOpenAI } from '../support/fake-openai';
import { OpenAIProvider, ProviderError, type ModelEvent, type ModelRequest } from '../../src/agent/provider';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'streams');
const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), 'utf8');
const messages: ModelRequest['messages'] = [{ role: 'user', content: 'hi' }];

async function replay(t: { after(fn: () => unknown): void }, name: string) {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ raw: fixture(name) });
  const provider = new OpenAIProvider({ baseURL: fake.url, apiKey: 'sk-test', model: 'm', retryBaseDelayMs: 1, retryMaxDelayMs: 5 });
  const events: ModelEvent[] = [];
  let error: ProviderError | undefined;
  try {
    for await (const ev of provider.stream({ messages })) events.push(ev);
  } catch (e) {
    assert.ok(e instanceof ProviderError, String(e));
    error = e;
  }
  const done = events.find((e) => e.type === 'done') as Extract<ModelEvent, { type: 'done' }> | undefined;
  const streamed = (type: 'text' | 'reasoning'): string =>
    events.filter((e) => e.type === type).map((e) => (e as { delta: string }).delta).join('');
  return { fake, events, error, done, streamed };
}

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
