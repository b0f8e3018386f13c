/** Issue 21, choosing models: named providers, per-model options, the model catalogue, the streaming check. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { HostConfigSchema, type HostConfig } from '../../src/host/protocol';
import { configuredProviders, defaultProviderName, modelLabel, resolveProvider } from '../../src/host/provider-config';
import { checkStreaming, ModelCatalogue } from '../../src/host/models';
import { checkHealth } from '../../src/host/health';
import { OpenAIProvider, type ModelEvent } from '../../src/agent/provider';
import { startFakeOpenAI } from '../support/fake-openai';

const cfg = (c: unknown): HostConfig => HostConfigSchema.parse(c);

test('the single-table form keeps working (env fallbacks, no name shown)', async () => {
  const c = cfg({ provider: { model: 'm1', max_tokens: 10 } });
  const p = await resolveProvider(c, { OPENAI_API_KEY: 'env-key', OPENAI_BASE_URL: 'http://x/v1/' });
  assert.deepEqual(p, { name: 'default', baseURL: 'http://x/v1', apiKey: 'env-key', model: 'm1', maxTokens: 10 });
  assert.equal(modelLabel(c, p), 'm1');
  assert.deepEqual([...configuredProviders(cfg({})).keys()], ['default']);
});

test('named providers: provider = name picks the default; each has its own base_url, key source, headers, window, model', async () => {
  const c = cfg({
    provider: 'ollama',
    providers: {
      openai: { api_key_cmd: ['printf', 'from-cmd'], model: 'gpt-4o' },
      ollama: { base_url: 'http://127.0.0.1:11434/v1', model: 'qwen3:8b', context_window: 32768, headers: { 'x-a': '1' } },
      openrouter: { base_url: 'https://openrouter.ai/api/v1', api_key_env: 'OR_KEY', models: { 'anthropic/claude-sonnet-4': { context_window: 200000, reasoning_effort: 'low' } } },
    },
  });
  const env = { OPENAI_API_KEY: 'openai-env', OR_KEY: 'or-key', OPENAI_BASE_URL: 'http://leak/v1', CABOOSE_MODEL: 'leak' };
  assert.equal(defaultProviderName(c), 'ollama');
  const def = await resolveProvider(c, env);
  assert.deepEqual(def, { name: 'ollama', baseURL: 'http://127.0.0.1:11434/v1', apiKey: '', model: 'qwen3:8b', contextWindow: 32768, headers: { 'x-a': '1' } }, 'another provider’s env key never leaks to it');
  const oa = await resolveProvider(c, env, { provider: 'openai' });
  assert.equal(oa.apiKey, 'from-cmd');
  assert.equal(oa.baseURL, 'http://leak/v1', 'the openai provider keeps the OPENAI_* environment');
  const or = await resolveProvider(c, env, { provider: 'openrouter' });
  assert.deepEqual(or, { name: 'openrouter', baseURL: 'https://openrouter.ai/api/v1', apiKey: 'or-key', model: 'anthropic/claude-sonnet-4', contextWindow: 200000, options: { reasoning_effort: 'low' } });
  assert.equal(modelLabel(c, or), 'openrouter/anthropic/claude-sonnet-4');
  await assert.rejects(resolveProvider(cfg({ provider: 'nope', providers: { a: {} } })), /not among the configured providers/);
});

test('per-model options go only to their model; a 400 naming one is retried once without it and remembered', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script(
    { status: 400, body: { error: { message: "Unsupported parameter: 'temperature' is not supported with this model.", type: 'invalid_request_error', param: 'temperature', code: 'unsupported_parameter' } } },
    { text: 'ok' },
    { text: 'again' },
  );
  const p = new OpenAIProvider({ baseURL: fake.url, apiKey: 'k', model: 'o-model', options: { temperature: 0.2, reasoning_effort: 'low' }, maxRetries: 0 });
  const events: ModelEvent[] = [];
  for await (const ev of p.stream({ messages: [{ role: 'user', content: 'x' }] })) events.push(ev);
  assert.equal(fake.chatRequests.length, 2, 'retried once');
  assert.equal(fake.chatRequests[0].body?.temperature, 0.2);
  assert.equal(fake.chatRequests[1].body?.temperature, undefined, 'sent again without it');
  assert.equal(fake.chatRequests[1].body?.reasoning_effort, 'low', 'the other option stays');
  assert.match((events.find((e) => e.type === 'retry') as { error: Error }).error.message, /does not accept `temperature`/);
  // Remembered: a new client for the same model leaves it out from the start.
  const again = new OpenAIProvider({ baseURL: fake.url, apiKey: 'k', model: 'o-model', options: { temperature: 0.2 }, maxRetries: 0 });
  for await (const _ of again.stream({ messages: [{ role: 'user', content: 'x' }] })) void _;
  assert.equal(fake.chatRequests.length, 3);
  assert.equal(fake.chatRequests[2].body?.temperature, undefined);
  // A 400 that names nothing this request sent is not retried.
  fake.script({ status: 400, body: { error: { message: 'Invalid value for messages' } } });
  const other = new OpenAIProvider({ baseURL: fake.url, apiKey: 'k', model: 'other', options: { temperature: 0.2 }, maxRetries: 0 });
  await assert.rejects(async () => {
    for await (const _ of other.stream({ messages: [{ role: 'user', content: 'x' }] })) void _;
  });
  assert.equal(fake.chatRequests.length, 4);
});

test('the catalogue lists each provider’s /models (cached) and its configured models, with context windows', async (t) => {
  const a = await startFakeOpenAI({ models: ['a-1', 'a-2'] });
  const b = await startFakeOpenAI({ models: ['b-1'] });
  t.after(() => Promise.all([a.close(), b.close()]));
  const c = cfg({
    provider: 'a',
    providers: {
      a: { base_url: a.url, model: 'a-1', models: { 'a-cfg': { context_window: 8000 } } },
      b: { base_url: b.url, models: ['gpt-4o'] },
      down: { base_url: 'http://127.0.0.1:9/v1', model: 'x' },
    },
  });
  const cat = new ModelCatalogue(() => c);
  const { models, providers } = await cat.list();
  const labels = models.map((m) => m.label);
  assert.deepEqual(labels.filter((l) => l.startsWith('a/')).sort(), ['a/a-1', 'a/a-2', 'a/a-cfg']);
  assert.ok(labels.includes('b/b-1') && labels.includes('b/gpt-4o') && labels.includes('down/x'), labels.join(' '));
  assert.equal(models.find((m) => m.label === 'a/a-cfg')?.context_window, 8000);
  assert.equal(models.find((m) => m.label === 'a/a-1')?.source, 'both');
  assert.ok(models.find((m) => m.label === 'b/gpt-4o')?.context_window, 'a well-known model’s window');
  assert.equal(providers.find((p) => p.provider === 'down')?.ok, false);
  const modelRequests = a.requests.filter((r) => r.path === '/v1/models').length;
  await cat.list();
  assert.equal(a.requests.filter((r) => r.path === '/v1/models').length, modelRequests, 'cached');
  await cat.list(true);
  assert.equal(a.requests.filter((r) => r.path === '/v1/models').length, modelRequests + 1, 'refresh asks again');
  assert.deepEqual(await cat.parse('b/b-1', 'a'), { provider: 'b', model: 'b-1' });
  assert.deepEqual(await cat.parse('b-1', 'a'), { provider: 'b', model: 'b-1' }, 'a bare model: the provider listing it');
  assert.deepEqual(await cat.parse('b', 'a'), { provider: 'b', model: 'gpt-4o' }, 'a provider alone: its default (first configured) model');
});

test(':CabooseModel check: one tiny streamed request per provider says whether it streams tool calls', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  fake.script({ raw: readFileSync(path.join(__dirname, '..', 'fixtures', 'streams', 'gemini', 'tool-call-no-index.sse'), 'utf8').replace(/read_file/g, 'ping') }, { text: 'pong' });
  const yes = await checkStreaming({ name: 'g', baseURL: fake.url, apiKey: 'k', model: 'm' });
  assert.equal(yes.ok, true);
  assert.equal(yes.tool_calls, true);
  assert.equal(fake.chatRequests[0].body?.tools?.[0].function.name, 'ping');
  assert.equal(fake.chatRequests[0].body?.max_tokens, 64);
  const no = await checkStreaming({ name: 'g', baseURL: fake.url, apiKey: 'k', model: 'm' });
  assert.deepEqual([no.ok, no.tool_calls], [true, false]);
  const down = await checkStreaming({ name: 'x', baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'm' });
  assert.equal(down.ok, false);
  assert.match(down.detail, /cannot reach/);
});

test(':checkhealth checks every configured provider: reachable, key refused, model listed', async (t) => {
  const ok = await startFakeOpenAI({ models: ['m-ok'] });
  t.after(() => ok.close());
  const c = cfg({
    provider: 'good',
    providers: {
      good: { base_url: ok.url, api_key: 'k', model: 'm-ok' },
      unlisted: { base_url: ok.url, api_key: 'k', model: 'not-there' },
      down: { base_url: 'http://127.0.0.1:9/v1', model: 'x' },
    },
  });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'caboose-health-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const report = await checkHealth(c, dataDir, process.cwd());
  const by = new Map((report.providers ?? []).map((p) => [p.name, p]));
  assert.equal(report.providers?.[0].name, 'good', 'the default first');
  assert.equal(by.get('good')?.reachable, true);
  assert.equal(by.get('good')?.model_listed, true);
  assert.equal(by.get('unlisted')?.model_listed, false);
  assert.equal(by.get('down')?.reachable, false);
  assert.ok(!JSON.stringify(report).includes('"k"'), 'never the key');
});
