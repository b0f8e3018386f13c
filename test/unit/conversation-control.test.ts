import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/store';
import { SessionRecorder } from '../../src/host/session-recorder';
import { restoreConversation, transcriptItems } from '../../src/host/session-history';
import type { ChatMessage } from '../../src/agent/provider';
import type { AgentState } from '../../src/agent/loop';
import {
  checkpointsFrom,
  findUserTurn,
  forkAt,
  historyIndexOf,
  regenerate,
  type ConversationControlOptions,
} from '../../src/host/session-parts/conversation-control';
import type { CheckpointSummary } from '../../src/workspace/rewind';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const reply = (content: string): ChatMessage => ({ role: 'assistant', content });
const call = (id: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }],
});
const result = (id: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: JSON.stringify({ ok: true, data: { content: 'A' } }) });

/** A session of three turns (the last with a tool call), recorded as the runtime records it. */
function recorded() {
  const store = openStore(':memory:');
  const rec = new SessionRecorder(store.sessions, 's1', { cwd: '/w', model: 'm' });
  const history: ChatMessage[] = [];
  const add = (m: ChatMessage, display?: string, labels?: string[]) => {
    if (display !== undefined) rec.turnStart({ text: display, ...(labels ? { labels } : {}) });
    history.push(m);
    rec.messageAdded(m);
  };
  add(user('first question'), 'first question');
  add(reply('first answer'));
  rec.chatLine('notice', 'a notice of turn one');
  add(user('second question\n\n<file a.txt>'), 'second question', ['a.txt']);
  add(reply('second answer'));
  add(user('third question'), 'third question');
  add(call('c1'));
  add(result('c1'));
  add(reply('third answer, after reading'));
  rec.chatLine('notice', 'a notice of turn three');
  // Turns a model's reply apart (all rows here were written within a millisecond or two).
  store.db.prepare('UPDATE session_messages SET created_at = id * 1000').run();
  return { store, rec, history };
}

function fakeAgent(history: ChatMessage[]) {
  const sent: { text: string; meta: unknown; content?: unknown }[] = [];
  const agent = {
    state: 'idle' as AgentState,
    queued: [] as string[],
    get messages() {
      return history.slice();
    },
    loadMessages(ms: ChatMessage[]) {
      history.splice(0, history.length, ...ms);
    },
    send(text: string, meta?: unknown, content?: unknown) {
      sent.push({ text, meta, ...(content ? { content } : {}) });
      return { status: 'started' as const };
    },
  };
  return { agent, sent };
}

function options(over: Partial<ConversationControlOptions> & Pick<ConversationControlOptions, 'sessions' | 'agent' | 'recorder'>) {
  const notes: string[] = [];
  let shown = 0;
  let id = 10;
  const o: ConversationControlOptions = {
    sessionId: 's1',
    checkpoints: { list: () => [], rewind: async () => assert.fail('no rewind expected') },
    notes: { take: () => notes.splice(0).join('\n'), add: (t) => void notes.push(t) },
    ensureRestored: () => undefined,
    nextId: () => ++id,
    showTranscript: () => void shown++,
    ...over,
  };
  return { o, notes, shown: () => shown };
}

describe('regenerate: the host-side cut of the last turn', () => {
  it('drops the last user message and everything after it from the store and the agent, then sends the same message again', async () => {
    const { store, rec, history } = recorded();
    const { agent, sent } = fakeAgent(history);
    const { o, shown } = options({ sessions: store.sessions, agent, recorder: rec });
    const before = store.sessions.get('s1')!.messageCount;
    const r = await regenerate(o, { files: 'ask', model: 'other/model' });
    assert.equal(r.status, 'started');
    // The agent's history ends before the last user message; the resent text is that message as the model got it.
    assert.deepEqual(history.map((m) => m.content), ['first question', 'first answer', 'second question\n\n<file a.txt>', 'second answer']);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].text, 'third question');
    assert.deepEqual(sent[0].meta, { id: 11, display: 'third question', labels: [] });
    // The store: turn three's rows are gone, a notice says so (with the model), earlier rows stay.
    const items = transcriptItems(store.sessions.displayRows('s1'));
    const text = JSON.stringify(items);
    assert.doesNotMatch(text, /third question|third answer|turn three|read_file/);
    assert.match(text, /first answer/);
    assert.match(text, /a notice of turn one/);
    assert.deepEqual(items.at(-1), { t: 'notice', text: '↻ regenerating the last reply with other/model: the previous reply was removed' });
    assert.equal(store.sessions.get('s1')!.messageCount, before - 4);
    assert.equal(shown(), 1, 'the chat is sent the transcript as now stored');
    // What a reopened session would continue from: no trace of the dropped turn.
    assert.deepEqual(
      restoreConversation(store.sessions.contextRows('s1')).map((m) => m.message.content),
      ['first question', 'first answer', 'second question\n\n<file a.txt>', 'second answer'],
    );
  });

  it('a message with images is sent again with its images', async () => {
    const { store, rec, history } = recorded();
    const image = { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
    const m: ChatMessage = { role: 'user', content: [{ type: 'text', text: 'what is in it' }, image] };
    rec.turnStart({ text: 'what is in it', labels: ['image shot.png'] });
    history.push(m);
    rec.messageAdded(m);
    history.push(reply('a cat'));
    rec.messageAdded(history.at(-1)!);
    const { agent, sent } = fakeAgent(history);
    const { o, notes } = options({ sessions: store.sessions, agent, recorder: rec });
    notes.push('[Note: x]');
    await regenerate(o, { files: 'ask' });
    assert.equal(sent[0].text, '[Note: x]\n\nwhat is in it');
    assert.deepEqual(sent[0].content, [{ type: 'text', text: '[Note: x]\n\nwhat is in it' }, image]);
    assert.deepEqual(sent[0].meta, { id: 11, display: 'what is in it', labels: ['image shot.png'] });
    assert.equal(history.length, 8, 'the cut is before the image message');
  });

  it('refuses while a turn runs or a message waits, and with nothing sent yet', async () => {
    const { store, rec, history } = recorded();
    const { agent } = fakeAgent(history);
    const { o } = options({ sessions: store.sessions, agent, recorder: rec });
    agent.state = 'streaming';
    await assert.rejects(regenerate(o, { files: 'ask' }), /a turn is running: stop it first/);
    agent.state = 'idle';
    agent.queued = ['waiting'];
    await assert.rejects(regenerate(o, { files: 'ask' }), /a turn is running/);
    assert.equal(store.sessions.userTurns('s1').length, 3, 'nothing was dropped');
    const empty = openStore(':memory:');
    const { agent: a2 } = fakeAgent([]);
    const { o: o2 } = options({ sessions: empty.sessions, agent: a2, recorder: new SessionRecorder(empty.sessions, 's1', { cwd: '/w', model: 'm' }) });
    await assert.rejects(regenerate(o2, { files: 'ask' }), /nothing to regenerate/);
  });

  it('asks first when the turn changed files; rewinds (dropping the rewind note, keeping older notes) or keeps (telling the model)', async () => {
    const { store, rec, history } = recorded();
    const turns = store.sessions.userTurns('s1');
    const after = new Date(turns[1].createdAt + 1).toISOString();
    const old: CheckpointSummary = { id: 1, message: 'second question', messageId: '2', time: new Date(turns[1].createdAt - 1).toISOString(), rewound: false, rewoundAt: null, files: [{ path: 'old.txt', change: 'modified' }] };
    const last: CheckpointSummary = { id: 2, message: 'third question', messageId: '3', time: after, rewound: false, rewoundAt: null, files: [{ path: 'a.txt', change: 'modified' }, { path: 'b.txt', change: 'created' }] };
    const rewinds: unknown[] = [];
    const { agent, sent } = fakeAgent(history);
    const { o, notes } = options({
      sessions: store.sessions,
      agent,
      recorder: rec,
      checkpoints: {
        list: () => [last, old],
        rewind: async (opts) => {
          rewinds.push(opts);
          o.notes.add('[Note: the user rewound …]');
          return { status: 'rewound', id: 2, checkpoints: [], files: [], summary: 'rewound' };
        },
      },
    });
    notes.push('[Note: an older rewind]');
    const ask = await regenerate(o, { files: 'ask' });
    assert.deepEqual(ask, { status: 'ask', files: ['a.txt', 'b.txt'], message: 'third question' });
    assert.equal(store.sessions.userTurns('s1').length, 3, 'asking drops nothing');
    const r = await regenerate(o, { files: 'rewind' });
    assert.equal(r.status, 'started');
    assert.deepEqual(rewinds, [{ id: 2, force: false }], 'only the last turn\'s checkpoint is rewound');
    assert.equal(sent[0].text, '[Note: an older rewind]\n\nthird question');
    assert.match(JSON.stringify(transcriptItems(store.sessions.displayRows('s1'))), /its file changes rewound \(a\.txt, b\.txt\)/);

    // Keep: no rewind, the model learns the files stay changed.
    const k = recorded();
    const { agent: a2, sent: sent2 } = fakeAgent(k.history);
    const t2 = k.store.sessions.userTurns('s1');
    const cp = { ...last, time: new Date(t2[1].createdAt + 1).toISOString() };
    const { o: o2 } = options({ sessions: k.store.sessions, agent: a2, recorder: k.rec, checkpoints: { list: () => [cp], rewind: async () => assert.fail('kept') } });
    await regenerate(o2, { files: 'keep' });
    assert.match(sent2[0].text, /^\[Note: an earlier answer to the next message.*changed a\.txt, b\.txt; the user kept those changes/);
    assert.match(sent2[0].text, /\n\nthird question$/);
  });

  it('keeps a compaction that happened in the dropped turn: the stored conversation is the agent\'s', () => {
    const { store, rec, history } = recorded();
    const turns = store.sessions.userTurns('s1');
    const early = store.sessions.rows('s1').filter((r) => r.kind === 'message' && r.id < turns[2].id).map((r) => r.id);
    // Compacted during turn three (after its user message was recorded).
    const archivedAs = rec.archive(history.slice(0, 4), 'summary of turns one and two')!;
    store.sessions.archive(early, archivedAs);
    assert.equal(restoreConversation(store.sessions.contextRows('s1'))[0].rowId, archivedAs);
    store.sessions.truncateFrom('s1', turns[2].id);
    const restored = restoreConversation(store.sessions.contextRows('s1'));
    assert.equal(restored[0].rowId, archivedAs, 'the summary stands for the turns before the cut');
    assert.match(String(restored[0].message.content), /summary of turns one and two/);
    assert.ok(!JSON.stringify(restored).includes('third'), 'nothing of the dropped turn');
    assert.deepEqual(transcriptItems(store.sessions.displayRows('s1')).filter((i) => i.t === 'user').map((i) => (i as { text: string }).text), ['first question', 'second question']);
  });

  it('finds the message in the agent\'s history by its row, else by its content', () => {
    const { store, rec, history } = recorded();
    const turns = store.sessions.userTurns('s1');
    assert.equal(historyIndexOf(history, turns[2], rec.storedId), 4);
    assert.equal(historyIndexOf(history, turns[1], () => undefined), 2);
    assert.equal(historyIndexOf([], turns[1], rec.storedId), -1);
  });
});

describe('edit-and-resend: the fork in the store', () => {
  it('copies the rows before the edited message into a new session; the source is unchanged', async () => {
    const { store, rec, history } = recorded();
    store.sessions.rename('s1', 'the original', 'user');
    const rowsBefore = JSON.stringify(store.sessions.rows('s1'));
    const { agent } = fakeAgent(history);
    const { o } = options({ sessions: store.sessions, agent, recorder: rec });
    const r = await forkAt({ ...o, sessions: store.sessions }, { index: 2, text: 'second question', files: 'ask', newId: 's2' });
    assert.deepEqual(r, { status: 'forked', session: 's2', from: 's1', message: 'second question', rewound: [] });
    assert.equal(JSON.stringify(store.sessions.rows('s1')), rowsBefore, 'the earlier branch is not changed');
    const fork = store.sessions.get('s2')!;
    assert.equal(fork.forkedFrom, 's1');
    assert.equal(fork.title, 'the original');
    assert.equal(fork.messageCount, 2);
    assert.deepEqual(
      restoreConversation(store.sessions.contextRows('s2')).map((m) => m.message.content),
      ['first question', 'first answer'],
    );
    assert.deepEqual(transcriptItems(store.sessions.displayRows('s2')).map((i) => i.t), ['user', 'text', 'notice']);
    // Both are listed.
    assert.deepEqual(store.sessions.list().map((s) => s.id).sort(), ['s1', 's2']);
  });

  it('a fork before a compacted stretch brings its rows back into the context; a summary before the cut keeps its rows archived', () => {
    const { store, rec, history } = recorded();
    const turns = store.sessions.userTurns('s1');
    const firstTwo = store.sessions.rows('s1').filter((r) => r.kind === 'message' && r.id < turns[1].id).map((r) => r.id);
    // A summary written after turn three started, standing for turn one.
    const sid = rec.archive(history.slice(0, 2), 'summary of turn one')!;
    store.sessions.archive(firstTwo, sid);
    store.sessions.fork('s1', turns[2].id, 'early');
    assert.deepEqual(
      restoreConversation(store.sessions.contextRows('early')).map((m) => m.message.content),
      ['first question', 'first answer', 'second question\n\n<file a.txt>', 'second answer'],
      'the summary is after the cut: the archived rows are in context again',
    );
    store.sessions.fork('s1', Number.MAX_SAFE_INTEGER, 'late');
    const late = restoreConversation(store.sessions.contextRows('late'));
    assert.match(String(late[0].message.content), /summary of turn one/);
    assert.deepEqual(late.slice(-4).map((m) => m.message.role), ['user', 'assistant', 'tool', 'assistant']);
    const lateRows = store.sessions.rows('late');
    const summaryRow = lateRows.find((r) => r.kind === 'summary')!;
    assert.equal(lateRows.filter((r) => r.archivedBy === summaryRow.id).length, 2, 'archived_by points at the copied summary');
  });

  it('finds the message by its place and text; refuses a message not recorded and while busy', async () => {
    const { store, rec, history } = recorded();
    const turns = store.sessions.userTurns('s1');
    assert.equal(findUserTurn(turns, 2, 'second question'), 1);
    assert.equal(findUserTurn(turns, 7, 'second  question\n'), 1, 'by text when the place does not match');
    assert.equal(findUserTurn(turns, 1, 'never sent'), -1);
    const { agent } = fakeAgent(history);
    const { o } = options({ sessions: store.sessions, agent, recorder: rec });
    await assert.rejects(forkAt({ ...o, sessions: store.sessions }, { index: 1, text: 'never sent', files: 'ask', newId: 'x' }), /not in this session/);
    agent.state = 'executing_tools';
    await assert.rejects(forkAt({ ...o, sessions: store.sessions }, { index: 1, text: 'first question', files: 'ask', newId: 'x' }), /a turn is running/);
    assert.equal(store.sessions.get('x'), null);
  });

  it('offers the rewind of the files changed from the edited message on; kept files are a note for the new branch', async () => {
    const { store, rec, history } = recorded();
    const turns = store.sessions.userTurns('s1');
    const cp = (id: number, at: number, p: string): CheckpointSummary => ({ id, message: '', messageId: null, time: new Date(at).toISOString(), rewound: false, rewoundAt: null, files: [{ path: p, change: 'modified' }] });
    // A turn starts (and its checkpoint with it) just before its user message is recorded.
    const all = [cp(1, turns[0].createdAt - 1, 'one.txt'), cp(2, turns[1].createdAt - 1, 'two.txt'), cp(3, turns[2].createdAt - 1, 'three.txt')];
    // The checkpoints of turn two and later (turn two's started after turn one's message was recorded).
    assert.deepEqual(checkpointsFrom(all, turns, 1).map((c) => c.id), [2, 3]);
    assert.deepEqual(checkpointsFrom(all, turns, 0).map((c) => c.id), [1, 2, 3]);
    const rewinds: unknown[] = [];
    const { agent } = fakeAgent(history);
    const { o } = options({
      sessions: store.sessions,
      agent,
      recorder: rec,
      checkpoints: { list: () => all, rewind: async (x) => (rewinds.push(x), { status: 'rewound', id: 2, checkpoints: [], files: [], summary: '' }) },
    });
    const ask = await forkAt({ ...o, sessions: store.sessions }, { index: 2, text: 'second question', files: 'ask', newId: 'f1' });
    assert.deepEqual(ask, { status: 'ask', files: ['three.txt', 'two.txt'], message: 'second question' });
    assert.equal(store.sessions.get('f1'), null, 'asking forks nothing');
    const kept = await forkAt({ ...o, sessions: store.sessions }, { index: 2, text: 'second question', files: 'keep', newId: 'f2' });
    assert.equal(kept.status, 'forked');
    assert.deepEqual(rewinds, []);
    assert.match(store.sessions.takeNotes('f2')[0], /changed three\.txt, two\.txt; the user kept those changes/);
    const rewound = await forkAt({ ...o, sessions: store.sessions }, { index: 2, text: 'second question', files: 'rewind', newId: 'f3' });
    assert.deepEqual(rewound, { status: 'forked', session: 'f3', from: 's1', message: 'second question', rewound: ['three.txt', 'two.txt'] });
    assert.deepEqual(rewinds, [{ id: 2, force: false }]);
  });
});
