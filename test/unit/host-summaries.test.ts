import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeToolResult, summarizeApprovalArgs } from '../../src/host/summaries';

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
