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
