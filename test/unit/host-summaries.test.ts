import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeSubagentProgress, describeToolResult, summarizeApprovalArgs, summarizeToolCall } from '../../src/host/summaries';
import type { SubagentTranscript } from '../../src/agent/subagent';

const SHA = 'a'.repeat(64);

test('edit_file: the path and the number of edits, never the sha256', () => {
  const lines = summarizeApprovalArgs(
    { path: 'src/a.ts', expectedSha256: SHA, edits: [{ oldText: 'x', newText: 'y' }, { oldText: 'p', newText: 'q', replaceAll: true }] },
    { kind: 'diff', path: 'src/a.ts', diff: '…' },
  );
  assert.deepEqual(lines, ['path: src/a.ts', '2 edits (1 replacing every occurrence)']);
});

test('write_file and create_file: the size of the content; expectedSha256 "" says the file is new', () => {
  assert.deepEqual(summarizeApprovalArgs({ path: 'n.txt', content: 'one\ntwo\n', expectedSha256: '' }), [
    'path: n.txt',
    'content: 2 lines, 8 bytes',
    'creates the file (it must not exist yet)',
  ]);
  assert.deepEqual(summarizeApprovalArgs({ content: 'x', path: 'c.txt' }), ['path: c.txt', 'content: 1 line, 1 byte']);
});

test('bash: the preview shows the command, the summary the resolved folder and the timeout', () => {
  const preview = { kind: 'command' as const, command: 'npm test', cwd: '/ws/pkg' };
  assert.deepEqual(summarizeApprovalArgs({ command: 'npm test', cwd: 'pkg', timeoutMs: 5000 }, preview), ['cwd: /ws/pkg', 'timeoutMs: 5000']);
  assert.deepEqual(summarizeApprovalArgs({ command: 'npm test' }, { ...preview, cwd: '/ws' }), ['cwd: /ws']);
  assert.deepEqual(summarizeApprovalArgs({ command: 'make\nmake install' }), ['command: make (+1 line)'], 'without a preview the command is summarized');
});

test('apply_patch: the files it touches (envelope or unified diff), never expectedSha256ByPath', () => {
  const envelope = '*** Begin Patch\n*** Update File: a.ts\n@@\n-x\n+y\n*** Add File: b.ts\n+b\n*** Update File: c.ts\n*** Move to: d.ts\n*** Delete File: e.ts\n*** End Patch';
  assert.deepEqual(summarizeApprovalArgs({ patch: envelope, expectedSha256ByPath: { 'a.ts': SHA } }), ['4 files: update a.ts, add b.ts, update c.ts → d.ts, delete e.ts']);
  const unified = '--- a/x.ts\n+++ b/x.ts\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.ts\n@@ -0,0 +1 @@\n+n\n';
  assert.deepEqual(summarizeApprovalArgs({ patch: unified }), ['2 files: update x.ts, add new.ts']);
});

test('other tools: readable key: value lines, nested values by their names, no raw structures', () => {
  assert.deepEqual(summarizeApprovalArgs({ from: 'a.txt', to: 'b/a.txt' }), ['from: a.txt', 'to: b/a.txt']);
  assert.deepEqual(summarizeApprovalArgs({ headers: { Accept: 'json', 'X-Key': 'k' }, url: 'https://x.test', method: 'POST', body: '{}' }), [
    'url: https://x.test',
    'method: POST',
    'headers: Accept, X-Key',
    'body: 1 line, 2 bytes',
  ]);
  assert.deepEqual(summarizeApprovalArgs({ choices: ['a', 'b'], flags: [{ x: 1 }] }), ['choices: a, b', 'flags: 1 item']);
  assert.deepEqual(summarizeApprovalArgs(undefined), []);
  for (const l of summarizeApprovalArgs({ deep: { a: { b: 1 } }, list: [[1]] })) assert.doesNotMatch(l, /\[object|\{/);
});

test('a partially applied change says how many hunks were applied and which were rejected', () => {
  const v = describeToolResult('edit_file', { path: 'a.txt' }, {
    ok: true,
    data: { path: 'a.txt', diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n', review: { applied: [{ path: 'a.txt', hunks: [1, 3] }], rejected: [{ path: 'a.txt', hunk: 2, reason: 'no' }] } },
  });
  assert.match(v.summary, /\(2 hunks applied, 1 rejected\)/);
  assert.ok(v.details.includes('rejected a.txt hunk 2: no'));
});

test('a subagent: its line counts the tool calls; its folded details list its steps and the start of its answer', () => {
  const call = (id: string, name: string, args: unknown) => ({ id, type: 'function' as const, function: { name, arguments: JSON.stringify(args) } });
  const transcript: SubagentTranscript = {
    toolCallId: 'P1',
    name: 'agent',
    label: 'agent #2: write the files',
    task: 'write the files',
    tools: ['read_file', 'create_file'],
    mode: 'create',
    status: 'ok',
    messages: [
      { role: 'user', content: 'write the files' },
      { role: 'assistant', content: null, tool_calls: [call('c1', 'read_file', { path: 'a.ts' }), call('c2', 'create_file', { path: 'b.ts', content: 'x' })] },
      { role: 'tool', tool_call_id: 'c1', content: JSON.stringify({ ok: true, data: { totalLines: 12 } }) },
      { role: 'tool', tool_call_id: 'c2', content: JSON.stringify({ ok: false, error: { kind: 'rejected_by_user', message: 'The user rejected this create_file call.' } }) },
      { role: 'assistant', content: null, tool_calls: [call('c3', 'bash', { command: 'npm test' })] },
    ],
  };
  const answer = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n');
  const view = describeToolResult('agent', { task: 'write the files' }, { ok: true, data: { answer, toolCalls: 3, truncated: true } }, transcript);
  assert.equal(view.status, 'ok');
  assert.equal(view.summary, '3 tool calls (answer cut)');
  assert.deepEqual(view.details, [
    'task: write the files',
    'step 1: ✓ read_file a.ts 12 lines',
    'step 2: ⊘ create_file b.ts The user rejected this create_file call.',
    'step 3: ◌ bash npm test (no result)',
    'answer:',
    ...Array.from({ length: 8 }, (_, i) => `  line ${i + 1}`),
    '  … 2 more lines',
  ]);
  const stopped = describeToolResult('agent', { task: 't' }, { ok: false, error: { kind: 'cancelled', message: 'The subagent was stopped.' } }, transcript);
  assert.equal(stopped.status, 'cancelled');
  assert.ok(stopped.details.includes('step 1: ✓ read_file a.ts 12 lines'), 'a stopped child still shows what it did');
});

test('a subagent\'s live progress and its call line', () => {
  assert.equal(describeSubagentProgress({ toolCallId: 'P', label: 'agent #2: fix it', step: 3, tool: 'edit_file', args: { path: 'src/a.ts' } }), '[#2] step 3: edit_file src/a.ts');
  assert.equal(summarizeToolCall('agent', { task: 'Write a.txt\nthen b.txt' }), 'agent Write a.txt');
});

test('a write that changed diagnostics says so on its line and lists them in its details', () => {
  const e = (severity: 'error' | 'warning', line: number, message: string) => ({ path: 'a.ts', severity, line, col: 7, endLine: line, endCol: 8, message, source: 'typescript', code: 2322 });
  const v = describeToolResult('edit_file', { path: 'a.ts' }, {
    ok: true,
    data: {
      path: 'a.ts',
      diff: '--- a.ts\n+++ a.ts\n@@ -1 +1 @@\n-a\n+b\n',
      diagnostics: { introduced: [e('error', 1, "Type 'string' is not assignable to type 'number'."), e('warning', 2, 'w')], resolved: [e('error', 9, 'gone')], unchangedCount: 3, waitedMs: 420 },
    },
  });
  assert.equal(v.summary, '+1 −1 · 1 new error, 1 new warning, 1 error fixed');
  assert.ok(v.details.includes("new a.ts:1:7 error Type 'string' is not assignable to type 'number'. [typescript 2322]"), v.details.join('\n'));
  assert.ok(v.details.includes('fixed a.ts:9:7 error gone [typescript 2322]'));
  const quiet = describeToolResult('edit_file', {}, { ok: true, data: { diff: '', diagnostics: { introduced: [], resolved: [], unchangedCount: 0, waitedMs: 2000, timedOut: true } } });
  assert.equal(quiet.summary, '');
  assert.ok(quiet.details.includes('diagnostics: no language server report within 2000 ms'));
});

test('the diagnostics tool: totals on its line, one detail per diagnostic', () => {
  const data = {
    loaded: true,
    files: [{ path: 'a.ts', modified: false, clients: ['tsls'], counts: { error: 2, warning: 0, info: 1, hint: 0 } }],
    diagnostics: [{ path: 'a.ts', severity: 'error', line: 3, col: 1, endLine: 3, endCol: 4, message: 'boom\nsecond line' }],
    total: 1,
    truncated: false,
  };
  const v = describeToolResult('diagnostics', { path: 'a.ts' }, { ok: true, data });
  assert.equal(v.summary, '2 errors, 1 info in 1 file');
  assert.deepEqual(v.details, ['path: a.ts', 'a.ts:3:1 error boom']);
  assert.equal(describeToolResult('diagnostics', {}, { ok: true, data: { ...data, files: [], diagnostics: [] } }).summary, 'no diagnostics in 0 files');
  assert.equal(describeToolResult('diagnostics', {}, { ok: true, data: { ...data, loaded: false, files: [], diagnostics: [] } }).summary, 'not loaded in Neovim');
  assert.equal(summarizeToolCall('diagnostics', { path: 'src/a.ts' }), 'diagnostics src/a.ts');
});

test('read_file: its line count in the chat, singular for one line', () => {
  const one = describeToolResult('read_file', { path: 'a.ts' }, { ok: true, data: { path: 'a.ts', totalLines: 1, content: 'x' } });
  assert.match(one.summary, /^1 line$/);
  const many = describeToolResult('read_file', { path: 'a.ts' }, { ok: true, data: { path: 'a.ts', totalLines: 40, content: 'x' } });
  assert.match(many.summary, /^40 lines$/);
});

test('approval summary: nothing above a preview that shows every argument (an MCP call\'s JSON)', () => {
  assert.deepEqual(summarizeApprovalArgs({ text: 'hi' }, { kind: 'text', text: 'arguments: {"text":"hi"}', showsArguments: true }), []);
  assert.deepEqual(summarizeApprovalArgs({ text: 'hi' }, { kind: 'text', text: 'something else' }), ['text: hi']);
});
