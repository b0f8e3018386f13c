import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messageDelivery, restoreOnce, type DeliveryOptions } from '../../src/host/session-parts/message-delivery';
import type { SendResult } from '../../src/agent/loop';
import { fakeUi } from '../support/session-parts';

function setup(result: SendResult, note = '') {
  const ui = fakeUi();
  const sent: [string, unknown][] = [];
  const log: string[] = [];
  const notes: string[] = [];
  const o: DeliveryOptions = {
    agent: { send: (text, meta) => (sent.push([text, meta]), result) },
    ensureRestored: () => void log.push('restored'),
    rules: { freeze: async () => void log.push('rules frozen') },
    mcp: { expand: async (text) => (text.startsWith('/srv:') ? { text: 'expanded prompt', labels: ['srv:p'] } : null) },
    ask: async () => null,
    signal: new AbortController().signal,
    readFile: async (p) => ({ ok: true, data: { path: p, content: 'body', totalLines: 1 } }),
    fetchUrl: async (url) => (log.push(`fetched ${url}`), { ok: false, error: { kind: 'network_error', message: 'offline' } }),
    checkpoints: { takeNotes: () => note, addNote: (n) => void notes.push(n) },
    ui,
    maxQueue: 2,
  };
  return { deliver: messageDelivery(o), ui, sent, log, notes };
}

test('message delivery: restored and rules fixed first, numbered, MCP expanded, a rewind note in front', async () => {
  const s = setup({ status: 'started' }, 'your edit was undone');
  let n = 6;
  const r = await s.deliver('/srv:p go', [], () => ++n);
  assert.deepEqual(r, { id: 7, status: 'started' });
  assert.deepEqual(s.log, ['restored', 'rules frozen']);
  assert.deepEqual(s.sent, [['your edit was undone\n\nexpanded prompt', { id: 7, display: '/srv:p go', labels: ['srv:p'] }]]);
  assert.deepEqual(s.ui.events, []);
});

test('message delivery: a /fetch attachment goes through the fetch the runtime gives (the agent\'s, as the user)', async () => {
  const s = setup({ status: 'started' });
  await s.deliver('read this', [{ kind: 'fetch', url: 'https://example.com/' }] as never, () => 1);
  assert.deepEqual(s.log, ['restored', 'rules frozen', 'fetched https://example.com/']);
  assert.match(String(s.sent[0][0]), /the fetch failed: network_error: offline/);
});

test('message delivery: a queued message is shown queued; a refused one keeps its note and says the queue is full', async () => {
  const q = setup({ status: 'queued', position: 1 });
  await q.deliver('later', [], () => 2);
  assert.deepEqual(q.ui.events, [['queued', { id: 2, text: 'later', context: [], position: 1 }]]);
  const full = setup({ status: 'rejected', reason: 'full' }, 'note');
  assert.deepEqual(await full.deliver('more', [], () => 3), { id: 3, status: 'rejected', reason: 'full' });
  assert.deepEqual(full.notes, ['note'], 'the note waits for the next message');
  assert.deepEqual(full.ui.events, [['error', { kind: 'queue_full', message: 'The agent is busy and 2 messages are already queued; wait or :CabooseStop.' }]]);
});

test('restoreOnce: a reopened session loads its conversation at the first message only; a new one never', () => {
  const loaded: unknown[] = [];
  let reads = 0;
  const deps = {
    sessions: { contextRows: () => (reads++, []) },
    sessionId: 's1',
    agent: { loadMessages: (m: unknown[]) => void loaded.push(m) },
    recorder: { adopt: () => {} },
  };
  const again = restoreOnce(true, deps);
  again();
  again();
  assert.deepEqual([reads, loaded.length], [1, 1]);
  restoreOnce(false, deps)();
  assert.equal(reads, 1);
});

test('message delivery: a message whose session was left while it was on its way is parked (kept), not started', async () => {
  const ui = fakeUi();
  const sent: string[] = [];
  const parked: [string, unknown][] = [];
  const closing = new AbortController();
  const deliver = messageDelivery({
    agent: { send: (text) => (sent.push(text), { status: 'started' }) },
    ensureRestored: () => undefined,
    // The chat leaves the session while the rules are read.
    rules: { freeze: async () => void closing.abort() },
    mcp: { expand: async () => null },
    ask: async () => null,
    signal: closing.signal,
    readFile: async (p) => ({ ok: true, data: { path: p, content: 'body', totalLines: 1 } }),
    fetchUrl: async () => ({ ok: false, error: { kind: 'network_error', message: 'offline' } }),
    checkpoints: { takeNotes: () => 'a rewind note', addNote: () => undefined },
    ui,
    maxQueue: 2,
    park: (text, meta) => void parked.push([text, meta]),
  });
  assert.deepEqual(await deliver('hello', [], () => 4), { id: 4, status: 'stopped' });
  assert.deepEqual(sent, [], 'no turn started in the left session');
  assert.deepEqual(parked, [['a rewind note\n\nhello', { id: 4, display: 'hello', labels: [] }]]);
  assert.deepEqual(ui.events, []);
});
