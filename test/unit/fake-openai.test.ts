import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';

interface Chunk {
  choices: { index: number; delta: { content?: string; role?: string; tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[] }; finish_reason: string | null }[];
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

function post(fake: FakeOpenAI, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${fake.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-key' },
    body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], ...body }),
    signal,
  });
}

/** Reads an SSE response, returning parsed chunks and whether `[DONE]` arrived. */
async function readSse(res: Response, onChunk?: (c: Chunk) => void): Promise<{ chunks: Chunk[]; done: boolean }> {
  const chunks: Chunk[] = [];
  let done = false;
  let buf = '';
  const decoder = new TextDecoder();
  assert.ok(res.body);
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(part, { stream: true });
    let idx: number;
    while ((idx = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, idx);
      buf = buf.slice(idx + 2);
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]') done = true;
      else {
        const c = JSON.parse(data) as Chunk;
        chunks.push(c);
        onChunk?.(c);
      }
    }
  }
  return { chunks, done };
}

const textOf = (chunks: Chunk[]): string => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

test('GET /v1/models lists models and is recorded', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  assert.match(fake.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const res = await fetch(`${fake.url}/models`);
  assert.equal(res.status, 200);
  const json = (await res.json()) as { data: { id: string }[] };
  assert.deepEqual(json.data.map((m) => m.id), ['fake-model']);
  assert.equal(fake.requests[0].method, 'GET');
  assert.equal(fake.requests[0].path, '/v1/models');
  assert.equal(fake.pending, 0);
});

test('streams scripted text in several chunks, records the body, then falls back to the default reply', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ text: 'Hello big world' });
  const res = await post(fake, { stream: true, stream_options: { include_usage: true } });
  assert.equal(res.headers.get('content-type'), 'text/event-stream');
  const { chunks, done } = await readSse(res);
  assert.ok(done);
  assert.equal(textOf(chunks), 'Hello big world');
  const contentChunks = chunks.filter((c) => (c.choices[0]?.delta.content ?? '') !== '');
  assert.deepEqual(contentChunks.map((c) => c.choices[0].delta.content), ['Hello', ' big', ' world']);
  const finish = chunks.find((c) => c.choices[0]?.finish_reason);
  assert.equal(finish?.choices[0].finish_reason, 'stop');
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage?.total_tokens, 15);

  const req = fake.requests[0];
  assert.equal(req.headers.authorization, 'Bearer test-key');
  assert.equal(req.body?.messages?.[0].content, 'hi');

  // Script empty → default 'ok', no usage chunk unless asked for.
  const again = await readSse(await post(fake, { stream: true }));
  assert.equal(textOf(again.chunks), 'ok');
  assert.ok(again.chunks.every((c) => c.usage === undefined));
  assert.equal(fake.unscripted, 1);
});

test('explicit chunks and a gate hold the stream after the first chunk', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  fake.script({ text: 'abc', chunks: ['a', 'b', 'c'], gate });
  const seen: string[] = [];
  let firstSeen!: () => void;
  const first = new Promise<void>((r) => (firstSeen = r));
  const reading = readSse(await post(fake, { stream: true }), (c) => {
    const d = c.choices[0]?.delta.content;
    if (d) {
      seen.push(d);
      firstSeen();
    }
  });
  await first;
  assert.deepEqual(seen, ['a']);
  release();
  const { done } = await reading;
  assert.ok(done);
  assert.deepEqual(seen, ['a', 'b', 'c']);
});

test('tool calls stream like OpenAI: id+name first, arguments split, index per call, finish tool_calls', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({
    text: 'Let me look.',
    toolCalls: [
      { id: 'call_a', name: 'read_file', arguments: { path: 'src/a.ts' } },
      { name: 'grep', arguments: '{"pattern":"x"' },
    ],
  });
  const { chunks, done } = await readSse(await post(fake, { stream: true }));
  assert.ok(done);
  assert.equal(textOf(chunks), 'Let me look.');
  const calls: { id?: string; name: string; args: string; deltas: number }[] = [];
  for (const c of chunks) {
    for (const tc of c.choices[0]?.delta.tool_calls ?? []) {
      if (tc.id) calls[tc.index] = { id: tc.id, name: tc.function?.name ?? '', args: '', deltas: 0 };
      calls[tc.index].args += tc.function?.arguments ?? '';
      calls[tc.index].deltas++;
    }
  }
  assert.equal(calls.length, 2);
  assert.equal(calls[0].id, 'call_a');
  assert.equal(calls[0].name, 'read_file');
  assert.deepEqual(JSON.parse(calls[0].args), { path: 'src/a.ts' });
  assert.ok(calls[0].deltas >= 3, 'arguments are split across deltas');
  assert.match(calls[1].id ?? '', /^call_/);
  assert.equal(calls[1].args, '{"pattern":"x"', 'string arguments are sent verbatim, even malformed');
  assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
});

test('HTTP errors carry status, headers and an OpenAI-style body', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ status: 429, headers: { 'retry-after': '0' } }, { status: 401 }, { status: 500, body: 'boom' });
  const r1 = await post(fake, { stream: true });
  assert.equal(r1.status, 429);
  assert.equal(r1.headers.get('retry-after'), '0');
  assert.match(((await r1.json()) as { error: { message: string } }).error.message, /Rate limit/);
  const r2 = await post(fake, { stream: true });
  assert.equal(r2.status, 401);
  await r2.body?.cancel();
  const r3 = await post(fake, { stream: true });
  assert.equal(r3.status, 500);
  assert.equal(await r3.text(), 'boom');
});

test('cutAfterChunks destroys the connection without [DONE]', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ text: 'one two three four', cutAfterChunks: 2 });
  const res = await post(fake, { stream: true });
  const seen: Chunk[] = [];
  await assert.rejects(readSse(res, (c) => seen.push(c)));
  assert.equal(textOf(seen), 'one two');
  assert.ok(seen.every((c) => c.choices[0]?.finish_reason === null));
});

test('hang keeps the request open until the client aborts', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ hang: true });
  const ac = new AbortController();
  const pending = post(fake, { stream: true }, ac.signal);
  await fake.waitForRequest(1);
  ac.abort();
  await assert.rejects(pending, /abort/i);
  const req = await fake.waitForClientClose(1);
  assert.equal(req.clientClosed, true);
});

test('stream: false answers one chat.completion object', async (t) => {
  const fake = await startFakeOpenAI({ defaultReply: { status: 500 } });
  t.after(() => fake.close());
  fake.script({ text: 'plain' }, { toolCalls: [{ id: 'c1', name: 'x', arguments: { a: 1 } }] });
  const j1 = (await (await post(fake, {})).json()) as { choices: { message: { content: string | null; tool_calls?: { id: string; function: { arguments: string } }[] }; finish_reason: string }[] };
  assert.equal(j1.choices[0].message.content, 'plain');
  assert.equal(j1.choices[0].finish_reason, 'stop');
  const j2 = (await (await post(fake, {})).json()) as typeof j1;
  assert.equal(j2.choices[0].message.content, null);
  assert.equal(j2.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(JSON.parse(j2.choices[0].message.tool_calls?.[0].function.arguments ?? ''), { a: 1 });
  // defaultReply 500 when the script is exhausted
  assert.equal((await post(fake, {})).status, 500);
});

test('function replies see the request; waitForRequest resolves on arrival', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script((req) => ({ text: `echo ${String(req.body?.messages?.at(-1)?.content)}` }));
  const waiting = fake.waitForRequest(1);
  const res = await post(fake, { stream: true });
  const req = await waiting;
  assert.equal(req.body?.stream, true);
  assert.equal(textOf((await readSse(res)).chunks), 'echo hi');
  await assert.rejects(fake.waitForRequest(5, 20), /timed out/);
});

test('scriptFor routes replies by the conversation\'s first user message; others use the shared script', async (t) => {
  const fake = await startFakeOpenAI({ defaultReply: { text: 'default' } });
  t.after(() => fake.close());
  fake.script({ text: 'shared 1' }, { text: 'shared 2' });
  fake.scriptFor('task A', { text: 'A1' }, { text: 'A2' });
  fake.scriptFor('task B', { text: 'B1' });
  assert.equal(fake.pending, 5);
  const ask = async (first: string, later?: string) => {
    const messages = [{ role: 'system', content: 'you are task A' }, { role: 'user', content: first }, ...(later ? [{ role: 'user', content: later }] : [])];
    const j = (await (await post(fake, { messages })).json()) as { choices: { message: { content: string } }[] };
    return j.choices[0].message.content;
  };
  assert.equal(await ask('do task B now'), 'B1');
  assert.equal(await ask('main conversation'), 'shared 1', 'the system prompt does not count; only the first user message');
  assert.equal(await ask('do task A please'), 'A1');
  assert.equal(await ask('main conversation', 'about task A'), 'shared 2', 'a later user message does not count');
  assert.equal(await ask('task A again'), 'A2');
  assert.equal(await ask('task B'), 'default', 'an exhausted conversation gets the default reply, not the shared script');
  assert.equal(fake.pending, 0);
  assert.equal(fake.unscripted, 1);
});
