import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatModel, SwitchableModel, providerSecrets } from '../../src/host/session-parts/chat-model';
import { HostConfigSchema } from '../../src/host/protocol';
import type { ResolvedProvider } from '../../src/host/provider-config';
import { fakeModel } from '../support/session-parts';

const provider = (model: string, apiKey: string): ResolvedProvider => ({ baseURL: 'http://127.0.0.1:9/v1', model, apiKey }) as ResolvedProvider;

test('chat model: every configured key (literal or from the environment) is a secret; a switched-to key joins the same list', () => {
  const config = HostConfigSchema.parse({ providers: { a: { base_url: 'http://a/v1', model: 'x', api_key: 'sk-literal' }, b: { base_url: 'http://b/v1', model: 'y', api_key_env: 'CABOOSE_TEST_KEY' } } });
  assert.deepEqual(providerSecrets(config, provider('m', 'sk-main'), { CABOOSE_TEST_KEY: 'sk-env' }), ['sk-main', 'sk-literal', 'sk-env']);
  const chat = new ChatModel(HostConfigSchema.parse({}), provider('m1', 'sk-1'), 'm1');
  const held = chat.secrets;
  chat.set(provider('m2', 'sk-2'), 'b/m2');
  chat.set(provider('m3', 'sk-2'), 'b/m3');
  assert.equal(chat.secrets, held, 'the bash tool keeps holding the same list');
  assert.deepEqual(held, ['sk-1', 'sk-2']);
  assert.equal(chat.provider.model, 'm3');
  assert.equal(chat.label, 'b/m3');
  assert.equal(chat.client.model, 'm3', 'the next request goes to the new model');
  assert.equal(chat.fresh().model, 'm3');
});

test('switchable model: requests go to the client set last', async () => {
  const a = fakeModel({ text: 'a' }, 'a');
  const b = fakeModel({ text: 'b' }, 'b');
  const m = new SwitchableModel(a);
  for await (const _ of m.stream({ messages: [] })) void _;
  m.set(b);
  for await (const _ of m.stream({ messages: [] })) void _;
  assert.equal(m.model, 'b');
  assert.deepEqual([a.requests.length, b.requests.length], [1, 1]);
  await m.prepare();
});
