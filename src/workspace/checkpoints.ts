import path from 'node:path';
import type { CheckpointFileRecord, CheckpointRepository } from '../store/checkpoints';
import { sha256Hex } from './file-sha';
import type { CommitReport, FileAccess } from './file-access';
import type { FileChange } from './commit-disk';

/**
 * Checkpoint capture: while a user message's turn is open, every write commit first stores the
 * pre-image of each file it changes (the view the tools work on: an unsaved buffer's text, else the
 * disk; or "did not exist"), then, once committed, the state it left. One checkpoint per turn, created
 * when its first file changes. Writes outside a turn (the user's own tool.call, restores) are not
 * checkpointed. Rewinding lives in rewind.ts.
 */

export interface TurnInfo {
  sessionId: string;
  messageId?: string | number | null;
  /** The user's message as typed (listed by :CabooseCheckpoints). */
  text: string;
}

interface Turn {
  info: TurnInfo;
  startedAt: string;
  /** Row id once the first change was recorded. */
  id: number | null;
  /** Paths whose pre-image this checkpoint already holds (only the first one counts). */
  captured: Set<string>;
}

/** Pre-images taken before a commit, recorded once it succeeded. */
export interface Capture {
  turn: Turn;
  /** abs → the file before this commit (only paths new to the checkpoint). */
  before: Map<string, { rel: string; before: { sha256: string; mode: number } | null }>;
}

export interface CheckpointsOptions {
  root: string;
  files: FileAccess;
  repo: CheckpointRepository;
}

export class Checkpoints {
  private turn: Turn | null = null;
  private readonly notes: string[] = [];
  /** Told when a committed change could not be recorded (the write itself stands). */
  onRecordError: ((err: unknown) => void) | null = null;
  /** Where notes wait when set (the session store: they outlive the host); else in memory. */
  noteStore: { add(text: string): void; take(): string[] } | null = null;

  constructor(private readonly o: CheckpointsOptions) {}

  get repo(): CheckpointRepository {
    return this.o.repo;
  }

  /** A turn is running: its writes are being checkpointed (rewinds wait for it to end). */
  get active(): boolean {
    return this.turn !== null;
  }

  /** Opens the checkpoint of a user message (its row appears with the first change). */
  begin(info: TurnInfo): void {
    this.turn = { info, startedAt: new Date().toISOString(), id: null, captured: new Set() };
  }

  end(): void {
    this.turn = null;
  }

  /** Before a commit: stores the pre-images of the paths this checkpoint has not seen yet. */
  async capture(changes: FileChange[]): Promise<Capture | null> {
    const turn = this.turn;
    if (!turn || changes.length === 0) return null;
    const before: Capture['before'] = new Map();
    for (const c of changes) {
      const rel = this.rel(c.abs);
      if (turn.captured.has(rel) || before.has(c.abs)) continue;
      const v = await this.o.files.view(c.abs);
      if (v.kind === 'file' && v.bytes) {
        // Keyed by the stored bytes (an unsaved non-UTF-8 buffer is viewed, and restored, as UTF-8).
        const sha = sha256Hex(v.bytes);
        this.o.repo.putBlob(sha, v.bytes);
        before.set(c.abs, { rel, before: { sha256: sha, mode: v.mode ?? 0o644 } });
      } else before.set(c.abs, { rel, before: null });
    }
    return { turn, before };
  }

  /** After a successful commit: the checkpoint row (lazily), new pre-images, every path's after-state. */
  async record(capture: Capture | null, changes: FileChange[], report: CommitReport): Promise<void> {
    if (!capture) return;
    const { turn } = capture;
    try {
      const after = new Map<string, string | null>();
      for (const c of changes) {
        if (c.type === 'delete') after.set(c.abs, null);
        else after.set(c.abs, report.buffered.get(c.abs)?.sha256 ?? (c.sha256 !== undefined ? await c.sha256 : sha256Hex(c.bytes)));
      }
      const files: CheckpointFileRecord[] = [];
      for (const [abs, afterSha256] of after) {
        const b = capture.before.get(abs);
        files.push({ path: b?.rel ?? this.rel(abs), before: b?.before ?? null, afterSha256 });
      }
      this.save(turn, files);
      for (const b of capture.before.values()) turn.captured.add(b.rel);
    } catch (err) {
      if (!this.onRecordError) throw err;
      this.onRecordError(err);
    }
  }

  /**
   * Changes a shell command made during the turn, as a before/after scan found them: `before` holds the
   * bytes the scan read before the command (files it could not read are left out: they cannot be
   * rewound), `after` the sha256 each file has now (null: deleted). Recorded like a write's changes.
   */
  recordExternal(changes: { rel: string; before: Buffer | null; mode: number; afterSha256: string | null }[]): void {
    const turn = this.turn;
    if (!turn || changes.length === 0) return;
    try {
      const files: CheckpointFileRecord[] = [];
      for (const c of changes) {
        let before: CheckpointFileRecord['before'] = null;
        if (c.before) {
          const sha = sha256Hex(c.before);
          if (!turn.captured.has(c.rel)) this.o.repo.putBlob(sha, c.before);
          before = { sha256: sha, mode: c.mode };
        }
        files.push({ path: c.rel, before, afterSha256: c.afterSha256 });
      }
      this.save(turn, files);
      for (const c of changes) turn.captured.add(c.rel);
    } catch (err) {
      if (!this.onRecordError) throw err;
      this.onRecordError(err);
    }
  }

  /** The turn's checkpoint row (created with its first files) and these files' states. */
  private save(turn: Turn, files: CheckpointFileRecord[]): void {
    turn.id = this.o.repo.record(
      turn.id,
      {
        sessionId: turn.info.sessionId,
        root: this.o.root,
        messageId: turn.info.messageId == null ? null : String(turn.info.messageId),
        message: turn.info.text,
        createdAt: turn.startedAt,
      },
      files,
    );
  }

  /** Queues a note for the model (a rewind it must learn about); taken with the next user message. */
  addNote(text: string): void {
    if (this.noteStore) this.noteStore.add(text);
    else this.notes.push(text);
  }

  /** The notes queued since the last call, joined ('' when none). */
  takeNotes(): string {
    return [...this.notes.splice(0), ...(this.noteStore?.take() ?? [])].join('\n');
  }

  rel(abs: string): string {
    return path.relative(this.o.root, abs).split(path.sep).join('/');
  }
}
