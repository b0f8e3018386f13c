import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chatEvents } from '../../src/host/session-parts/agent-events';
import type { SessionRecorder } from '../../src/host/session-recorder';
import type { ToolLines } from '../../src/host/session-parts/tool-lines';
import { fakeUi } from '../support/session-parts';

test('agent events: a turn is one checkpoint, one recorded user message and the chat\'s user line; its end flushes and names', () => {
  const calls: string[] = [];
  const ui = fakeUi();
  const emit = ui.emit.bind(ui);
  ui.emit = (name: string, payload?: Record<string, unknown>) => {
    if (name === 'assistant_delta') calls.push(`chat text ${String(payload?.text)}`);
    emit(name, payload);
  };
  const recorder = {
    turnStart: (d: unknown) => calls.push(`record turn ${JSON.stringify(d)}`),
    flush: () => calls.push('flush'),
    text: (d: string) => calls.push(`record text ${d}`),
    chatLine: (k: string, t: string) => calls.push(`record ${k} ${t}`),
  } as unknown as SessionRecorder;
  const ev = chatEvents({
    session: { id: 's1', emitState: () => calls.push('state'), cancelApproval: (id) => calls.push(`cancel ${id}`) },
    ui,
    recorder,
    checkpoints: { begin: (c: { messageId: number; text: string }) => void calls.push(`begin ${c.messageId} ${c.text}`), end: () => void calls.push('end') } as never,
    mcp: { turnStarted: () => calls.push('mcp turn') },
    toolLines: { call: (c: { id: string }) => calls.push(`tool ${c.id}`), result: (r: { id: string }) => calls.push(`result ${r.id}`) } as unknown as ToolLines,
    usage: () => calls.push('usage'),
    notice: (t) => calls.push(`notice ${t}`),
    turnEnded: () => calls.push('named'),
  });
  ev.turnStart!({ text: 'fix it\n\n<file a.ts>', meta: { id: 4, display: 'fix it', labels: ['a.ts'] } } as never);
  ev.text!('ok');
  ev.toolCall!({ id: 'c1', name: 'read_file', args: {} });
  ev.toolResult!({ id: 'c1', name: 'read_file', result: { ok: true, data: {} } });
  ev.error!({ kind: 'auth', message: 'bad key' });
  ev.approvalCancelled!({ id: 'r1' } as never);
  ev.turnEnd!();
  assert.deepEqual(calls, [
    'mcp turn',
    'begin 4 fix it',
    'record turn {"text":"fix it","labels":["a.ts"]}',
    // The chat gets the text before the database does (a reply's first text inserts its row).
    'chat text ok',
    'record text ok',
    'tool c1',
    'result c1',
    'record error bad key',
    'cancel r1',
    'end',
    'flush',
    'named',
  ]);
  assert.deepEqual(ui.events, [
    ['user_message', { id: 4, text: 'fix it', context: ['a.ts'] }],
    ['assistant_delta', { text: 'ok' }],
    ['error', { kind: 'auth', message: 'bad key' }],
  ]);
  ev.queueDiscarded!([{ text: 'later', meta: { id: 5, display: 'later', labels: [] } }, { text: 'raw' }] as never);
  assert.deepEqual(ui.events.at(-1), ['queue_discarded', { messages: [{ id: 5, text: 'later' }, { id: 0, text: 'raw' }] }]);
});
