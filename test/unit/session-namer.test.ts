import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store';
import { SessionNamer } from '../../src/host/session-parts/session-namer';
import type { ChatMessage } from '../../src/agent/provider';
import { fakeModel, silentLog } from '../support/session-parts';

const turn: ChatMessage[] = [
  { role: 'user', content: 'why does the parser drop the last token' },
  { role: 'assistant', content: 'Because the loop stops one short.' },
];
const settle = () => new Promise((r) => setTimeout(r, 20));

test('session namer: after the first reply the model names the session, once', async () => {
  const store = openStore(':memory:');
  store.sessions.ensure({ id: 's1', cwd: '/w', model: 'm' });
  const model = fakeModel({ text: 'Parser drops last token' });
  const titles: string[] = [];
  const namer = new SessionNamer({ sessions: store.sessions, sessionId: 's1', client: () => model, onTitle: (t) => titles.push(t), log: silentLog, signal: new AbortController().signal });
  namer.nameAfterTurn(turn);
  namer.nameAfterTurn(turn);
  await settle();
  assert.equal(model.requests.length, 1, 'asked once');
  assert.deepEqual(titles, ['Parser drops last token']);
  assert.equal(store.sessions.get('s1')?.titleSource, 'model');
  assert.match(JSON.stringify(model.requests[0].messages), /why does the parser drop the last token/);
});

test('session namer: a title the user gave wins; no session row or no user message: nothing is asked', async () => {
  const store = openStore(':memory:');
  const model = fakeModel({ text: 'Model title' });
  const titles: string[] = [];
  const namer = new SessionNamer({ sessions: store.sessions, sessionId: 's1', client: () => model, onTitle: (t) => titles.push(t), log: silentLog, signal: new AbortController().signal });
  namer.nameAfterTurn(turn); // no row yet
  store.sessions.ensure({ id: 's1', cwd: '/w', model: 'm' });
  namer.nameAfterTurn([{ role: 'assistant', content: 'hello' }]); // no user message
  store.sessions.rename('s1', 'Mine', 'user');
  namer.nameAfterTurn(turn);
  await settle();
  assert.equal(model.requests.length, 0);
  assert.deepEqual(titles, []);
  assert.equal(store.sessions.get('s1')?.title, 'Mine');
});

test('session namer: settled() resolves once the title request in flight is stored (a closing session waits for it)', async () => {
  const store = openStore(':memory:');
  store.sessions.ensure({ id: 's1', cwd: '/w', model: 'm' });
  const model = fakeModel({ text: 'A late session title' });
  const namer = new SessionNamer({ sessions: store.sessions, sessionId: 's1', client: () => model, onTitle: () => undefined, log: silentLog, signal: new AbortController().signal });
  await namer.settled(); // nothing in flight
  namer.nameAfterTurn(turn);
  await namer.settled();
  assert.equal(store.sessions.get('s1')?.title, 'A late session title', 'stored before settled() resolved');
  store.close();
});
