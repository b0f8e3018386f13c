import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PERMISSION_MODES, isPermissionMode, permissionFor } from '../../src/tools/permissions';
import { parseToolArguments, assistantMessage, interruptedAssistantMessage, INTERRUPTED_MARKER } from '../../src/agent/messages';
import type { ToolPolicy } from '../../src/tools/tool';

test('permission table: every mode × policy', () => {
  const policies: ToolPolicy[] = ['read', 'interactive', 'edit', 'exec'];
  const table = Object.fromEntries(PERMISSION_MODES.map((m) => [m, policies.map((p) => permissionFor(m, p)).join(' ')]));
  assert.deepEqual(table, {
    plan: 'run run block block',
    create: 'run run ask ask',
    'auto-edit': 'run run run ask',
    chug: 'run run run run',
  });
  assert.equal(isPermissionMode('chug'), true);
  assert.equal(isPermissionMode('yolo'), false);
});

test('tool arguments: empty means {}, malformed JSON gives a message quoting the input', () => {
  assert.deepEqual(parseToolArguments(''), { ok: true, args: {} });
  assert.deepEqual(parseToolArguments('{"a":1}'), { ok: true, args: { a: 1 } });
  const bad = parseToolArguments('{"a":');
  assert.equal(bad.ok, false);
  assert.match(bad.ok ? '' : bad.message, /^arguments are not valid JSON: .*\(received: \{"a":\)$/);
});

test('assistant messages: tool calls in OpenAI format, interrupted text marked', () => {
  assert.deepEqual(assistantMessage('', [{ id: 'c', name: 'n', arguments: '{}' }]), {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'c', type: 'function', function: { name: 'n', arguments: '{}' } }],
  });
  assert.deepEqual(interruptedAssistantMessage('half'), { role: 'assistant', content: `half\n\n${INTERRUPTED_MARKER}` });
});
