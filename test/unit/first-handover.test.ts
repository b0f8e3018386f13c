/**
 * The first-request path's handover (issue 24): the session's UI drops its own copies of the events the
 * first-request bundle already showed (LuaUi.skipShown), and its model client takes the in-flight reply over
 * only when its request is byte for byte the one sent (agent/prefetched.ts withPrefetched).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LuaUi } from '../../src/host/lua-ui';
import { withPrefetched, type PrefetchedReply, type PrefetchItem } from '../../src/agent/prefetched';
import { OpenAIProvider, ProviderError, type ModelEvent, type ModelRequest } from '../../src/agent/provider';
import { recorder, silentLog as silent } from '../support/session-parts';

test('skipShown: the events already shown are dropped once each, in order; the others go through', () => {
  const r = recorder();
  const ui = new LuaUi(r.nvim, silent, 0);
  ui.skipShown([
    { name: 'user_message', payload: { id: 1, text: 'hi', context: [] } },
    { name: 'assistant_start', payload: {} },
    { name: 'assistant_delta', payload: { text: 'Hel' } },
  ]);
  ui.emit('session_info', { session: 's' }); // not shown before: goes through
  ui.emit('user_message', { id: 1, text: 'hi', context: [] });
  ui.emit('assistant_delta', { text: 'Hel' }); // not the next one expected: goes through
  ui.emit('assistant_start', {});
  ui.emit('assistant_delta', { text: 'Hel' });
  ui.emit('assistant_delta', { text: 'lo' });
  ui.emit('user_message', { id: 1, text: 'hi', context: [] }); // shown once only: this one goes
  ui.flush();
  assert.equal(ui.unmatchedShown, 0);
  assert.deepEqual(
    r.events.map(([n, p]) => `${n} ${JSON.stringify(p)}`),
    ['session_info {"session":"s"}', 'assistant_delta {"text":"Hel"}', 'assistant_delta {"text":"lo"}', 'user_message {"id":1,"text":"hi","context":[]}'],
  );
});

/** A reply as the first-request bundle hands it over: `items` arrive as given; abort() is counted. */
function reply(bodyJson: string, items: PrefetchItem[]): PrefetchedReply & { aborted: number } {
  return {
    bodyJson,
    aborted: 0,
    item(i) {
      return Promise.resolve(items[i]);
    },
    abort() {
      this.aborted++;
    },
  };
}

const provider = () => new OpenAIProvider({ baseURL: 'http://127.0.0.1:9/v1', apiKey: '', model: 'm', maxRetries: 0 });
const request = (): ModelRequest => ({ messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 't', description: 'd', parameters: { type: 'object' } }] });

async function collect(it: AsyncIterable<ModelEvent>): Promise<{ events: ModelEvent[]; error?: unknown }> {
  const events: ModelEvent[] = [];
  try {
    for await (const ev of it) events.push(ev);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

test('withPrefetched: the same body takes the reply over (events in order, then the client’s own requests)', async () => {
  const p = provider();
  const body = JSON.stringify(p.requestBody(request()));
  const done: ModelEvent = { type: 'done', finishReason: 'stop', text: 'Hello', toolCalls: [] };
  const r = reply(body, [{ event: { type: 'text', delta: 'Hel' } }, { event: { type: 'text', delta: 'lo' } }, { event: done }, { end: true }]);
  let mismatches = 0;
  const client = withPrefetched(p, r, () => mismatches++);
  const got = await collect(client.stream(request()));
  assert.deepEqual(got.events, [{ type: 'text', delta: 'Hel' }, { type: 'text', delta: 'lo' }, done]);
  assert.equal(got.error, undefined);
  assert.equal(mismatches, 0);
  // The second request is the client's own (here: nothing listens, so it fails to connect).
  const second = await collect(client.stream(request()));
  assert.ok(second.error instanceof ProviderError && second.error.kind === 'unreachable', String(second.error));
});

test('withPrefetched: a failure arrives as this module’s ProviderError, with its kind and partial text', async () => {
  const p = provider();
  const r = reply(JSON.stringify(p.requestBody(request())), [{ event: { type: 'text', delta: 'par' } }, { error: { kind: 'server', message: 'boom', status: 500, partialText: 'par' } }]);
  const got = await collect(withPrefetched(p, r, () => undefined).stream(request()));
  assert.ok(got.error instanceof ProviderError, 'a ProviderError the agent loop recognises');
  assert.equal((got.error as ProviderError).kind, 'server');
  assert.equal((got.error as ProviderError).status, 500);
  assert.equal((got.error as ProviderError).partialText, 'par');
});

test('withPrefetched: a different body cuts the prefetched request and sends its own', async () => {
  const p = provider();
  const r = reply('{"model":"other"}', [{ event: { type: 'text', delta: 'never' } }, { end: true }]);
  const seen: [string, string][] = [];
  const got = await collect(withPrefetched(p, r, (sent, wanted) => seen.push([sent, wanted])).stream(request()));
  assert.equal(r.aborted, 1, 'the prefetched request is cut');
  assert.equal(seen.length, 1);
  assert.equal(seen[0][1], JSON.stringify(p.requestBody(request())));
  assert.ok(!got.events.some((e) => e.type === 'text'), 'nothing of the prefetched reply');
  assert.ok(got.error instanceof ProviderError, 'its own request went (and failed to connect)');
});

test('withPrefetched: the caller’s abort cuts the prefetched request; a consumer that leaves early cuts it too', async () => {
  const p = provider();
  const body = JSON.stringify(p.requestBody(request()));
  const controller = new AbortController();
  let release!: (v: PrefetchItem) => void;
  const pending = new Promise<PrefetchItem>((res) => (release = res));
  const r: PrefetchedReply & { aborted: number } = {
    bodyJson: body,
    aborted: 0,
    item: (i) => (i === 0 ? Promise.resolve({ event: { type: 'text', delta: 'a' } }) : pending),
    abort() {
      this.aborted++;
      release({ error: { kind: 'aborted', message: 'request cancelled', partialText: 'a' } });
    },
  };
  const it = withPrefetched(p, r, () => undefined).stream({ ...request(), signal: controller.signal })[Symbol.asyncIterator]();
  assert.deepEqual(await it.next(), { value: { type: 'text', delta: 'a' }, done: false });
  const next = it.next();
  controller.abort();
  await assert.rejects(next, (e: unknown) => e instanceof ProviderError && e.kind === 'aborted');
  assert.ok(r.aborted >= 1);

  const r2 = reply(body, [{ event: { type: 'text', delta: 'a' } }, { event: { type: 'text', delta: 'b' } }, { end: true }]);
  const it2 = withPrefetched(p, r2, () => undefined).stream(request())[Symbol.asyncIterator]();
  await it2.next();
  await it2.return?.();
  assert.equal(r2.aborted, 1, 'left before its end: cut');
});
