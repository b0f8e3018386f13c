import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store';
import { ftsQuery } from '../../src/store/sessions';
import { FLUSH_MS, SessionRecorder } from '../../src/host/session-recorder';
import { fallbackTitle, restoreConversation, transcriptItems } from '../../src/host/session-history';
import { cleanTitle } from '../../src/host/session-title';
import { capToolResultJson } from '../../src/workspace/output';
import { conversationText } from '../../src/tools/recall';
import { DEFAULT_CONTEXT_WINDOW, knownContextWindow, listedContextWindow, pruneToolOutputs } from '../../src/agent/context';
import { resolveContextWindow } from '../../src/host/model-list';
import { isContextLengthMessage } from '../../src/agent/provider';
import { INTERRUPTED_MARKER } from '../../src/agent/messages';
import type { ChatMessage } from '../../src/agent/provider';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const call = (id: string, name: string, args: object): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
});
const result = (id: string, data: unknown): ChatMessage => ({ role: 'tool', tool_call_id: id, content: JSON.stringify({ ok: true, data }) });

describe('session store', () => {
  it('records messages, a streaming reply and its flush, and restores them in order', () => {
    const store = openStore(':memory:');
    const rec = new SessionRecorder(store.sessions, 's1', { cwd: '/w', model: 'm' });
    const u = user('find the bug\n\n<attached file>');
    rec.turnStart({ text: 'find the bug', labels: ['src/a.ts'] });
    rec.messageAdded(u);
    rec.text('Looking');
    rec.text(' now');
    rec.flush();
    let rows = store.sessions.rows('s1');
    assert.equal(rows.length, 2);
    assert.equal(rows[1].partial, true);
    assert.deepEqual(rows[1].message, { role: 'assistant', content: 'Looking now' });
    // Restored after a crash at this point: the reply is marked interrupted.
    assert.deepEqual(
      restoreConversation(rows).map((r) => r.message),
      [u, { role: 'assistant', content: `Looking now\n\n${INTERRUPTED_MARKER}` }],
    );
    const a = call('c1', 'read_file', { path: 'src/a.ts' });
    rec.messageAdded(a);
    rows = store.sessions.rows('s1');
    assert.equal(rows.length, 2, 'the partial row became the assistant message');
    assert.equal(rows[1].partial, false);
    // A tool call without its result (killed mid-tool) gets one saying so.
    const restored = restoreConversation(rows).map((r) => r.message);
    assert.equal(restored.length, 3);
    assert.equal(restored[2].role, 'tool');
    assert.match(String(restored[2].content), /stopped before this call finished/);
    rec.messageAdded(result('c1', { content: 'x'.repeat(1000), sha256: 'abc' }));
    const info = store.sessions.get('s1')!;
    assert.equal(info.title, 'find the bug');
    assert.equal(info.titleSource, 'fallback');
    assert.equal(info.messageCount, 3);
    const items = transcriptItems(store.sessions.rows('s1'));
    assert.deepEqual(items[0], { t: 'user', text: 'find the bug', labels: ['src/a.ts'] });
    assert.equal(items[1].t, 'tool');
    assert.equal((items[1] as { status: string }).status, 'ok');
    // The stored row id is what pruning stubs name.
    const history = restoreConversation(store.sessions.rows('s1'));
    rec.adopt(history);
    const msgs = [...history.map((h) => h.message), user('2'), user('3'), user('4')];
    const pruned = pruneToolOutputs(msgs, 3, rec.storedId);
    assert.match(String(pruned[2].content), new RegExp(`stored as #${history[2].rowId} — call recall with id ${history[2].rowId}`));
  });

  it('compaction archives the replaced rows under the summary row; a reload continues from the summary', () => {
    const store = openStore(':memory:');
    const rec = new SessionRecorder(store.sessions, 's1', { cwd: '/w', model: 'm' });
    const u1 = user('one');
    const a1: ChatMessage = { role: 'assistant', content: 'first' };
    const u2 = user('two');
    for (const m of [u1, a1, u2]) rec.messageAdded(m);
    const id = rec.archive([u1, a1], 'the summary')!;
    assert.deepEqual(
      store.sessions.archivedBy('s1', id).map((r) => r.message),
      [u1, a1],
    );
    const restored = restoreConversation(store.sessions.rows('s1')).map((r) => r.message);
    assert.equal(restored.length, 3);
    assert.match(String(restored[0].content), new RegExp(`the summary[\\s\\S]*archived as #${id}`));
    assert.deepEqual(restored[2], u2);
    // The transcript still shows every message.
    assert.deepEqual(
      transcriptItems(store.sessions.rows('s1')).map((i) => i.t),
      ['user', 'text', 'user'],
    );
  });

  it('full-text search: words as prefixes, this folder first, with a snippet; delete removes the rows', () => {
    const store = openStore(':memory:');
    const add = (id: string, cwd: string, text: string) => {
      store.sessions.ensure({ id, cwd, title: fallbackTitle(text) });
      store.sessions.append(id, { kind: 'message', role: 'user', message: user(text), text });
    };
    add('a', '/elsewhere', 'the pelican migration pattern');
    add('b', '/here', 'pelicans and widgets');
    add('c', '/here', 'nothing about birds');
    const hits = store.sessions.search('pelic', { cwd: '/here' });
    assert.deepEqual(
      hits.map((h) => h.id),
      ['b', 'a'],
    );
    assert.match(hits[0].snippet, /«pelicans»/);
    assert.deepEqual(store.sessions.search('pelican migration').map((h) => h.id), ['a']);
    assert.deepEqual(store.sessions.search('"); DROP TABLE sessions; --'), []);
    assert.deepEqual(store.sessions.list({ cwd: '/here' }).map((s) => s.id).slice(0, 2).sort(), ['b', 'c']);
    const meta = { root: '/here', messageId: null, message: 'change it', createdAt: new Date().toISOString() };
    store.checkpoints.record(null, { ...meta, sessionId: 'a' }, [{ path: 'x.txt', before: null, afterSha256: 'f'.repeat(64) }]);
    store.checkpoints.record(null, { ...meta, sessionId: 'b' }, [{ path: 'y.txt', before: null, afterSha256: 'e'.repeat(64) }]);
    assert.equal(store.sessions.delete('a'), true);
    assert.deepEqual(store.checkpoints.list('a'), [], 'its checkpoints go with it');
    assert.equal(store.checkpoints.list('b').length, 1, "another session's stay");
    assert.equal((store.db.prepare('SELECT count(*) AS n FROM checkpoint_files').get() as { n: number }).n, 1);
    assert.deepEqual(store.sessions.search('migration'), []);
    assert.equal(store.sessions.rows('a').length, 0);
    assert.equal(ftsQuery('  ...  '), null);
    // A subagent's transcript is kept with its session, outside the model's context, and searchable.
    const rec = new SessionRecorder(store.sessions, 'b', { cwd: '/here', model: 'm' });
    rec.subagent({ toolCallId: 'c9', label: 'agent #1: fix the parser', task: 'fix the parser', status: 'ok', messages: [user('fix the parser'), { role: 'assistant', content: 'Fixed the tokenizer bug.' }] });
    const row = store.sessions.rows('b').at(-1)!;
    assert.equal(row.kind, 'subagent');
    assert.equal(row.inContext, false);
    assert.equal((row.message as { messages: unknown[] }).messages.length, 2);
    assert.deepEqual(store.sessions.search('tokenizer').map((h) => h.id), ['b']);
    assert.equal(restoreConversation(store.sessions.rows('b')).length, 1, 'not part of the conversation');
  });

  it("a running subagent's transcript is written as it grows (at most every FLUSH_MS), in one row", async () => {
    const store = openStore(':memory:');
    const rec = new SessionRecorder(store.sessions, 's', { cwd: '/w', model: 'm' });
    const t = { toolCallId: 'c1', label: 'agent #1: rename', task: 'rename x', status: 'running' as const, messages: [user('rename x')] };
    const stored = () => store.sessions.rows('s').filter((r) => r.kind === 'subagent');
    const messages = () => (stored()[0].message as { messages: unknown[]; status: string }).messages.length;
    rec.subagent(t);
    assert.equal(stored().length, 1, 'the first step is written at once');
    rec.subagent({ ...t, messages: [user('rename x'), call('k1', 'grep', { pattern: 'x' })] });
    assert.equal(messages(), 1, 'the next write waits for the flush interval');
    await new Promise((r) => setTimeout(r, FLUSH_MS + 50));
    assert.equal(messages(), 2, 'then the transcript so far is on disk (a crash now keeps it)');
    rec.subagent({ ...t, status: 'ok', messages: [user('rename x'), call('k1', 'grep', { pattern: 'x' }), result('k1', {}), { role: 'assistant', content: 'Renamed x to count.' }] });
    assert.equal(stored().length, 1);
    assert.equal(messages(), 4, 'the end is written at once');
    assert.equal((stored()[0].display as { status: string }).status, 'ok');
    assert.deepEqual(store.sessions.search('count').map((h) => h.id), ['s']);
    rec.dispose();
  });
});

describe('titles, caps and context windows', () => {
  it('cleans model titles and falls back to the first words', () => {
    assert.equal(cleanTitle('"Fix the flaky login test."'), 'Fix the flaky login test');
    assert.equal(cleanTitle('“Fix the flaky login test.”'), 'Fix the flaky login test', 'curly quotes too (written as \\u escapes in the source)');
    assert.equal(cleanTitle('‘Fix the flaky login test’'), 'Fix the flaky login test');
    assert.equal(cleanTitle('Title: **Refactor parser module**\nmore'), 'Refactor parser module');
    assert.equal(cleanTitle('one two three four five six seven eight'), 'one two three four five six');
    assert.equal(cleanTitle('   '), null);
    assert.equal(cleanTitle('Refactoring'), null, 'fewer than 3 words: the first words stay');
    assert.equal(cleanTitle('"Parser refactor"'), null);
    assert.equal(fallbackTitle('please   rename the variable x in parser.ts to something better'), 'please rename the variable x in…');
  });

  it('an archived segment reads back as text; an earlier summary in it still names its own archive', () => {
    const text = conversationText([
      { id: 7, role: 'user', message: { summary: '## Intent\nLearn about pelicans.' } },
      { id: 8, role: 'user', message: user('and herons?') },
      { id: 9, role: 'assistant', message: call('c1', 'read_file', { path: 'birds.md' }) },
      { id: 10, role: 'tool', message: result('c1', { content: 'herons\n' }) },
    ]);
    assert.match(text, /^\[summary of an earlier part, archived as #7: call recall with id 7 to read it\]\n## Intent\nLearn about pelicans\./);
    assert.match(text, /\[user\]\nand herons\?\n\n\[assistant\]\n\n\n\[tool call\] read_file \{"path":"birds.md"\}\n\n\[tool result\]\n\{"ok":true/);
  });

  it('caps any tool result at 50 KB with a notice (explore/agent answers included)', () => {
    const answer = 'a line of the subagent report\n'.repeat(4500); // ~130 KB
    const json = capToolResultJson({ ok: true, data: { answer, toolCalls: 3 } });
    assert.ok(Buffer.byteLength(json) <= 52 * 1024, `${Buffer.byteLength(json)} bytes`);
    const parsed = JSON.parse(json) as { ok: boolean; data: { answer: string; toolCalls: number } };
    assert.equal(parsed.data.toolCalls, 3);
    assert.match(parsed.data.answer, /\[output truncated: \d+ of 4500 lines/);
    // 2,000 lines across the text fields, even when the bytes are few.
    const many = capToolResultJson({ ok: true, data: { stdout: 'ok\n'.repeat(3000), stderr: 'warn\n'.repeat(300) } });
    const cut = JSON.parse(many) as { data: { stdout: string; stderr: string } };
    const lines = (s: string) => s.split('\n').length - 1;
    assert.ok(lines(cut.data.stdout) + lines(cut.data.stderr) <= 2000, `${lines(cut.data.stdout)} + ${lines(cut.data.stderr)} lines`);
    assert.equal(cut.data.stderr, 'warn\n'.repeat(300), 'the shorter field is kept whole');
    assert.match(cut.data.stdout, /\[output truncated: \d+ of 3000 lines[^\]]*2,000-line cap/);
    const exactly = { ok: true, data: { content: 'x\n'.repeat(2000) } };
    assert.equal(capToolResultJson(exactly), JSON.stringify(exactly), 'a tool that capped itself at 2,000 lines is untouched');
    const small = { ok: true, data: { x: 1 } };
    assert.equal(capToolResultJson(small), JSON.stringify(small));
  });

  it('context window: config, known model, the server list, then the default; context-length errors recognised', async () => {
    assert.equal(knownContextWindow('gpt-4o-mini'), 128_000);
    assert.equal(knownContextWindow('openai/gpt-4.1-mini'), 1_047_576);
    assert.equal(knownContextWindow('my-local-model'), undefined);
    assert.equal(listedContextWindow({ id: 'x', context_length: 8192 }), 8192);
    assert.equal(listedContextWindow({ id: 'x', max_model_len: 4096 }), 4096);
    const base = { baseURL: 'http://x', apiKey: '', model: 'local' };
    assert.deepEqual(await resolveContextWindow({ ...base, contextWindow: 1000 }), { tokens: 1000, source: 'config' });
    assert.deepEqual(await resolveContextWindow(base, async () => ({ data: [{ id: 'local', context_length: 16384 }] })), { tokens: 16384, source: 'server' });
    assert.deepEqual(await resolveContextWindow(base, async () => ({ data: [{ id: 'other', context_length: 1 }] })), { tokens: DEFAULT_CONTEXT_WINDOW, source: 'default' });
    assert.deepEqual(await resolveContextWindow(base, () => Promise.reject(new Error('down'))), { tokens: DEFAULT_CONTEXT_WINDOW, source: 'default' });
    assert.equal(isContextLengthMessage("This model's maximum context length is 8192 tokens"), true);
    assert.equal(isContextLengthMessage('the request exceeds the available context size, try increasing it'), false);
    assert.equal(isContextLengthMessage('prompt is too long: 210000 tokens > 200000 maximum'), true);
  });
});
