import type { BufferDiagnostics, DiagnosticsSource, LineHunk, LocatedDiagnostic, WatchPoll } from './diagnostics';
import { diffDiagnostics } from './diagnostics-diff';
import type { FileChange } from './commit-disk';

/**
 * After a write lands text in loaded buffers: wait (bounded) for their language servers to report on the
 * new text, and tell the model which diagnostics the write introduced or resolved. Armed inside the write
 * lock just before the commit (the "before" side), settled after the lock is released.
 */

export interface PostEditOptions {
  /** Longest wait for the language servers after a write (ms). */
  waitMs: number;
  /** Quiet time after a server's report before it counts as its answer (servers report in steps). */
  settleMs: number;
  /** Polling interval (ms). */
  pollMs?: number;
  /** Told about a failure; the write's result then carries no diagnostics. */
  onError?: (err: unknown) => void;
}

/** The `diagnostics` field of a write's result. */
export interface PostEditReport {
  /** New since the write (after-write positions), errors first. */
  introduced: LocatedDiagnostic[];
  /** Gone since the write (before-write positions). */
  resolved: LocatedDiagnostic[];
  unchangedCount: number;
  waitedMs: number;
  /** A language server did not report within the wait: the lists may be incomplete. */
  timedOut?: true;
  /** Entries left out of introduced and resolved (each list is capped). */
  omitted?: number;
  notice?: string;
}

/** Most entries per list in a report. */
export const MAX_REPORTED = 30;
/** Most diagnostics per buffer compared. */
const WATCH_LIMIT = 1000;
const DEFAULT_POLL_MS = 40;

export class PostEditDiagnostics {
  constructor(
    private readonly source: DiagnosticsSource,
    private readonly relative: (abs: string) => string,
    private readonly opts: PostEditOptions,
    /** The workspace root: the other loaded buffers under it are compared too (an edit can break them). */
    private readonly root?: string,
  ) {}

  /** Watches the loaded buffers `changes` write into (moves excepted: their buffer is renamed). Never throws. */
  async arm(changes: readonly FileChange[]): Promise<PendingDiagnostics | null> {
    const paths = [...new Set(changes.flatMap((c) => (c.type === 'write' && !c.movedFrom ? [c.abs] : [])))];
    if (paths.length === 0) return null;
    try {
      const w = await this.source.watch(paths, WATCH_LIMIT, this.root);
      return w ? new PendingDiagnostics(this.source, this.relative, this.opts, w.token, w.before, w.others ?? []) : null;
    } catch (err) {
      this.opts.onError?.(err);
      return null;
    }
  }
}

export class PendingDiagnostics {
  constructor(
    private readonly source: DiagnosticsSource,
    private readonly relative: (abs: string) => string,
    private readonly opts: PostEditOptions,
    private readonly token: number,
    private readonly before: BufferDiagnostics[],
    /** The other loaded buffers (not written) as they were before the write. */
    private readonly othersBefore: BufferDiagnostics[] = [],
  ) {}

  /** The write did not happen: forget the watch. */
  cancel(): void {
    this.source.cancel(this.token).catch((err: unknown) => this.opts.onError?.(err));
  }

  /**
   * Waits until the servers answered (or the wait is over) and compares. Null when no watched buffer
   * changed, when `signal` aborts, or on a failure (reported to onError). Never throws.
   */
  async settle(signal?: AbortSignal): Promise<PostEditReport | null> {
    const start = performance.now();
    const deadline = start + this.opts.waitMs;
    let poll: WatchPoll;
    try {
      for (;;) {
        if (signal?.aborted) {
          this.cancel();
          return null;
        }
        poll = await this.source.poll(this.token, this.opts.settleMs, performance.now() >= deadline);
        if (poll.done) break;
        await pause(Math.min(this.opts.pollMs ?? DEFAULT_POLL_MS, Math.max(1, deadline - performance.now())), signal);
      }
    } catch (err) {
      this.opts.onError?.(err);
      this.cancel();
      return null;
    }
    const waitedMs = Math.round(performance.now() - start);
    const changed = poll.buffers.filter((b) => b.changed);
    if (changed.length === 0) return null;
    const changedAbs = new Set(changed.map((b) => b.abs));
    const locate = (b: BufferDiagnostics): LocatedDiagnostic[] => b.diagnostics.map((d) => ({ path: this.relative(b.abs), ...d }));
    const hunks = new Map<string, LineHunk[]>(changed.map((b) => [this.relative(b.abs), b.hunks]));
    // Other loaded buffers whose diagnostics changed after the write (their text did not: no hunks).
    const othersBefore = new Map(this.othersBefore.map((b) => [b.abs, b]));
    const othersChanged = (poll.others ?? []).filter((b) => {
      const was = othersBefore.get(b.abs);
      return was !== undefined && !changedAbs.has(b.abs) && JSON.stringify(was.diagnostics) !== JSON.stringify(b.diagnostics);
    });
    const diff = diffDiagnostics(
      [...this.before.filter((b) => changedAbs.has(b.abs)), ...othersChanged.map((b) => othersBefore.get(b.abs)!)].flatMap(locate),
      [...changed, ...othersChanged].flatMap(locate),
      hunks,
    );
    const report: PostEditReport = {
      introduced: diff.introduced.slice(0, MAX_REPORTED),
      resolved: diff.resolved.slice(0, MAX_REPORTED),
      unchangedCount: diff.unchanged,
      waitedMs,
    };
    const omitted = diff.introduced.length + diff.resolved.length - report.introduced.length - report.resolved.length;
    if (omitted > 0) report.omitted = omitted;
    const silent = changed.filter((b) => !b.answered);
    if (silent.length > 0) {
      report.timedOut = true;
      const clients = [...new Set(silent.flatMap((b) => b.clients))].join(', ') || 'the language server';
      report.notice =
        `No report from ${clients} on ${silent.map((b) => this.relative(b.abs)).join(', ')} within ${this.opts.waitMs} ms: ` +
        'it may still be checking, or it stays silent when nothing changed. Call diagnostics later for its current view.';
    } else if (omitted > 0) {
      report.notice = `${omitted} more introduced or resolved diagnostic(s) left out; call diagnostics for the full list.`;
    }
    return report;
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
