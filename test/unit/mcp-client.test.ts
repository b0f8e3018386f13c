import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mcpSessionClient } from '../../src/host/mcp-client';

/** A session whose ask UI answers from a list (null: dismissed) and records the questions. */
function session(answers: (string | null)[]) {
  const asked: { question: string; choices?: string[] }[] = [];
  return {
    asked,
    ask: async (req: { question: string; choices?: string[] }) => {
      asked.push(req);
      return answers.length ? answers.shift()! : null;
    },
    requestApproval: async () => ({ decision: 'reject' as const, reason: 'no' }),
  };
}
const provider = { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k', model: 'm' };
const schema = {
  type: 'object' as const,
  properties: {
    name: { type: 'string' as const, title: 'Name' },
    age: { type: 'integer' as const, minimum: 1, maximum: 100 },
    ok: { type: 'boolean' as const },
    color: { type: 'string' as const, enum: ['red', 'blue'] },
    note: { type: 'string' as const, default: 'none' },
  },
  required: ['name', 'age'],
};

describe('MCP elicitation through the ask UI', () => {
  it('accept: one question per field, numbers checked (out of range asked again), defaults for empty answers', async () => {
    const s = session(['Answer', 'Ada', '500', '42', 'true', 'blue', '']);
    const c = mcpSessionClient({ session: s, provider, servers: {}, notice: () => undefined });
    const r = await c.elicit('srv', { message: 'Who are you?', requestedSchema: schema }, new AbortController().signal);
    assert.deepEqual(r, { action: 'accept', content: { name: 'Ada', age: 42, ok: true, color: 'blue', note: 'none' } });
    assert.match(s.asked[0].question, /MCP server 'srv' asks: Who are you\? \(5 fields\)/);
    assert.deepEqual(s.asked[0].choices, ['Answer', 'Decline', 'Cancel']);
    assert.deepEqual(s.asked.find((q) => q.question.includes('color'))!.choices, ['red', 'blue']);
  });
  it('decline and cancel (also a dismissed question mid-form)', async () => {
    const c1 = mcpSessionClient({ session: session(['Decline']), provider, servers: {}, notice: () => undefined });
    assert.deepEqual(await c1.elicit('srv', { message: 'x', requestedSchema: schema }, new AbortController().signal), { action: 'decline' });
    const c2 = mcpSessionClient({ session: session([null]), provider, servers: {}, notice: () => undefined });
    assert.deepEqual(await c2.elicit('srv', { message: 'x', requestedSchema: schema }, new AbortController().signal), { action: 'cancel' });
    const c3 = mcpSessionClient({ session: session(['Answer', 'Ada', null]), provider, servers: {}, notice: () => undefined });
    assert.deepEqual(await c3.elicit('srv', { message: 'x', requestedSchema: schema }, new AbortController().signal), { action: 'cancel' });
  });
  it('sampling: refused when the user rejects it or the server is denied', async () => {
    const req = { messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'hi' } }], maxTokens: 10 };
    const c = mcpSessionClient({ session: session([]), provider, servers: {}, notice: () => undefined });
    await assert.rejects(c.sample('srv', req, new AbortController().signal), /declined the sampling request: no/);
    const d = mcpSessionClient({ session: session([]), provider, servers: { srv: { command: 'x', sampling: 'deny' } }, notice: () => undefined });
    await assert.rejects(d.sample('srv', req, new AbortController().signal), /denied/);
  });
});
