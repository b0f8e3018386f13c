/**
 * The JSON schemas the model sees, generated from each tool's zod schema, pinned by a snapshot so a
 * change to any tool's arguments is deliberate. Update with: UPDATE_SNAPSHOTS=1 npm run test:unit
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { createExecTools } from '../../src/tools/exec-tools';
import { TodoList } from '../../src/tools/todo-list';
import { createAgentTool, createExploreTool } from '../../src/agent/subagent';
import { toolSpec } from '../../src/tools/registry';

const SNAPSHOT = path.join(__dirname, 'snapshots', 'tool-schemas.json');

function allSpecs() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-schemas-'));
  fs.mkdirSync(path.join(dir, 'ws'));
  const ws = openWorkspace({ root: path.join(dir, 'ws'), dataDir: path.join(dir, 'data') });
  const provider = { baseURL: 'http://127.0.0.1:9/v1', apiKey: '', model: 'm' };
  try {
    const defs = [
      ...ws.registry.list(),
      ...createExecTools({ todos: new TodoList(), webSearch: { searxngUrl: 'http://127.0.0.1:9' } }),
      createExploreTool({ provider, registry: ws.registry }),
      createAgentTool({ provider, registry: ws.registry, mode: () => 'create', requestApproval: async () => ({ decision: 'reject' }) }),
    ];
    return defs.map(toolSpec).sort((a, b) => a.name.localeCompare(b.name));
  } finally {
    ws.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function undescribed(schema: unknown, at: string, out: string[]): void {
  if (!schema || typeof schema !== 'object') return;
  const s = schema as { properties?: Record<string, unknown>; items?: unknown; anyOf?: unknown[] };
  for (const [k, v] of Object.entries(s.properties ?? {})) {
    if (!(v as { description?: string }).description) out.push(`${at}.${k}`);
    undescribed(v, `${at}.${k}`, out);
  }
  if (s.items) undescribed(s.items, `${at}[]`, out);
  for (const a of s.anyOf ?? []) undescribed(a, at, out);
}

test('every tool schema matches the snapshot', () => {
  const specs = allSpecs();
  const text = `${JSON.stringify(specs, null, 2)}\n`;
  if (process.env.UPDATE_SNAPSHOTS === '1' || !fs.existsSync(SNAPSHOT)) {
    if (process.env.CI) assert.fail(`missing snapshot ${SNAPSHOT}`);
    fs.writeFileSync(SNAPSHOT, text);
  }
  assert.equal(text, fs.readFileSync(SNAPSHOT, 'utf8'), 'tool schemas changed: review, then UPDATE_SNAPSHOTS=1');
});

test('every argument of every tool is described for the model, and every schema is an object', () => {
  for (const spec of allSpecs()) {
    assert.equal(spec.parameters.type, 'object', spec.name);
    assert.ok(spec.description.length > 40, `${spec.name} has a real description`);
    const missing: string[] = [];
    undescribed(spec.parameters, spec.name, missing);
    assert.deepEqual(missing, [], `undescribed arguments: ${missing.join(', ')}`);
  }
});

test('each tool’s JSON schema is generated once and cannot be altered between requests (issue 24)', () => {
  const first = allSpecs();
  const again = allSpecs();
  for (let i = 0; i < first.length; i++) {
    assert.equal(again[i].parameters, first[i].parameters, `${first[i].name}: the same schema object, not generated again`);
    assert.ok(Object.isFrozen(first[i].parameters), `${first[i].name}: frozen`);
    assert.throws(() => {
      'use strict';
      (first[i].parameters as Record<string, unknown>).type = 'string';
    }, TypeError);
  }
});
