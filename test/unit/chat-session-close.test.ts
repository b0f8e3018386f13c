import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatSession } from '../../src/host/session';
import type { LuaUi } from '../../src/host/lua-ui';
import type { ApprovalRequest } from '../../src/agent/loop';
import { fakeUi, silentLog } from '../support/session-parts';

const req = (id: string) => ({ id, toolCallId: id, tool: 'read_file', args: { path: '.env' } }) as unknown as ApprovalRequest;

test('chat session close(): what waits on the user is answered, the agent stopped, and later questions are refused at once', async () => {
  const ui = fakeUi();
  const s = new ChatSession(ui as unknown as LuaUi, silentLog, 's1');
  let stops = 0;
  s.bind({ mode: 'create', state: 'idle', alwaysAllowedTools: [], stop: () => void stops++, revoke: () => [], setMode: () => undefined });
  const waiting = s.requestApproval(req('a1'));
  const asked = s.ask({ question: 'which?' });
  s.close();
  assert.deepEqual(await waiting, { decision: 'reject', reason: 'stopped by the user' });
  assert.equal(await asked, null);
  assert.equal(stops, 1);
  const before = ui.events.length;
  // The left session's winding-down work asks again: nobody would see it, so it is refused at once.
  assert.equal((await s.requestApproval(req('a2'))).decision, 'reject');
  assert.equal(await s.ask({ question: 'again?' }), null);
  assert.equal(await s.askOutsideTurn({ question: 'args?' }), null);
  assert.deepEqual(ui.events.slice(before), [], 'nothing shown for them');
});
