/** Pure host pieces behind the chat: frames of streamed text, tool lines, attached context. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LuaUi } from '../../src/host/lua-ui';
import { describeToolResult, diffStat } from '../../src/host/summaries';
import { composeMessage } from '../../src/host/message-context';
import { recorder, silentLog as silent } from '../support/session-parts';

test('streamed text goes out in frames: the first delta at once, the next ones joined within a frame', async () => {
  const r = recorder();
  const ui = new LuaUi(r.nvim, silent, 30);
  ui.emit('assistant_delta', { text: 'a' });
  for (const d of ['b', 'c', 'd']) ui.emit('assistant_delta', { text: d });
  assert.deepEqual(r.events, [['assistant_delta', { text: 'a' }]], 'the first delta is not delayed');
  await new Promise((res) => setTimeout(res, 60));
  assert.deepEqual(r.events.slice(1), [['assistant_delta', { text: 'bcd' }]], 'one event for the rest of the frame');
});

test("a reply's first text goes at once, even within the frame of the previous reply's last text", async () => {
  const r = recorder();
  const ui = new LuaUi(r.nvim, silent, 1000);
  ui.emit('assistant_start', {});
  ui.emit('assistant_delta', { text: 'first reply' });
  ui.emit('assistant_end', { interrupted: false });
  // The next message's reply starts well within the 1 s frame of 'first reply'.
  ui.emit('user_message', { id: 2, text: 'again' });
  ui.emit('assistant_start', {});
  ui.emit('assistant_delta', { text: 'Second' });
  assert.deepEqual(r.events.at(-1), ['assistant_delta', { text: 'Second' }], 'not held for the frame');
  // The text after it is paced again.
  ui.emit('assistant_delta', { text: ' reply' });
  ui.emit('assistant_delta', { text: '.' });
  assert.deepEqual(r.events.at(-1), ['assistant_delta', { text: 'Second' }]);
  ui.flush();
  assert.deepEqual(
    r.events.map(([e, p]) => `${e}${p.text === undefined ? '' : `:${String(p.text)}`}`),
    ['assistant_start', 'assistant_delta:first reply', 'assistant_end', 'user_message:again', 'assistant_start', 'assistant_delta:Second', 'assistant_delta: reply.'],
  );
});

test('any other event first sends the text waiting for its frame (order is kept)', () => {
  const r = recorder();
  const ui = new LuaUi(r.nvim, silent, 1000);
  ui.emit('assistant_delta', { text: 'x' });
  ui.emit('assistant_delta', { text: 'y' });
  ui.emit('assistant_delta', { text: 'z' });
  ui.emit('tool_call', { id: '1' });
  assert.deepEqual(
    r.events.map(([e, p]) => `${e}:${String(p.text ?? p.id)}`),
    ['assistant_delta:x', 'assistant_delta:yz', 'tool_call:1'],
  );
});

test("a session's scope: its events carry its tag; once closed, nothing it emits goes out, not even text waiting for its frame", () => {
  const r = recorder();
  const ui = new LuaUi(r.nvim, silent, 1000);
  const old = ui.scope(1);
  old.emit('assistant_delta', { text: 'a' });
  old.emit('assistant_delta', { text: 'b' }); // waits for its frame
  old.close();
  old.emit('assistant_end', { interrupted: true });
  old.emit('notice', { text: 'stopped' });
  const next = ui.scope(2);
  next.emit('state', { state: 'idle' });
  ui.emit('transcript', { session: 's' });
  assert.deepEqual(r.events, [
    ['assistant_delta', { text: 'a', _scope: 1 }],
    ['state', { state: 'idle', _scope: 2 }],
    ['transcript', { session: 's' }],
  ]);
});

test('scopes share the frames: text waiting from one goes out, with its tag, before the next event of another', () => {
  const r = recorder();
  const ui = new LuaUi(r.nvim, silent, 1000);
  const a = ui.scope(1);
  a.emit('assistant_delta', { text: 'x' });
  a.emit('assistant_delta', { text: 'y' });
  ui.emit('notice', { text: 'mcp' });
  a.emit('assistant_delta', { text: 'z' });
  ui.scope(2).emit('assistant_delta', { text: 'w' });
  ui.flush();
  assert.deepEqual(r.events, [
    ['assistant_delta', { text: 'x', _scope: 1 }],
    ['assistant_delta', { text: 'y', _scope: 1 }],
    ['notice', { text: 'mcp' }],
    ['assistant_delta', { text: 'z', _scope: 1 }],
    ['assistant_delta', { text: 'w', _scope: 2 }],
  ]);
});

test('tool results: status, a few words for the line, details without sha256 proofs', () => {
  const edit = describeToolResult(
    'edit_file',
    { path: 'a.ts', expectedSha256: 'f'.repeat(64), edits: [{ oldText: 'a', newText: 'b' }] },
    { ok: true, data: { path: 'a.ts', sha256: 'e'.repeat(64), diff: '--- a/a.ts\n+++ b/a.ts\n@@ -1 +1,2 @@\n-a\n+b\n+c\n', savedToDisk: false } },
  );
  assert.equal(edit.status, 'ok');
  assert.equal(edit.summary, '+2 −1 (not saved: unsaved buffer)');
  assert.ok(edit.details.includes('path: a.ts'));
  assert.ok(edit.details.includes('edits: 1 item'));
  assert.ok(!edit.details.some((l) => /f{64}|sha256/i.test(l)), 'no sha256 in the details');
  assert.ok(edit.details.includes('+c'));

  const bash = describeToolResult('bash', { command: 'npm test' }, { ok: true, data: { exitCode: 1, output: 'FAIL x\n', timedOut: false } });
  assert.equal(bash.summary, '→ exit 1');
  assert.ok(bash.details.includes('FAIL x'));

  const ask = describeToolResult('ask_user', { question: 'Which?' }, { ok: true, data: { answer: 'the second' } });
  assert.equal(ask.summary, '→ the second');
  assert.ok(ask.details.includes('answer: the second'));

  const rejected = describeToolResult('bash', { command: 'rm -rf x' }, { ok: false, error: { kind: 'rejected_by_user', message: 'The user rejected this bash call: no' } });
  assert.equal(rejected.status, 'rejected');
  const failed = describeToolResult('read_file', { path: 'x' }, { ok: false, error: { kind: 'not_found', message: 'nope', suggestedAction: 'list the folder' } });
  assert.equal(failed.status, 'error');
  assert.match(failed.summary, /^not_found: nope/);
  assert.ok(failed.details.includes('→ list the folder'));
  const cancelled = describeToolResult('bash', {}, { ok: false, error: { kind: 'cancelled', message: 'stopped' } });
  assert.equal(cancelled.status, 'cancelled');
});

test('long details are capped with a count of what was left out', () => {
  const output = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
  const v = describeToolResult('bash', { command: 'seq 100' }, { ok: true, data: { exitCode: 0, output } });
  assert.ok(v.details.length <= 42, String(v.details.length));
  assert.match(v.details.at(-1)!, /more lines/);
});

test('diffStat counts changed lines, not the file headers', () => {
  assert.deepEqual(diffStat('--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n'), { added: 1, removed: 1 });
});

test('composeMessage: files read through the workspace (with sha256), selections and unnamed buffers from Lua', async () => {
  const reads: string[] = [];
  const read = async (p: string) => {
    reads.push(p);
    if (p === 'missing.txt') return { ok: false as const, error: { kind: 'not_found' as const, message: 'no such file' } };
    return { ok: true as const, data: { path: p, content: 'x = 1\n', sha256: 'a'.repeat(64), totalLines: 1, truncated: false, unsavedBuffer: p === 'b.py' } };
  };
  const m = await composeMessage(
    'look',
    [
      { kind: 'file', path: 'a.py', filetype: 'python' },
      { kind: 'buffer', path: 'b.py', filetype: 'python', text: 'ignored: the host reads the buffer', modified: true },
      { kind: 'selection', path: 'c.lua', filetype: 'lua', text: 'print(1)', startLine: 3, endLine: 3 },
      { kind: 'buffer', path: '', filetype: 'text', text: 'scratch ```code``` here', modified: true },
      { kind: 'file', path: 'missing.txt' },
    ],
    read,
  );
  assert.deepEqual(reads, ['a.py', 'b.py', 'missing.txt']);
  assert.match(m.text, /^look\n\nFile a\.py \(1 line, python, sha256 a{64}\):\n```python\nx = 1\n```/);
  assert.match(m.text, /File b\.py \(1 line, python, unsaved changes in the buffer/);
  assert.match(m.text, /Selection from c\.lua \(lines 3-3, lua\):\n```lua\nprint\(1\)\n```/);
  assert.match(m.text, /Buffer \[No Name\] \(1 line, text, unsaved; not a workspace file\):\n````text\nscratch ```code``` here\n````/, 'a longer fence than the text holds');
  assert.match(m.text, /could not be read: not_found/);
  assert.deepEqual(m.labels, ['@a.py a.py (1 line)', '#buffer b.py (1 line, unsaved)', 'selection c.lua:3-3', '#buffer [No Name] (1 line, unsaved)', '@missing.txt — not attached: not_found']);
});

test('composeMessage: a file attached twice (#buffer and @path) goes once, where it came first', async () => {
  const read = async (p: string) => ({ ok: true as const, data: { path: p.replace(/^\.\//, ''), content: 'a\nb\n', sha256: 'b'.repeat(64), totalLines: 2, truncated: false } });
  const m = await composeMessage(
    'explain',
    [
      { kind: 'buffer', path: 'src/main.py', text: 'a\nb\n' },
      { kind: 'file', path: './src/main.py' },
      { kind: 'file', path: 'other.py' },
      { kind: 'selection', path: 'src/main.py', text: 'b', startLine: 2, endLine: 2 },
    ],
    read,
  );
  assert.deepEqual(m.labels, ['#buffer src/main.py (2 lines)', '@other.py other.py (2 lines)', 'selection src/main.py:2-2']);
  assert.equal(m.text.match(/File src\/main\.py/g)?.length, 1);
});

test('composeMessage without context is the text itself', async () => {
  assert.deepEqual(await composeMessage('hi', [], async () => ({ ok: false, error: { kind: 'not_found', message: '' } })), { text: 'hi', labels: [] });
});
