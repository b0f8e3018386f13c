import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeOpenAI } from '../support/fake-openai';
import { OpenAIProvider, ProviderError, parseRetryAfter, type ModelEvent, type ModelRequest } from '../../src/agent/provider';

const messages: ModelRequest['messages'] = [{ role: 'user', content: 'hi' }];

async function collect(p: OpenAIProvider, req: ModelRequest): Promise<{ events: ModelEvent[]; error?: ProviderError }> {
  const events: ModelEvent[] = [];
  try {
    for await (const ev of p.stream(req)) events.push(ev);
    return { events };
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected ProviderError, got ${String(err)}`);
    return { events, error: err };
  }
}

const done = (events: ModelEvent[]) => {
  const last = events.at(-1);
  assert.equal(last?.type, 'done');
  return last as Extract<ModelEvent, { type: 'done' }>;
};

async function setup(t: { after(fn: () => unknown): void }, extra: Partial<ConstructorParameters<typeof OpenAIProvider>[0]> = {}) {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const provider = new OpenAIProvider({ baseURL: fake.url, apiKey: 'sk-test', model: 'fake-model', retryBaseDelayMs: 1, ...extra });
  return { fake, provider };
}

test('streams text deltas, usage and a done event; sends stream_options, tools, headers, max_tokens', async (t) => {
  const { fake, provider } = await setup(t, { headers: { 'x-extra': 'yes' }, maxTokens: 123 });
  fake.script({ text: 'Hello big world', usage: { prompt_tokens: 7, completion_tokens: 3 } });
  const { events, error } = await collect(provider, {
    messages,
    tools: [{ name: 'read_file', description: 'Read', parameters: { type: 'object', properties: {} } }],
  });
  assert.equal(error, undefined);
  const texts = events.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta);
  assert.deepEqual(texts, ['Hello', ' big', ' world']);
  const d = done(events);
  assert.equal(d.text, 'Hello big world');
  assert.equal(d.finishReason, 'stop');
  assert.deepEqual(d.usage, { promptTokens: 7, completionTokens: 3, totalTokens: 10 });
  const body = fake.chatRequests[0].body;
  assert.equal(body?.stream, true);
  assert.deepEqual(body?.stream_options, { include_usage: true });
  assert.equal(body?.model, 'fake-model');
  assert.equal(body?.max_tokens, 123);
  assert.equal(body?.tools?.[0].function.name, 'read_file');
  assert.equal(fake.chatRequests[0].headers['x-extra'], 'yes');
  assert.equal(fake.chatRequests[0].headers.authorization, 'Bearer sk-test');
});

test('assembles parallel tool calls from argument deltas', async (t) => {
  const { fake, provider } = await setup(t);
  fake.script({
    toolCalls: [
      { id: 'c1', name: 'read_file', arguments: { path: 'a.ts' } },
      { id: 'c2', name: 'grep', arguments: '{"pattern": "foo", "path": "src"}' },
    ],
  });
  const { events } = await collect(provider, { messages });
  const d = done(events);
  assert.equal(d.finishReason, 'tool_calls');
  assert.deepEqual(
    d.toolCalls.map(({ id: _own, ...c }) => c),
    [
      { providerId: 'c1', name: 'read_file', arguments: '{"path":"a.ts"}' },
      { providerId: 'c2', name: 'grep', arguments: '{"pattern": "foo", "path": "src"}' },
    ],
  );
  assert.ok(d.toolCalls.every((c) => /^[A-Za-z0-9]{9}$/.test(c.id)), 'ids of our own');
  assert.ok(events.filter((e) => e.type === 'tool_call_delta').length >= 4);
});

test('429 with retry-after: 0 then success retries without output duplication', async (t) => {
  const { fake, provider } = await setup(t);
  fake.script({ status: 429, headers: { 'retry-after': '0' } }, { status: 503 }, { text: 'fine' });
  const { events, error } = await collect(provider, { messages });
  assert.equal(error, undefined);
  const retries = events.filter((e) => e.type === 'retry') as Extract<ModelEvent, { type: 'retry' }>[];
  assert.deepEqual(retries.map((r) => r.error.kind), ['rate_limited', 'server']);
  assert.equal(retries[0].delayMs, 0);
  assert.equal(done(events).text, 'fine');
  assert.equal(fake.chatRequests.length, 3);
});

test('gives up after maxRetries with the last error', async (t) => {
  const { fake, provider } = await setup(t, { maxRetries: 1 });
  fake.script({ status: 500 }, { status: 500 }, { text: 'never' });
  const { error } = await collect(provider, { messages });
  assert.equal(error?.kind, 'server');
  assert.equal(error?.status, 500);
  assert.match(error?.message ?? '', /server error 500/);
  assert.equal(fake.chatRequests.length, 2);
});

test('401 and 404 map to clear messages and are not retried', async (t) => {
  const { fake, provider } = await setup(t);
  fake.script({ status: 401 }, { status: 404 }, { status: 404, body: { error: { message: 'no such route' } } });
  const auth = await collect(provider, { messages });
  assert.equal(auth.error?.kind, 'auth');
  assert.match(auth.error?.message ?? '', /authentication failed.*check api_key \/ OPENAI_API_KEY/);
  const model = await collect(provider, { messages });
  assert.equal(model.error?.kind, 'not_found');
  assert.match(model.error?.message ?? '', new RegExp(`model fake-model not found at ${fake.url.replace(/[.]/g, '\\.')}`));
  const route = await collect(provider, { messages });
  assert.match(route.error?.message ?? '', /endpoint not found/);
  assert.equal(fake.chatRequests.length, 3);
});

test('a server that echoes the API key in its error: the message shown (and stored) names it without it', async (t) => {
  const key = 'sk-canary-0123456789abcdef';
  const { fake, provider } = await setup(t, { apiKey: key });
  fake.script({ status: 401, body: { error: { message: `Incorrect API key provided: ${key}. Try another.` } } });
  const { error } = await collect(provider, { messages });
  assert.equal(error?.kind, 'auth');
  assert.equal(error?.status, 401);
  assert.match(error?.message ?? '', /Incorrect API key provided: \[API key\]\. Try another\./);
  assert.ok(!(error?.message ?? '').includes(key));
});

test('unreachable endpoint: "cannot reach <baseURL>"', async () => {
  const srv = http.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  const baseURL = `http://127.0.0.1:${port}/v1`;
  const provider = new OpenAIProvider({ baseURL, apiKey: 'k', model: 'm', maxRetries: 1, retryBaseDelayMs: 1 });
  const { events, error } = await collect(provider, { messages });
  assert.equal(error?.kind, 'unreachable');
  assert.ok(error?.message.startsWith(`cannot reach ${baseURL}`), error?.message);
  assert.match(error?.message ?? '', /ECONNREFUSED/);
  assert.equal(events.filter((e) => e.type === 'retry').length, 1);
});

test('a stream cut midway keeps the partial text and reports interrupted (no retry)', async (t) => {
  const { fake, provider } = await setup(t);
  fake.script({ text: 'one two three four', cutAfterChunks: 2 });
  const { events, error } = await collect(provider, { messages });
  assert.equal(error?.kind, 'interrupted');
  assert.equal(error?.partialText, 'one two');
  assert.deepEqual(events.filter((e) => e.type === 'text').map((e) => (e as { delta: string }).delta), ['one', ' two']);
  assert.equal(fake.chatRequests.length, 1);
});

test('abort during a hang and during a gated stream → aborted, promptly', async (t) => {
  const { fake, provider } = await setup(t);
  fake.script({ hang: true });
  const ac = new AbortController();
  const p = collect(provider, { messages, signal: ac.signal });
  await fake.waitForRequest(1);
  ac.abort();
  const r = await p;
  assert.equal(r.error?.kind, 'aborted');

  const gate = new Promise<void>(() => undefined);
  fake.script({ text: 'a b c', gate });
  const ac2 = new AbortController();
  const events: ModelEvent[] = [];
  let err: unknown;
  for await (const ev of (async function* () {
    try {
      for await (const e of provider.stream({ messages, signal: ac2.signal })) {
        if (e.type === 'text') ac2.abort();
        yield e;
      }
    } catch (e) {
      err = e;
    }
  })()) events.push(ev);
  assert.ok(err instanceof ProviderError);
  assert.equal(err.kind, 'aborted');
  assert.equal(err.partialText, 'a');
  await fake.waitForClientClose(2);
});

test('parseRetryAfter: seconds, ms and HTTP dates', () => {
  assert.equal(parseRetryAfter(new Headers({ 'retry-after': '2' })), 2000);
  assert.equal(parseRetryAfter(new Headers({ 'retry-after-ms': '150' })), 150);
  const now = Date.parse('2025-01-01T00:00:00Z');
  assert.equal(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }), now), 5000);
  assert.equal(parseRetryAfter(new Headers({})), undefined);
});

test('a fast stream: the deltas of one read come as one text event, the text unchanged', async (t) => {
  const { fake, provider } = await setup(t);
  const chunks = Array.from({ length: 300 }, (_, i) => `w${i} `);
  fake.script({ text: chunks.join(''), chunks, delayMs: 0 });
  const { events, error } = await collect(provider, { messages });
  assert.equal(error, undefined);
  const texts = events.filter((e): e is Extract<ModelEvent, { type: 'text' }> => e.type === 'text');
  assert.equal(texts.map((e) => e.delta).join(''), chunks.join(''));
  assert.equal(done(events).text, chunks.join(''));
  // 300 chunks written back to back reach the client in far fewer reads.
  assert.ok(texts.length < chunks.length, `${texts.length} text events for ${chunks.length} chunks`);
});
