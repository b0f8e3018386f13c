import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_CONTEXT_WINDOW } from '../../src/agent/context';
import { contextWindowOf, contextWindowOptions, createChatAgent } from '../../src/host/session-parts/session-agent';
import { HostConfigSchema } from '../../src/host/protocol';
import { ToolRegistry } from '../../src/tools/registry';
import type { ResolvedProvider } from '../../src/host/provider-config';
import { fakeModel, silentLog } from '../support/session-parts';

const provider = (model: string, contextWindow?: number) => ({ baseURL: 'http://127.0.0.1:9/v1', model, apiKey: '', ...(contextWindow ? { contextWindow } : {}) }) as ResolvedProvider;

test('chat agent: the context window is the configured one, else a known model\'s, else looked up from the current provider', () => {
  assert.deepEqual(contextWindowOptions(provider('custom', 32000), () => provider('x'), silentLog), { contextWindow: 32000, contextWindowLookup: undefined });
  const known = contextWindowOptions(provider('gpt-4o'), () => provider('x'), silentLog);
  assert.ok(known.contextWindow > DEFAULT_CONTEXT_WINDOW / 2 && known.contextWindowLookup === undefined);
  const unknown = contextWindowOptions(provider('my-local-model'), () => provider('x'), silentLog);
  assert.equal(unknown.contextWindow, DEFAULT_CONTEXT_WINDOW);
  assert.equal(typeof unknown.contextWindowLookup, 'function');
  assert.equal(contextWindowOf(provider('m', 9000)), 9000);
});

test('chat agent: mode and step limit come from the host configuration', () => {
  const agent = createChatAgent({
    config: HostConfigSchema.parse({ mode: 'plan' }),
    cwd: '/w',
    provider: provider('m'),
    current: () => provider('m'),
    client: fakeModel({ text: 'hi' }),
    registry: new ToolRegistry([]),
    grants: new Set(),
    projectRules: () => undefined,
    recorder: { storedId: () => null, archive: () => null } as never,
    workspace: {} as never,
    session: { id: 's1', ask: async () => null, requestApproval: async () => ({ decision: 'deny' }) as never },
    events: {},
    log: silentLog,
  });
  assert.equal(agent.mode, 'plan');
  assert.equal(agent.state, 'idle');
});
