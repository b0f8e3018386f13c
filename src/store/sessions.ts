import type Database from 'better-sqlite3';
import { redact } from './redact';

/**
 * Conversations as they happen: one row per session, one row per message (what the model is sent, and
 * what the chat showed), searchable through FTS5. Rows are written the moment they exist, so a killed
 * host loses at most the last unflushed part of a streaming reply.
 */

/** `message`: part of the model's conversation; `summary`: a compaction summary standing in for older
 * messages; `notice` / `error`: chat lines only; `subagent`: a subagent's transcript (chat only); `rules`:
 * the project rules the conversation follows (their texts; the chat's lines naming them). */
/** `note`: a note for the model waiting for the next user message (a rewind it must learn about). */
export type SessionRowKind = 'message' | 'summary' | 'notice' | 'error' | 'subagent' | 'rules' | 'note';

export interface SessionInfo {
  id: string;
  cwd: string;
  title: string | null;
  titleSource: 'fallback' | 'model' | 'user' | null;
  model: string | null;
  createdAt: number;
  updatedAt: number;
  messageCount: number;
  /** Tokens the session's requests used so far (subagents included). */
  usage: { prompt: number; completion: number };
  /** Edit-and-resend: the session this one was forked from (null: not a fork). */
  forkedFrom: string | null;
}

/** A message the user typed, as the chat showed it (for regenerate and edit-and-resend). */
export interface UserTurnRow {
  id: number;
  /** The words the chat showed (without attached context). */
  text: string;
  /** The message as the model got it (attached context included). */
  message: unknown;
  labels: string[];
  createdAt: number;
}

export interface SessionRow {
  id: number;
  kind: SessionRowKind;
  role: string | null;
  message: unknown;
  display: unknown;
  text: string;
  inContext: boolean;
  partial: boolean;
  archivedBy: number | null;
  createdAt: number;
}

export interface SessionSearchHit extends SessionInfo {
  /** The best matching passage, with the match wrapped in « ». */
  snippet: string;
  matches: number;
}

export interface NewRow {
  kind: SessionRowKind;
  role?: string | null;
  message?: unknown;
  display?: unknown;
  text?: string;
  inContext?: boolean;
  partial?: boolean;
}

interface RawSession {
  id: string;
  cwd: string;
  title: string | null;
  title_source: string | null;
  model: string | null;
  created_at: number;
  updated_at: number;
  message_count: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  forked_from?: string | null;
}

interface RawRow {
  id: number;
  kind: string;
  role: string | null;
  message_json: string | null;
  display_json: string | null;
  text: string;
  in_context: number;
  partial: number;
  archived_by: number | null;
  created_at: number;
}

/** Longest text indexed per row: enough to find a session by what was said in it. */
const MAX_INDEXED_CHARS = 64 * 1024;

function toInfo(r: RawSession): SessionInfo {
  return {
    id: r.id,
    cwd: r.cwd,
    title: r.title,
    titleSource: (r.title_source as SessionInfo['titleSource']) ?? null,
    model: r.model,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    messageCount: r.message_count,
    usage: { prompt: r.prompt_tokens ?? 0, completion: r.completion_tokens ?? 0 },
    forkedFrom: r.forked_from ?? null,
  };
}

function toRow(r: RawRow): SessionRow {
  return {
    id: r.id,
    kind: r.kind as SessionRowKind,
    role: r.role,
    message: fromJson(r.message_json),
    display: fromJson(r.display_json),
    text: r.text,
    inContext: r.in_context === 1,
    partial: r.partial === 1,
    archivedBy: r.archived_by,
    createdAt: r.created_at,
  };
}

function fromJson(text: string | null): unknown {
  return text === null ? null : (JSON.parse(text) as unknown);
}

/** Stored JSON; credentials (the API key, a base_url's userinfo) never reach the database (redact.ts). */
function json(v: unknown): string | null {
  return v === undefined || v === null ? null : redact(JSON.stringify(v));
}

/** FTS5 query from what the user typed: every word must appear (as a prefix), punctuation ignored. */
export function ftsQuery(input: string): string | null {
  const words = input.match(/[\p{L}\p{N}_]+/gu) ?? [];
  if (words.length === 0) return null;
  return words.map((w) => `"${w}"*`).join(' ');
}

export class SessionRepository {
  private readonly st: {
    insertSession: Database.Statement;
    touch: Database.Statement;
    insertRow: Database.Statement;
    updatePartial: Database.Statement;
    finishRow: Database.Statement;
    indexPending: Database.Statement;
  };

  constructor(private readonly db: Database.Database) {
    this.st = {
      insertSession: db.prepare(
        'INSERT OR IGNORE INTO sessions (id, cwd, title, title_source, model, created_at, updated_at, message_count) VALUES (?, ?, ?, ?, ?, ?, ?, 0)',
      ),
      touch: db.prepare('UPDATE sessions SET updated_at = ?, message_count = message_count + ? WHERE id = ?'),
      insertRow: db.prepare(
        'INSERT INTO session_messages (session_id, kind, role, message_json, display_json, text, in_context, partial, indexed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      // A streaming reply's text is not indexed while it grows (see migration 10): a write leaves the
      // search index alone; if a search indexed the text so far meanwhile, this write takes it out once.
      updatePartial: db.prepare('UPDATE session_messages SET message_json = ?, text = ?, indexed = 0 WHERE id = ? AND partial = 1'),
      finishRow: db.prepare('UPDATE session_messages SET message_json = ?, display_json = ?, text = ?, partial = 0, indexed = 1 WHERE id = ?'),
      indexPending: db.prepare('UPDATE session_messages SET indexed = 1 WHERE indexed = 0'),
    };
  }

  /** Creates the session row unless it exists. */
  ensure(s: { id: string; cwd: string; model?: string | null; title?: string | null }): void {
    const now = Date.now();
    this.st.insertSession.run(s.id, s.cwd, s.title ?? null, s.title ? 'fallback' : null, s.model ?? null, now, now);
  }

  /** Adds one request's tokens to the session's usage (a session not stored yet has none to keep). */
  addUsage(id: string, prompt: number, completion: number): void {
    this.db.prepare('UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ? WHERE id = ?').run(prompt, completion, id);
  }

  /** Which model (or external agent: `acp:<name> <its session id>`) the session talks to. */
  setModel(id: string, model: string): void {
    this.db.prepare('UPDATE sessions SET model = ? WHERE id = ?').run(model, id);
  }

  get(id: string): SessionInfo | null {
    const r = this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as RawSession | undefined;
    return r ? toInfo(r) : null;
  }

  /** Sessions with at least one message: those of `cwd` first, then the rest, newest activity first. */
  list(opts: { cwd?: string; limit?: number } = {}): SessionInfo[] {
    const rows = this.db
      .prepare(
        `SELECT * FROM sessions WHERE message_count > 0
         ORDER BY (cwd = @cwd) DESC, updated_at DESC LIMIT @limit`,
      )
      .all({ cwd: opts.cwd ?? '', limit: opts.limit ?? 500 }) as RawSession[];
    return rows.map(toInfo);
  }

  /**
   * Full-text search over every session's messages; `cwd` sessions rank first, then by relevance. A reply
   * still streaming (its text as last flushed) and one a crash cut are found too: what is not indexed yet
   * is indexed first.
   */
  search(query: string, opts: { cwd?: string; limit?: number } = {}): SessionSearchHit[] {
    const q = ftsQuery(query);
    if (!q) return [];
    try {
      this.indexPending();
    } catch {
      // A database this connection cannot write (read-only, full disk): the search answers from what is indexed.
    }
    const rows = this.db
      .prepare(
        `WITH hits AS (
           SELECT m.session_id AS sid, f.rank AS rank,
                  snippet(session_messages_fts, 0, '«', '»', '…', 12) AS snip
           FROM session_messages_fts f JOIN session_messages m ON m.id = f.rowid
           WHERE session_messages_fts MATCH @q
         ), best AS (
           SELECT sid, MIN(rank) AS rank, COUNT(*) AS matches FROM hits GROUP BY sid
         )
         SELECT s.*, b.matches AS matches,
                (SELECT snip FROM hits h WHERE h.sid = s.id ORDER BY h.rank LIMIT 1) AS snippet
         FROM best b JOIN sessions s ON s.id = b.sid
         ORDER BY (s.cwd = @cwd) DESC, b.rank, s.updated_at DESC LIMIT @limit`,
      )
      .all({ q, cwd: opts.cwd ?? '', limit: opts.limit ?? 100 }) as (RawSession & { snippet: string; matches: number })[];
    return rows.map((r) => ({ ...toInfo(r), snippet: r.snippet.replace(/\s+/g, ' '), matches: r.matches }));
  }

  rename(id: string, title: string, source: 'fallback' | 'model' | 'user'): boolean {
    return this.db.prepare('UPDATE sessions SET title = ?, title_source = ? WHERE id = ?').run(title, source, id).changes > 0;
  }

  /** A session goes with its rows and its checkpoints (their pre-images go at the next purge). */
  delete(id: string): boolean {
    return this.db.transaction(() => {
      this.db.prepare('DELETE FROM session_messages WHERE session_id = ?').run(id);
      this.db.prepare('DELETE FROM checkpoint_files WHERE checkpoint_id IN (SELECT id FROM checkpoints WHERE session_id = ?)').run(id);
      this.db.prepare('DELETE FROM checkpoints WHERE session_id = ?').run(id);
      return this.db.prepare('DELETE FROM sessions WHERE id = ?').run(id).changes > 0;
    })();
  }

  /**
   * Indexes for search the rows whose text is not indexed yet: partial replies, streaming now (here or in
   * another Neovim's host) or cut by a crash. Returns how many rows it indexed.
   */
  indexPending(): number {
    return this.st.indexPending.run().changes;
  }

  /**
   * Appends a row; chat-visible rows (everything but partial streaming rows) count as messages. A partial
   * row's text is indexed when it is finished (or by the next search).
   */
  append(sessionId: string, row: NewRow): number {
    const now = Date.now();
    const text = redact((row.text ?? '').slice(0, MAX_INDEXED_CHARS));
    const display = row.display ?? (row.kind === 'notice' || row.kind === 'error' ? { text: row.text ?? '' } : undefined);
    const info = this.st.insertRow.run(
      sessionId,
      row.kind,
      row.role ?? null,
      json(row.message),
      json(display),
      text,
      row.inContext === false ? 0 : 1,
      row.partial ? 1 : 0,
      row.partial ? 0 : 1,
      now,
    );
    this.st.touch.run(now, row.kind === 'message' || row.kind === 'summary' ? 1 : 0, sessionId);
    return Number(info.lastInsertRowid);
  }

  /** Streaming text so far of a partial assistant row. */
  updatePartial(rowId: number, message: unknown, text: string): void {
    this.st.updatePartial.run(json(message), redact(text.slice(0, MAX_INDEXED_CHARS)), rowId);
  }

  /** A row's message as it now stands: a partial row becomes the finished message; a running subagent's transcript grows. */
  finish(rowId: number, row: { message: unknown; display?: unknown; text: string }): void {
    this.st.finishRow.run(json(row.message), json(row.display), redact(row.text.slice(0, MAX_INDEXED_CHARS)), rowId);
  }

  /** Compaction: `rowIds` leave the model's context; `summaryRowId` now stands for them. */
  archive(rowIds: number[], summaryRowId: number): void {
    const stmt = this.db.prepare('UPDATE session_messages SET in_context = 0, archived_by = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const id of rowIds) stmt.run(summaryRowId, id);
    })();
  }

  /**
   * Every row as the chat transcript needs it: the stored display, the message only for rows that have
   * none (a partial reply, a row written without one). Reopening a long session parses no tool output.
   */
  displayRows(sessionId: string): { kind: SessionRowKind; role: string | null; display: unknown; message: unknown; text: string; partial: boolean }[] {
    // Read from the covering index only; the few rows without a display (a reply cut mid-stream) are
    // completed one by one.
    const raw = this.db
      .prepare('SELECT id, kind, role, partial, display_json FROM session_messages INDEXED BY session_messages_display WHERE session_id = ? ORDER BY id')
      .all(sessionId) as { id: number; kind: string; role: string | null; partial: number; display_json: string | null }[];
    const full = this.db.prepare('SELECT message_json, text FROM session_messages WHERE id = ?');
    // One parse of all displays is much cheaper than one per row.
    const displays = JSON.parse(`[${raw.map((r) => r.display_json ?? 'null').join(',')}]`) as ({ text?: unknown } | null)[];
    return raw.map((r, i) => {
      const display = displays[i];
      const chatLine = r.kind === 'notice' || r.kind === 'error';
      const missing = display === null || r.partial === 1 ? (full.get(r.id) as { message_json: string | null; text: string }) : null;
      return {
        kind: r.kind as SessionRowKind,
        role: r.role,
        display,
        message: missing ? fromJson(missing.message_json) : null,
        text: chatLine ? (typeof display?.text === 'string' ? display.text : (missing?.text ?? '')) : '',
        partial: r.partial === 1,
      };
    });
  }

  /** The rows of the model's conversation (in context), fully parsed. */
  contextRows(sessionId: string): SessionRow[] {
    return (
      this.db
        .prepare("SELECT * FROM session_messages WHERE session_id = ? AND in_context = 1 AND kind IN ('message', 'summary') ORDER BY id")
        .all(sessionId) as RawRow[]
    ).map(toRow);
  }

  /** The newest row of one kind (e.g. the conversation's `rules`). */
  latest(sessionId: string, kind: SessionRowKind): SessionRow | null {
    const r = this.db.prepare('SELECT * FROM session_messages WHERE session_id = ? AND kind = ? ORDER BY id DESC LIMIT 1').get(sessionId, kind) as RawRow | undefined;
    return r ? toRow(r) : null;
  }

  /** The session's waiting notes for the model, oldest first; they are removed (each is sent once). */
  takeNotes(sessionId: string): string[] {
    return this.db.transaction(() => {
      const rows = this.db.prepare("SELECT id, display_json FROM session_messages WHERE session_id = ? AND kind = 'note' ORDER BY id").all(sessionId) as { id: number; display_json: string | null }[];
      this.db.prepare("DELETE FROM session_messages WHERE session_id = ? AND kind = 'note'").run(sessionId);
      return rows.map((r) => (fromJson(r.display_json) as { text?: unknown } | null)?.text).filter((t): t is string => typeof t === 'string' && t !== '');
    })();
  }

  rows(sessionId: string): SessionRow[] {
    return (this.db.prepare('SELECT * FROM session_messages WHERE session_id = ? ORDER BY id').all(sessionId) as RawRow[]).map(toRow);
  }

  row(sessionId: string, rowId: number): SessionRow | null {
    const r = this.db.prepare('SELECT * FROM session_messages WHERE session_id = ? AND id = ?').get(sessionId, rowId) as RawRow | undefined;
    return r ? toRow(r) : null;
  }

  /**
   * The messages the user typed, oldest first (a tool's images passed to the model are not among them):
   * the chat's "## You" entries, in the order the transcript shows them.
   */
  userTurns(sessionId: string): UserTurnRow[] {
    const rows = this.db
      .prepare("SELECT * FROM session_messages WHERE session_id = ? AND kind = 'message' AND role = 'user' ORDER BY id")
      .all(sessionId) as RawRow[];
    const out: UserTurnRow[] = [];
    for (const r of rows.map(toRow)) {
      const d = (r.display ?? null) as { text?: unknown; labels?: unknown; media?: unknown } | null;
      if (d?.media) continue;
      const content = (r.message as { content?: unknown } | null)?.content;
      const text = typeof d?.text === 'string' ? d.text : typeof content === 'string' ? content : '';
      const labels = Array.isArray(d?.labels) ? d.labels.map(String) : [];
      out.push({ id: r.id, text, message: r.message, labels, createdAt: r.createdAt });
    }
    return out;
  }

  /**
   * Regenerate: the rows from `rowId` on leave the session (the user message there, the replies and tool
   * results after it, the chat lines between them). The conversation's rules, the notes waiting for the
   * next message and a compaction's summary written meanwhile stay: the summary stands for turns before
   * the cut (compaction keeps the current turn), as in the agent's history. Returns how many rows went.
   */
  truncateFrom(sessionId: string, rowId: number): number {
    return this.db.transaction(() => {
      const gone = this.db
        .prepare("SELECT id, kind FROM session_messages WHERE session_id = ? AND id >= ? AND kind NOT IN ('rules', 'note', 'summary')")
        .all(sessionId, rowId) as { id: number; kind: string }[];
      if (gone.length === 0) return 0;
      this.db.prepare("DELETE FROM session_messages WHERE session_id = ? AND id >= ? AND kind NOT IN ('rules', 'note', 'summary')").run(sessionId, rowId);
      const counted = gone.filter((g) => g.kind === 'message' || g.kind === 'summary').length;
      this.db.prepare('UPDATE sessions SET message_count = MAX(0, message_count - ?), updated_at = ? WHERE id = ?').run(counted, Date.now(), sessionId);
      return gone.length;
    })();
  }

  /**
   * Edit-and-resend: a new session `newId` holding a copy of `sourceId`'s rows before `beforeRowId` (the
   * edited message and everything after it stay only in the source, which is not changed). Messages a
   * later summary archived are in the copy's context again (the summary is not copied); a summary before
   * the cut keeps standing for the rows it archived. Waiting notes are not copied (they are about the
   * source's later turns).
   */
  fork(sourceId: string, beforeRowId: number, newId: string): SessionInfo {
    return this.db.transaction(() => {
      const src = this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(sourceId) as RawSession | undefined;
      if (!src) throw new Error(`no stored session ${sourceId}`);
      const now = Date.now();
      this.db
        .prepare(
          `INSERT INTO sessions (id, cwd, title, title_source, model, created_at, updated_at, message_count, forked_from, forked_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
        )
        .run(newId, src.cwd, src.title, src.title_source, src.model, now, now, sourceId, beforeRowId);
      const rows = this.db
        .prepare("SELECT * FROM session_messages WHERE session_id = ? AND id < ? AND kind != 'note' ORDER BY id")
        .all(sourceId, beforeRowId) as RawRow[];
      const insert = this.db.prepare(
        `INSERT INTO session_messages (session_id, kind, role, in_context, partial, archived_by, created_at, display_json, text, message_json)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const newIdOf = new Map<number, number>();
      const archivedLater: { row: number; by: number }[] = [];
      let count = 0;
      for (const r of rows) {
        // A summary is always written after the rows it archives: when it is before the cut, it was copied.
        const keepArchived = r.archived_by !== null && r.archived_by < beforeRowId;
        const info = insert.run(
          newId,
          r.kind,
          r.role,
          keepArchived ? 0 : r.archived_by !== null ? 1 : r.in_context,
          r.partial,
          null,
          r.created_at,
          r.display_json,
          r.text,
          r.message_json,
        );
        const id = Number(info.lastInsertRowid);
        newIdOf.set(r.id, id);
        if (keepArchived) archivedLater.push({ row: id, by: r.archived_by! });
        if (r.kind === 'message' || r.kind === 'summary') count++;
      }
      const setArchived = this.db.prepare('UPDATE session_messages SET archived_by = ? WHERE id = ?');
      for (const a of archivedLater) setArchived.run(newIdOf.get(a.by) ?? null, a.row);
      this.db.prepare('UPDATE sessions SET message_count = ? WHERE id = ?').run(count, newId);
      return toInfo(this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(newId) as RawSession);
    })();
  }

  /** The rows a summary row replaced (an archived conversation segment). */
  archivedBy(sessionId: string, summaryRowId: number): SessionRow[] {
    return (
      this.db.prepare('SELECT * FROM session_messages WHERE session_id = ? AND archived_by = ? ORDER BY id').all(sessionId, summaryRowId) as RawRow[]
    ).map(toRow);
  }
}
