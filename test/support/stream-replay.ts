/**
 * Replays recorded provider streams (test/fixtures/streams/, sources and licences in SOURCE.md) byte for
 * byte through a local fake server and the real model client, one request per fixture.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startFakeOpenAI } from './fake-openai';
import { OpenAIProvider, ProviderError, type ModelEvent, type ModelRequest } from '../../src/agent/provider';

export const FIXTURES = path.join(__dirname, '..', 'fixtures', 'streams');
export const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), 'utf8');
export const messages: ModelRequest['messages'] = [{ role: 'user', content: 'hi' }];

/** Streams the first fixture through the client; the others are the fake server's next replies. */
export async function replay(t: { after(fn: () => unknown): void }, ...names: string[]) {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script(...names.map((n) => ({ raw: fixture(n) })));
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
