import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { startFakeOpenAI } from '../support/fake-openai';
import { Agent } from '../../src/agent/loop';
import { createSubagentTool } from '../../src/agent/subagent';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolDefinition, ToolResult } from '../../src/tools/tool';
import type { Workspace } from '../../src/workspace/workspace';

const workspace = { root: '/tmp/ws', dataDir: '/tmp/data', sessionId: 's' } as Workspace;

function registryWithExplore(provider: { baseURL: string; apiKey: string; model: string }, executed: string[]): ToolRegistry {
  const registry = new ToolRegistry([
    {
      name: 'read_thing',
      description: 'read',
      policy: 'read',
      parameters: z.object({ path: z.string() }),
      execute: async (a: { path: string }) => {
        executed.push(`read:${a.path}`);
        return { content: `body of ${a.path}` };
      },
    } as ToolDefinition,
    {
      name: 'edit_thing',
      description: 'edit',
      policy: 'edit',
      parameters: z.object({}),
      execute: async () => executed.push('edit'),
    } as ToolDefinition,
  ]);
  registry.add(createSubagentTool({ provider, registry }));
  return registry;
}

test('explore runs a read-only child agent and returns its final report to the parent', async (t) => {
  const fake = await startFakeOpenAI({ defaultReply: { status: 500 } });
  t.after(() => fake.close());
  const provider = { baseURL: fake.url, apiKey: 'k', model: 'm' };
  const executed: string[] = [];
  const agent = new Agent({
    provider: { ...provider, maxRetries: 0 },
    registry: registryWithExplore(provider, executed),
    makeContext: (signal) => ({ signal, workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'reject' }),
  });
  fake.script(
    { toolCalls: [{ id: 'x1', name: 'explore', arguments: { task: 'where is main?' } }] }, // parent
    { toolCalls: [{ id: 'c1', name: 'read_thing', arguments: { path: 'src/index.ts' } }] }, // child
    { text: 'main is in src/index.ts' }, // child final
    { text: 'The entry point is src/index.ts.' }, // parent final
  );
  agent.send('find main');
  await agent.idle();

  const [parent1, child1, child2, parent2] = fake.chatRequests;
  assert.deepEqual(parent1.body?.tools?.map((x) => x.function.name), ['read_thing', 'edit_thing', 'explore']);
  assert.deepEqual(child1.body?.tools?.map((x) => x.function.name), ['read_thing'], 'child sees read tools only, no nesting');
  assert.match(String(child1.body?.messages?.[0].content), /research subagent/);
  assert.deepEqual(child1.body?.messages?.[1], { role: 'user', content: 'where is main?' });
  assert.equal(child2.body?.messages?.filter((m) => m.role === 'tool').length, 1);
  const result = JSON.parse(String(parent2.body?.messages?.at(-1)?.content)) as ToolResult;
  assert.deepEqual(result, { ok: true, data: { answer: 'main is in src/index.ts', toolCalls: 1 } });
  assert.deepEqual(executed, ['read:src/index.ts']);
  assert.equal(agent.messages.at(-1)?.content, 'The entry point is src/index.ts.');
});

test('a failing child is reported to the parent model as a tool error', async (t) => {
  const fake = await startFakeOpenAI();
  t.after(() => fake.close());
  const provider = { baseURL: fake.url, apiKey: 'k', model: 'm', maxRetries: 0 };
  const agent = new Agent({
    provider,
    registry: registryWithExplore(provider, []),
    makeContext: (signal) => ({ signal, workspace, sessionId: 's' }),
    requestApproval: async () => ({ decision: 'reject' }),
  });
  fake.script({ toolCalls: [{ id: 'x1', name: 'explore', arguments: { task: 'look' } }] }, { status: 401 }, { text: 'sorry' });
  agent.send('go');
  await agent.idle();
  const result = JSON.parse(String(fake.chatRequests[2].body?.messages?.at(-1)?.content)) as ToolResult;
  assert.equal(result.ok, false);
  assert.match(result.ok ? '' : result.error.message, /subagent failed: auth/);
});
