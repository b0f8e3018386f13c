import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolLines } from '../../src/host/session-parts/tool-lines';
import type { SubagentTranscript } from '../../src/agent/subagent';
import { describeToolResult } from '../../src/host/summaries';
import { fakeUi } from '../support/session-parts';

const sandbox = (available: boolean) =>
  ({ unavailable: !available, support: available ? { available: true } : { available: false, reason: 'bwrap not found', fix: 'install bubblewrap' } }) as never;

test('tool lines: a call shows its summary, its result the view, recorded with the session; bash re-reads buffers', () => {
  const ui = fakeUi();
  const views: string[] = [];
  const notices: string[] = [];
  const lines = new ToolLines({ ui, sandbox: sandbox(true), recordView: (id, v) => views.push(`${id}:${v.status}`), notice: (t) => notices.push(t) });
  lines.call({ id: 'c1', name: 'read_file', args: { path: 'a.ts' } });
  lines.result({ id: 'c1', name: 'read_file', result: { ok: true, data: { path: 'a.ts', content: 'x', totalLines: 1 } } });
  lines.call({ id: 'c2', name: 'bash', args: { command: 'ls' } });
  lines.result({ id: 'c2', name: 'bash', result: { ok: false, error: { kind: 'timeout', message: 'too slow' } } });
  assert.deepEqual(ui.events.map(([e, p]) => `${e}:${p.id ?? ''}`), ['tool_call:c1', 'tool_result:c1', 'tool_call:c2', 'tool_result:c2', 'disk_changed:']);
  assert.match(String(ui.events[0][1].summary), /a\.ts/);
  assert.equal(ui.events[3][1].ok, false);
  assert.deepEqual(views, ['c1:ok', 'c2:error']);
  assert.deepEqual(notices, [], 'the sandbox is there: no notice');
});

test('tool lines: without a sandbox, the first bash call (only) says commands are not sandboxed', () => {
  const notices: string[] = [];
  const lines = new ToolLines({ ui: fakeUi(), sandbox: sandbox(false), recordView: () => {}, notice: (t) => notices.push(t) });
  lines.call({ id: 'c1', name: 'read_file', args: {} });
  lines.call({ id: 'c2', name: 'bash', args: { command: 'ls' } });
  lines.call({ id: 'c3', name: 'bash', args: { command: 'pwd' } });
  assert.equal(notices.length, 1);
  assert.match(notices[0], /^commands are not sandboxed: bwrap not found; every command asks \(fix: install bubblewrap;/);
});

test('tool lines: a finished subagent\'s transcript goes with its call\'s result, a running one does not', () => {
  const ui = fakeUi();
  const lines = new ToolLines({ ui, sandbox: sandbox(true), recordView: () => {}, notice: () => {} });
  const t = { toolCallId: 'c1', name: 'explore', label: 'explore #1', task: 'find', status: 'done',
    messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'k1', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.ts"}' } }] }],
  } as unknown as SubagentTranscript;
  lines.transcript({ ...t, toolCallId: 'other' }); // no such call: dropped
  lines.call({ id: 'c1', name: 'explore', args: { task: 'find' } });
  lines.transcript({ ...t, status: 'running' } as SubagentTranscript);
  lines.transcript(t);
  lines.result({ id: 'c1', name: 'explore', result: { ok: true, data: { answer: 'here', toolCalls: 0 } } });
  const r = ui.events.find(([e]) => e === 'tool_result')![1];
  const result = { ok: true as const, data: { answer: 'here', toolCalls: 0 } };
  const withSteps = describeToolResult('explore', { task: 'find' }, result, t).details;
  assert.notDeepEqual(withSteps, describeToolResult('explore', { task: 'find' }, result).details, 'precondition: the transcript adds steps');
  assert.deepEqual(r.details, withSteps);
});
