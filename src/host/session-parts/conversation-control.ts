/**
 * Conversation control (issue 22): regenerate the last reply, and the store side of edit-and-resend.
 *
 * Regenerate drops the last user message's turn — the assistant's replies, their tool calls and results,
 * the chat lines between them — from the agent's history and from the recorded session, then sends the
 * same user message again (as the model got it: attached context included). When that turn changed
 * files, the caller first learns which (`status: 'ask'`) and says whether to rewind them or keep them.
 *
 * Edit-and-resend forks: a new session holds the rows before the edited message (src/store/sessions.ts
 * `fork`); the earlier branch is not changed. Files changed by the edited message's turn and the later
 * ones can be rewound first, the same way.
 */
import type { Agent } from '../../agent/loop';
import type { ChatMessage } from '../../agent/provider';
import type { QueuedMessage } from '../../agent/loop';

type ContentPart = NonNullable<QueuedMessage['content']>[number];
import type { SessionRepository, UserTurnRow } from '../../store/sessions';
import type { CheckpointSummary } from '../../workspace/rewind';
import type { CheckpointApi, RewindReply } from '../checkpoints';
import type { SessionRecorder } from '../session-recorder';
import type { MessageMeta } from './message-queue';

/** A refusal meant for the user (busy, nothing to regenerate, a message no longer there). */
export class ConversationError extends Error {
  override name = 'ConversationError';
}

/** What to do with the files a dropped turn changed: ask first (the default), rewind them, keep them. */
export type FilesChoice = 'ask' | 'rewind' | 'keep';

export type TurnFilesReply =
  /** The turn(s) changed these files: call again with 'rewind' or 'keep'. */
  | { status: 'ask'; files: string[]; message: string }
  /** The rewind stopped: these files changed since the agent wrote them (call again with force). */
  | { status: 'conflict'; conflicts: Extract<RewindReply, { status: 'conflict' }>['conflicts']; files: string[] };

export type RetryReply = TurnFilesReply | { status: 'started' | 'queued'; message: string; rewound: string[] };

export const busyRefusal = () =>
  new ConversationError('a turn is running: stop it first (<C-c> or :CabooseStop), then regenerate or edit the message');

export interface ConversationControlOptions {
  sessionId: string;
  sessions: Pick<SessionRepository, 'userTurns' | 'truncateFrom'>;
  agent: Pick<Agent, 'state' | 'queued' | 'messages' | 'loadMessages' | 'send'>;
  recorder: Pick<SessionRecorder, 'storedId' | 'chatLine' | 'flush'>;
  checkpoints: Pick<CheckpointApi, 'list' | 'rewind'>;
  notes: { take(): string; add(text: string): void };
  ensureRestored(): void;
  /** The next message number (the chat's and the checkpoint's id of a message). */
  nextId(): number;
  /** Sends the session's transcript as it is now stored (the chat replaces what it shows). */
  showTranscript(): void;
}

/**
 * The checkpoints of the turn of `turns[index]` and of every later turn (not rewound yet): those whose
 * turn started after the previous user message was recorded. Changes an earlier regenerated answer to
 * the same message made and the user kept count too (they were made since that message was sent): a
 * rewind brings the files back to before the message was first answered.
 */
export function checkpointsFrom(all: readonly CheckpointSummary[], turns: readonly UserTurnRow[], index: number): CheckpointSummary[] {
  const prev = index > 0 ? turns[index - 1].createdAt : -Infinity;
  return all.filter((c) => !c.rewound && Date.parse(c.time) > prev).sort((a, b) => a.id - b.id);
}

function filesOf(cps: readonly CheckpointSummary[]): string[] {
  return [...new Set(cps.flatMap((c) => c.files.map((f) => f.path)))].sort();
}

/** What the model is told when the files an earlier answer changed were kept. */
export function keptNote(files: readonly string[]): string {
  return `[Note: an earlier answer to the next message, which the user discarded, changed ${files.join(', ')}; the user kept those changes. Read the files again before editing them.]`;
}

/**
 * The index in the agent's history of the user message stored as `row` (by its row id; else the last
 * user message with the same content). -1 when it is not there.
 */
export function historyIndexOf(history: readonly ChatMessage[], row: UserTurnRow, storedId: (m: ChatMessage) => number | undefined): number {
  for (let i = history.length - 1; i >= 0; i--) if (history[i].role === 'user' && storedId(history[i]) === row.id) return i;
  const content = JSON.stringify((row.message as { content?: unknown } | null)?.content ?? null);
  for (let i = history.length - 1; i >= 0; i--) if (history[i].role === 'user' && JSON.stringify(history[i].content) === content) return i;
  return -1;
}

/**
 * Applies the user's choice about the files the turns from `index` on changed. Returns a reply when the
 * caller must ask (or a rewind stopped), else the files rewound or kept.
 */
export async function settleFiles(
  o: Pick<ConversationControlOptions, 'checkpoints' | 'notes'>,
  turns: readonly UserTurnRow[],
  index: number,
  choice: FilesChoice,
  force: boolean,
  /** Keep the rewind's note for the model (edit-and-resend: the earlier branch learns it when reopened). */
  keepRewindNote: boolean,
): Promise<TurnFilesReply | { rewound: string[]; kept: string[] }> {
  const cps = checkpointsFrom(o.checkpoints.list(), turns, index);
  const files = filesOf(cps);
  if (files.length === 0) return { rewound: [], kept: [] };
  if (choice === 'ask') return { status: 'ask', files, message: turns[index].text };
  if (choice === 'keep') return { rewound: [], kept: files };
  // Notes waiting from before stay; the rewind's own note is about a turn the model no longer has.
  const waiting = keepRewindNote ? '' : o.notes.take();
  let res: RewindReply;
  try {
    res = await o.checkpoints.rewind({ id: cps[0].id, force });
  } catch (e) {
    if (waiting) o.notes.add(waiting);
    throw e;
  }
  if (!keepRewindNote) {
    o.notes.take();
    if (waiting) o.notes.add(waiting);
  }
  if (res.status === 'conflict') return { status: 'conflict', conflicts: res.conflicts, files };
  return { rewound: files, kept: [] };
}

/** Regenerate (`:CabooseRetry`, the chat's key): see the file's comment. `model`: the label said in the chat. */
export async function regenerate(o: ConversationControlOptions, opts: { files: FilesChoice; force?: boolean; model?: string; beforeCut?: () => void }): Promise<RetryReply> {
  if (o.agent.state !== 'idle' || o.agent.queued.length > 0) throw busyRefusal();
  o.ensureRestored();
  const turns = o.sessions.userTurns(o.sessionId);
  const index = turns.length - 1;
  const last = turns[index];
  if (!last) throw new ConversationError('nothing to regenerate: no message was sent in this chat yet');
  const content = (last.message as { content?: unknown } | null)?.content;
  // A message with images: its text part, and the images sent again beside it.
  const textPart = Array.isArray(content) ? (content as ContentPart[]).find((p) => p.type === 'text') : undefined;
  const text = typeof content === 'string' ? content : textPart && 'text' in textPart ? textPart.text : null;
  if (text === null) throw new ConversationError('the last message cannot be sent again as it was (it holds no text)');
  const parts = Array.isArray(content) ? (content as ContentPart[]).filter((p) => p !== textPart) : [];
  const history = o.agent.messages;
  const at = historyIndexOf(history, last, o.recorder.storedId);
  if (at < 0) throw new ConversationError('the last message is no longer in the conversation (it was compacted); send it again instead');
  const files = await settleFiles(o, turns, index, opts.files, opts.force ?? false, false);
  if ('status' in files) return files;
  // The agent may have started meanwhile (the rewind awaited): check again before cutting.
  if (o.agent.state !== 'idle' || o.agent.queued.length > 0) throw busyRefusal();
  opts.beforeCut?.();
  o.recorder.flush();
  o.agent.loadMessages(history.slice(0, at));
  o.sessions.truncateFrom(o.sessionId, last.id);
  const what = [
    opts.model ? `with ${opts.model}` : '',
    files.rewound.length > 0 ? `its file changes rewound (${files.rewound.join(', ')})` : '',
    files.kept.length > 0 ? `its file changes kept (${files.kept.join(', ')})` : '',
  ].filter(Boolean);
  o.recorder.chatLine('notice', `↻ regenerating the last reply${what.length > 0 ? ` ${what.join('; ')}` : ''}: the previous reply was removed`);
  o.showTranscript();
  const notes = [o.notes.take(), files.kept.length > 0 ? keptNote(files.kept) : ''].filter(Boolean).join('\n');
  const meta: MessageMeta = { id: o.nextId(), display: last.text, labels: last.labels };
  const full = notes ? `${notes}\n\n${text}` : text;
  const r = parts.length > 0 ? o.agent.send(full, meta, [{ type: 'text', text: full }, ...parts]) : o.agent.send(full, meta);
  if (r.status === 'rejected') throw new ConversationError(r.reason);
  return { status: r.status, message: last.text, rewound: files.rewound };
}

/** The user message the chat shows as its `index`-th (1-based) entry, checked against the text the chat has. */
export function findUserTurn(turns: readonly UserTurnRow[], index: number, text: string): number {
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  if (turns[index - 1] && norm(turns[index - 1].text) === norm(text)) return index - 1;
  for (let i = turns.length - 1; i >= 0; i--) if (norm(turns[i].text) === norm(text)) return i;
  // The chat's copy of a message can be shorter (a line it could not tell from the next entry).
  const at = turns[index - 1];
  return at && norm(text) !== '' && norm(at.text).startsWith(norm(text)) ? index - 1 : -1;
}

export type ForkReply = TurnFilesReply | { status: 'forked'; session: string; from: string; message: string; rewound: string[] };

/**
 * Edit-and-resend, store side: a new session `newId` with the rows before the `index`-th user message
 * (checked against `text`, what the chat shows there). The files changed from that message's turn on are
 * rewound or kept first, as the user chose (a rewind's note stays with the earlier branch: it learns of it
 * when reopened). The new branch's model is told of kept files with its first message.
 */
export async function forkAt(
  o: Pick<ConversationControlOptions, 'sessionId' | 'agent' | 'checkpoints' | 'notes' | 'recorder'> & {
    sessions: Pick<SessionRepository, 'userTurns' | 'fork' | 'append'>;
  },
  p: { index: number; text: string; files: FilesChoice; force?: boolean; newId: string },
): Promise<ForkReply> {
  if (o.agent.state !== 'idle' || o.agent.queued.length > 0) throw busyRefusal();
  const turns = o.sessions.userTurns(o.sessionId);
  const index = findUserTurn(turns, p.index, p.text);
  if (index < 0) throw new ConversationError('that message is not in this session’s record (was it sent?)');
  const files = await settleFiles(o, turns, index, p.files, p.force ?? false, true);
  if ('status' in files) return files;
  if (o.agent.state !== 'idle' || o.agent.queued.length > 0) throw busyRefusal();
  o.recorder.flush();
  o.sessions.fork(o.sessionId, turns[index].id, p.newId);
  if (files.kept.length > 0) o.sessions.append(p.newId, { kind: 'note', display: { text: keptNote(files.kept) }, text: '', inContext: false });
  return { status: 'forked', session: p.newId, from: o.sessionId, message: turns[index].text, rewound: files.rewound };
}
