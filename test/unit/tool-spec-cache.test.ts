/**
 * The tools' JSON schemas are generated once per zod schema (issue 24, the warm path): every request
 * reuses them, and whatever can change between requests still reaches the next one — a description
 * computed when read (bash describes the sandbox), a tool set rebuilt with new definitions, the tools an
 * MCP server offers now. The shared schema cannot be changed by a consumer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { ToolRegistry, toolSpec } from '../../src/tools/registry';
import type { ToolDefinition } from '../../src/tools/tool';

function tool(name: string, parameters: z.ZodType, description = `${name} does things`): ToolDefinition {
  return { name, description, parameters, policy: 'read', execute: async () => 'ok' };
}

test('a tool schema is generated once: the next request gets the same JSON schema', () => {
  const registry = new ToolRegistry([tool('read_thing', z.object({ path: z.string().describe('the path') }))]);
  const first = registry.specs()[0];
  const second = registry.specs()[0];
  assert.deepEqual(first.parameters, {
    type: 'object',
    properties: { path: { type: 'string', description: 'the path' } },
    required: ['path'],
  });
  assert.equal(second.parameters, first.parameters, 'the schema is reused, not generated again');
  // Two registries (two chats) with the same tool share it too.
  assert.equal(new ToolRegistry([tool('read_thing', registry.get('read_thing')!.parameters)]).specs()[0].parameters, first.parameters);
});

test('the shared schema is frozen: a consumer cannot change what the next request sends', () => {
  const spec = toolSpec(tool('t', z.object({ n: z.number().int(), tags: z.array(z.string()) })));
  const props = spec.parameters.properties as Record<string, Record<string, unknown>>;
  assert.throws(() => {
    props.n.description = 'changed';
  }, TypeError);
  assert.throws(() => {
    (props.tags.items as Record<string, unknown>).type = 'number';
  }, TypeError);
  const again = toolSpec(tool('t', z.object({ n: z.number().int(), tags: z.array(z.string()) })));
  assert.equal((again.parameters.properties as Record<string, Record<string, unknown>>).n.description, undefined);
  // zod's safe-integer bounds are still dropped.
  assert.equal(props.n.maximum, undefined);
  assert.equal(props.n.minimum, undefined);
});

test('a description read at each request (bash describes the sandbox) is sent as it is now', () => {
  let sandbox = 'bwrap';
  const def: ToolDefinition = {
    name: 'bash',
    get description() {
      return `runs commands (${sandbox})`;
    },
    parameters: z.object({ command: z.string() }),
    policy: 'exec',
    execute: async () => 'ok',
  };
  const registry = new ToolRegistry([def]);
  assert.equal(registry.specs()[0].description, 'runs commands (bwrap)');
  sandbox = 'no sandbox';
  assert.equal(registry.specs()[0].description, 'runs commands (no sandbox)');
});

test('a tool set rebuilt with another schema (a config change) sends the new schema', () => {
  const before = new ToolRegistry([tool('fetch', z.object({ url: z.string() }))]).specs()[0];
  const after = new ToolRegistry([tool('fetch', z.object({ url: z.string(), max_bytes: z.number().optional() }))]).specs()[0];
  assert.deepEqual(Object.keys(before.parameters.properties as object), ['url']);
  assert.deepEqual(Object.keys(after.parameters.properties as object), ['url', 'max_bytes']);
});

test('MCP tools that change between requests are sent as they are at each request', () => {
  const registry = new ToolRegistry([tool('read_thing', z.object({ path: z.string() }))]);
  let offered: ToolDefinition[] = [];
  registry.addSource(() => offered);
  assert.deepEqual(
    registry.specs().map((s) => s.name),
    ['read_thing'],
  );
  const v1 = { type: 'object', properties: { q: { type: 'string' } } };
  offered = [{ ...tool('srv__search', z.object({})), jsonSchema: v1 }];
  assert.deepEqual(
    registry.specs().map((s) => [s.name, s.parameters]),
    [
      ['read_thing', { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }],
      ['srv__search', v1],
    ],
  );
  // The server restarted with a new version of its tool: the next request sends that one.
  const v2 = { type: 'object', properties: { q: { type: 'string' }, limit: { type: 'integer' } } };
  offered = [{ ...tool('srv__search', z.object({}), 'searches, now with a limit'), jsonSchema: v2 }];
  const spec = registry.specs()[1];
  assert.equal(spec.parameters, v2);
  assert.equal(spec.description, 'searches, now with a limit');
  offered = [];
  assert.deepEqual(
    registry.specs().map((s) => s.name),
    ['read_thing'],
  );
});
