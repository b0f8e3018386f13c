import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pruneToolOutputs, PRUNED_TOOL_OUTPUT } from '../../src/agent/context';
import type { ChatMessage } from '../../src/agent/provider';

const big = 'x'.repeat(1000);
const turn = (n: number): ChatMessage[] => [
  { role: 'user', content: `q${n}` },
  { role: 'assistant', content: null, tool_calls: [{ id: `c${n}`, type: 'function', function: { name: 'read_file', arguments: '{}' } }] },
  { role: 'tool', tool_call_id: `c${n}`, content: big },
  { role: 'tool', tool_call_id: `s${n}`, content: 'short' },
  { role: 'assistant', content: `a${n}` },
];

test('tool outputs older than the last 3 user turns are replaced; short ones, calls and text stay', () => {
  const history = [1, 2, 3, 4, 5].flatMap(turn);
  const pruned = pruneToolOutputs(history, 3);
  const contents = pruned.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.deepEqual(contents, [PRUNED_TOOL_OUTPUT, 'short', PRUNED_TOOL_OUTPUT, 'short', big, 'short', big, 'short', big, 'short']);
  assert.equal(pruned.length, history.length);
  assert.deepEqual(pruned.filter((m) => m.role !== 'tool'), history.filter((m) => m.role !== 'tool'));
  assert.equal(history[2].content, big, 'the original history is not altered');
});

test('a short conversation is sent unchanged', () => {
  const history = [1, 2].flatMap(turn);
  assert.deepEqual(pruneToolOutputs(history, 3), history);
});
