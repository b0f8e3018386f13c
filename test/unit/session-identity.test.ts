import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store';
import { SessionIdentity } from '../../src/host/session-parts/session-identity';
import { fakeUi } from '../support/session-parts';

test('session identity: the winbar learns the session, model, folder and title; a rename is the user\'s title', () => {
  const store = openStore(':memory:');
  const ui = fakeUi();
  const id = new SessionIdentity({ ui, sessions: store.sessions, sessionId: 's1', cwd: '/w', model: 'm' });
  id.announce('openai/m');
  assert.deepEqual(ui.events[0], ['session_info', { session: 's1', model: 'openai/m', cwd: '/w', title: null }]);
  assert.deepEqual(id.info(), { session: 's1', title: null, cwd: '/w', messages: 0 });
  assert.deepEqual(id.rename('  fix   the\nparser  '), { title: 'fix the parser' });
  assert.deepEqual(ui.events[1], ['session_info', { session: 's1', title: 'fix the parser' }]);
  assert.equal(store.sessions.get('s1')?.titleSource, 'user');
  assert.equal(id.info().title, 'fix the parser');
  assert.throws(() => id.rename(' \n '), /cannot be empty/);
  assert.equal(id.rename('x'.repeat(200)).title.length, 120);
});
