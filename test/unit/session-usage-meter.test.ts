import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageMeter } from '../../src/host/session-parts/usage-meter';
import { fakeUi } from '../support/session-parts';

test('usage meter: the last request is the main agent\'s, the session totals count subagents too', () => {
  const ui = fakeUi();
  const meter = new UsageMeter(ui);
  meter.count({ promptTokens: 100, completionTokens: 10, totalTokens: 110, cachedTokens: 40, reasoningTokens: 0 }, true);
  meter.count({ promptTokens: 7, completionTokens: 3, totalTokens: 10 }, false);
  assert.deepEqual(ui.events, [
    ['usage', { prompt: 100, completion: 10, session_prompt: 100, session_completion: 10, cached: 40 }],
    // a subagent's request: the totals grow, the last request (and its cached count) stays the main agent's
    ['usage', { prompt: 100, completion: 10, session_prompt: 107, session_completion: 13, cached: 40 }],
  ]);
  meter.count({ promptTokens: 5, completionTokens: 1, totalTokens: 6, reasoningTokens: 9 }, true);
  assert.deepEqual(ui.events[2], ['usage', { prompt: 5, completion: 1, session_prompt: 112, session_completion: 14, reasoning: 9 }]);
});

test('usage meter: a reopened session continues from its stored total, and each request is stored', () => {
  const ui = fakeUi();
  const stored: [number, number][] = [];
  const errors: string[] = [];
  const meter = new UsageMeter(ui, { stored: { prompt: 1000, completion: 200 }, store: (p, c) => void stored.push([p, c]), log: { error: (m: string) => void errors.push(m) } });
  meter.announceStored();
  assert.deepEqual(ui.events, [['usage', { session_prompt: 1000, session_completion: 200 }]], 'only Σ is known before a request');
  meter.count({ promptTokens: 10, completionTokens: 2, totalTokens: 12 }, true);
  assert.deepEqual(ui.events[1], ['usage', { prompt: 10, completion: 2, session_prompt: 1010, session_completion: 202 }]);
  assert.deepEqual(stored, [[10, 2]]);
  const failing = new UsageMeter(fakeUi(), { store: () => { throw new Error('database is locked'); }, log: { error: (m: string) => void errors.push(m) } });
  failing.count({ promptTokens: 1, completionTokens: 1, totalTokens: 2 }, true);
  assert.deepEqual(errors, ['session store: usage not stored: %s'], 'a store failure is logged, the count goes on');
  const fresh = fakeUi();
  new UsageMeter(fresh, { stored: { prompt: 0, completion: 0 } }).announceStored();
  assert.deepEqual(fresh.events, [], 'nothing stored: nothing to show');
});
