/**
 * Writes a chat session to SQLite as it happens: each message the moment the agent adds it, a streaming
 * reply at most FLUSH_MS after its text arrived, chat notices and errors, compaction summaries (the
 * messages they replace stay, archived). Knows which row holds each message, for pruning stubs.
 */
import type { ChatMessage } from '../agent/provider';
import type { SubagentTranscript } from '../agent/subagent';
import type { SessionRepository } from '../store/sessions';
import { assistantDisplay, fallbackTitle, indexText, toolDisplay, type RestoredMessage, type ToolDisplay, type UserDisplay } from './session-history';
import type { ToolResultView } from './summaries';

/** A streaming reply reaches the database at least this often. */
export const FLUSH_MS = 200;

type SubagentTranscriptRow = Pick<SubagentTranscript, 'toolCallId' | 'label' | 'task' | 'status' | 'messages'>;
type SubagentRow = { rowId: number | null; at: number; timer: NodeJS.Timeout | null; latest: SubagentTranscriptRow };

export class SessionRecorder {
  private readonly rowOf = new WeakMap<ChatMessage, number>();
  private started = false;
  private nextDisplay: UserDisplay | null = null;
  private partial: { rowId: number; text: string; dirty: boolean } | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** The conversation's project rules, written as soon as the session row exists. */
  private pendingRules: { snapshot: unknown; lines: string[] } | null = null;
  /** Tool calls waiting for their result message: name and arguments, and the chat's view once known. */
  private readonly calls = new Map<string, { name: string; args: unknown; view?: ToolResultView }>();
  /** Running subagents' transcript rows, by the parent's tool call id. */
  private readonly subagents = new Map<string, SubagentRow>();

  constructor(
    private readonly repo: SessionRepository,
    readonly sessionId: string,
    /** `onTitle`: the session was created with its first words as its title (the chat shows it until the model's). */
    private readonly info: { cwd: string; model: string; onTitle?: (title: string) => void },
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.started = repo.get(sessionId) !== null;
  }

  /** Messages restored from this session's rows keep their row ids. */
  adopt(restored: readonly RestoredMessage[]): void {
    for (const r of restored) if (r.rowId !== null) this.rowOf.set(r.message, r.rowId);
  }

  /** The stored id of a message of the conversation (for pruning stubs). */
  storedId = (m: ChatMessage): number | undefined => this.rowOf.get(m);

  /** What the chat shows of the next user message (its words, not the attached context). */
  turnStart(display: UserDisplay): void {
    this.nextDisplay = display;
  }

  text(delta: string): void {
    this.safely(() => {
      if (!this.partial) {
        this.ensureSession(null);
        const rowId = this.repo.append(this.sessionId, { kind: 'message', role: 'assistant', message: { role: 'assistant', content: delta }, text: delta, partial: true });
        this.partial = { rowId, text: delta, dirty: false };
        return;
      }
      this.partial.text += delta;
      this.partial.dirty = true;
      this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
    });
  }

  /** Writes the streaming reply's text so far. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const p = this.partial;
    if (!p?.dirty) return;
    p.dirty = false;
    this.safely(() => this.repo.updatePartial(p.rowId, { role: 'assistant', content: p.text }, p.text));
  }

  /** The chat's view of a finished call (what the tool line shows), stored with its result message. */
  toolView(id: string, view: ToolResultView): void {
    const c = this.calls.get(id);
    if (c) c.view = view;
  }

  messageAdded(m: ChatMessage): void {
    this.safely(() => {
      if (m.role === 'user' && Array.isArray(m.content) && !this.nextDisplay) {
        // Images or audio a tool returned (a user's own message with images has its display waiting), passed to the model: part of the conversation, not of the chat.
        this.ensureSession(null);
        this.rowOf.set(m, this.repo.append(this.sessionId, { kind: 'message', role: 'user', message: m, display: { text: '', media: true }, text: '' }));
        return;
      }
      if (m.role === 'user') {
        const display = this.nextDisplay ?? { text: typeof m.content === 'string' ? m.content : '' };
        this.nextDisplay = null;
        this.ensureSession(display.text);
        this.rowOf.set(m, this.repo.append(this.sessionId, { kind: 'message', role: 'user', message: m, display, text: indexText(m, display) }));
        return;
      }
      this.ensureSession(null);
      if (m.role === 'assistant') {
        for (const c of (m as { tool_calls?: { id: string; function: { name: string; arguments: string } }[] }).tool_calls ?? []) {
          this.calls.set(c.id, { name: c.function.name, args: safeParse(c.function.arguments) });
        }
        const display = assistantDisplay(m);
        if (this.partial) {
          if (this.timer) clearTimeout(this.timer);
          this.timer = null;
          const rowId = this.partial.rowId;
          this.partial = null;
          this.repo.finish(rowId, { message: m, display, text: indexText(m) });
          this.rowOf.set(m, rowId);
          return;
        }
        this.rowOf.set(m, this.repo.append(this.sessionId, { kind: 'message', role: 'assistant', message: m, display, text: indexText(m) }));
        return;
      }
      let display: ToolDisplay | undefined;
      if (m.role === 'tool') {
        const id = (m as { tool_call_id: string }).tool_call_id;
        const c = this.calls.get(id);
        this.calls.delete(id);
        if (c) display = c.view ? { id, status: c.view.status, summary: c.view.summary, ...(c.view.details.length > 0 ? { details: c.view.details } : {}) } : toolDisplay(id, c.name, c.args, m.content);
      }
      this.rowOf.set(m, this.repo.append(this.sessionId, { kind: 'message', role: m.role, message: m, display, text: indexText(m) }));
    });
  }

  /**
   * A subagent's whole conversation, kept with the session (outside the model's context), searchable.
   * Written while it runs (status 'running': at most every FLUSH_MS, so a crash keeps most of it) and
   * once more when it ends.
   */
  subagent(t: SubagentTranscriptRow): void {
    const s = this.subagents.get(t.toolCallId) ?? { rowId: null, at: 0, timer: null, latest: t };
    this.subagents.set(t.toolCallId, s);
    s.latest = { ...t, messages: [...t.messages] };
    const done = t.status !== 'running';
    if (done) this.subagents.delete(t.toolCallId);
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
    const wait = s.at + FLUSH_MS - Date.now();
    if (!done && wait > 0) {
      s.timer = setTimeout(() => this.writeSubagent(s), wait);
      return;
    }
    this.writeSubagent(s);
  }

  private writeSubagent(s: SubagentRow): void {
    s.timer = null;
    s.at = Date.now();
    const t = s.latest;
    this.safely(() => {
      this.ensureSession(null);
      const last = [...t.messages].reverse().find((m) => m.role === 'assistant' && typeof m.content === 'string');
      const text = `${t.label}: ${t.task}\n${typeof last?.content === 'string' ? last.content : ''}`;
      const display = { id: t.toolCallId, label: t.label, status: t.status };
      if (s.rowId === null) s.rowId = this.repo.append(this.sessionId, { kind: 'subagent', message: t, display, text, inContext: false });
      else this.repo.finish(s.rowId, { message: t, display, text });
    });
  }

  /** A line the chat showed (not part of the model's conversation). */
  chatLine(kind: 'notice' | 'error', text: string): void {
    this.safely(() => {
      if (!this.started) return; // nothing said yet: nothing worth a session
      this.repo.append(this.sessionId, { kind, text, inContext: false });
    });
  }

  /**
   * The project rules the conversation follows (the files' texts, and the chat's lines naming them): the
   * session's first row once it exists, so a reopened conversation keeps them. Not searchable.
   */
  rules(snapshot: unknown, lines: string[]): void {
    this.pendingRules = { snapshot, lines };
    if (this.started) this.writeRules();
  }

  /** Compaction: the summary row stands for `removed` from now on; its id is what `recall` reads. */
  archive = (removed: ChatMessage[], summary: string): number | undefined => {
    let id: number | undefined;
    this.safely(() => {
      id = this.repo.append(this.sessionId, { kind: 'summary', role: 'user', message: { summary }, text: summary });
      const rows = [...new Set(removed.map((m) => this.rowOf.get(m)).filter((r): r is number => r !== undefined))];
      this.repo.archive(rows, id);
    });
    return id;
  };

  /** The summary pair that replaced the archived messages. */
  compacted(added: ChatMessage[], archivedAs: number | undefined): void {
    if (archivedAs === undefined) return;
    for (const m of added) this.rowOf.set(m, archivedAs);
  }

  dispose(): void {
    this.flush();
    for (const s of this.subagents.values()) if (s.timer) this.writeSubagent(s);
    this.subagents.clear();
  }

  private ensureSession(firstText: string | null): void {
    if (this.started) return;
    const title = firstText === null ? null : fallbackTitle(firstText);
    this.repo.ensure({ id: this.sessionId, cwd: this.info.cwd, model: this.info.model, title });
    this.started = true;
    this.writeRules();
    if (title) this.info.onTitle?.(title);
  }

  private writeRules(): void {
    const r = this.pendingRules;
    if (!r) return;
    this.pendingRules = null;
    this.safely(() => void this.repo.append(this.sessionId, { kind: 'rules', message: r.snapshot, display: { lines: r.lines }, inContext: false }));
  }

  /** A failing database must not break the chat: the error is reported once per call, the turn goes on. */
  private safely(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.onError(e);
    }
  }
}

function safeParse(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}
