import { traceMark } from './trace';
import fs from 'node:fs';
import path from 'node:path';
import { ToolError, throwIfCancelled, type ErrorKind } from './errors';
import type { AuditEntry, AuditRepository } from '../store/audit';
import { openStore, type Store } from '../store';
import { FileAccess, type CommitReport } from './file-access';
import { SpeculativeViewMissed } from './file-view';
import type { BufferBridge, UnsavedBuffersPolicy } from './buffer-bridge';
import type { FileChange, CommitFaultHook, HardLinkPolicy } from './commit-disk';
import { Checkpoints } from './checkpoints';
import { Mutex } from './mutex';
import { recoverCommits, type RecoveryReport } from './commit-journal';
import { applyReviewSelection, type ReviewSelection } from './review';
import { DEFAULT_DENY_GLOBS, PathResolver, isUnder, type ResolvedPath } from './paths';
import { escapeGlob } from './glob-match';
import type { SearchContext } from './search';
import { scanWorkspace, type ScanOptions, type WorkspaceScan } from './scan';
import { DEFAULT_TRASH_RETENTION_DAYS, WorkspaceTrash, type TrashRecovery } from './trash';
import { DEFAULT_SECRET_GLOBS, SecretMatcher } from './secrets';
import type { DiagnosticsSource } from './diagnostics';
import { PostEditDiagnostics, type PendingDiagnostics, type PostEditOptions } from './post-edit-diagnostics';

export interface WorkspaceOptions {
  /** Workspace root (resolved with realpath). */
  root: string;
  /** Folder for the SQLite database and the trash; keep it outside the workspace. */
  dataDir: string;
  sessionId?: string;
  /** Paths matching these globs (workspace-relative) are refused with permission_denied. Default `.git/**`. */
  denyGlobs?: string[];
  /** Files that usually hold secrets: the agent asks the user before reading or searching them. Default DEFAULT_SECRET_GLOBS. */
  secretGlobs?: string[];
  trashRetentionDays?: number;
  /** Live-buffer seam (issue 4); null/absent = disk only. */
  bridge?: BufferBridge | null;
  /** With a bridge: what writes do to a file with unsaved buffer changes. Default 'edit_buffer'. */
  unsavedBuffers?: UnsavedBuffersPolicy;
  /** Largest file read_file/edit_file will load. Default 10 MiB. */
  maxFileBytes?: number;
  /** Let the write tools change read-only files (no owner write bit, or not writable by this user). Default false. */
  allowReadonlyWrites?: boolean;
  /** A file with several hard links: refuse to change it (default) or write it in place, keeping the links. */
  hardLinks?: HardLinkPolicy;
  /** Test hook: simulate failures during commits. */
  faultHook?: CommitFaultHook;
  /** The editor's diagnostics (Neovim's vim.diagnostic); null/absent = none (the diagnostics tool says so). */
  diagnostics?: DiagnosticsSource | null;
  /** With `diagnostics`: how writes asked to (WriteOptions.diagnostics) wait for language servers; null = never. */
  postEditDiagnostics?: PostEditOptions | null;
}

/** What a write records in the audit log; filled in as the operation learns it. */
export interface AuditDraft {
  path: string | null;
  toPath: string | null;
  beforeSha256: string | null;
  afterSha256: string | null;
  diff: string | null;
}

/** What a write call brings besides its plan: the hunk review's decision and its abort signal. */
export interface WriteOptions {
  review?: ReviewSelection;
  /** Once aborted, the write stops before its commit point and changes nothing (`cancelled`). */
  signal?: AbortSignal;
  /**
   * After the commit, wait for the language servers of the loaded buffers written into and add what
   * changed in their diagnostics to the result (`diagnostics`, see post-edit-diagnostics.ts).
   */
  diagnostics?: boolean;
}

/** A write computed in memory, ready to commit. */
export interface WritePlan<T> {
  changes: FileChange[];
  /** Unified diff (or short text) for previews and the audit log. */
  diff: string;
  result: T;
  /** One audit row per entry (apply_patch writes one per file). */
  audit: (AuditDraft & { operation: string })[];
  beforeCommit?: () => Promise<void>;
  /** Runs after a successful commit; `report` says which changes went into unsaved buffers. */
  afterCommit?: (report: CommitReport) => Promise<void>;
  onFailure?: () => Promise<void>;
}

/**
 * What every tool reaches through ctx.workspace. Tools that only need the folders (bash, tests with a
 * plain object) use this; the file tools need the full FileWorkspace (see `fileWorkspace()`).
 */
export interface Workspace {
  /** Absolute, realpath-resolved workspace root. */
  readonly root: string;
  /** Where the SQLite database and the trash live (outside the workspace by default). */
  readonly dataDir: string;
  readonly sessionId: string;
}

/** The workspace file layer: confined paths, file access (disk, later buffers), writes, trash and audit. */
export class FileWorkspace implements Workspace {
  readonly root: string;
  readonly dataDir: string;
  readonly sessionId: string;
  readonly paths: PathResolver;
  readonly files: FileAccess;
  readonly store: Store;
  readonly trash: WorkspaceTrash;
  /** Pre-images of the files each user message's turn changes (see checkpoints.ts, rewind.ts). */
  readonly checkpoints: Checkpoints;
  /** What opening the workspace recovered of commits cut off by a crash. */
  readonly recovered: RecoveryReport;
  /** What opening the workspace found of deletes whose trash row a crash or a locked database prevented. */
  readonly trashRecovered: TrashRecovery;
  /** The editor's diagnostics, when Neovim is attached. */
  readonly diagnostics: DiagnosticsSource | null;
  private readonly postEdit: PostEditDiagnostics | null;
  private readonly writeLock = new Mutex();
  private readonly auditSpool: string;
  private readonly secrets: SecretMatcher;
  private closed = false;

  constructor(opts: WorkspaceOptions) {
    if (!opts.root) throw new Error('openWorkspace: root is required');
    if (!opts.dataDir) throw new Error('openWorkspace: dataDir is required');
    this.root = fs.realpathSync.native(path.resolve(opts.root));
    if (!fs.statSync(this.root).isDirectory()) throw new Error(`openWorkspace: ${this.root} is not a directory`);
    fs.mkdirSync(opts.dataDir, { recursive: true });
    this.dataDir = fs.realpathSync.native(path.resolve(opts.dataDir));
    this.sessionId = opts.sessionId ?? `session-${Date.now().toString(36)}`;
    const deny = [...(opts.denyGlobs ?? DEFAULT_DENY_GLOBS)];
    // A data folder inside the workspace is never visible to the tools.
    if (isUnder(this.root, this.dataDir) && this.dataDir !== this.root) {
      const rel = path.relative(this.root, this.dataDir).split(path.sep).join('/');
      deny.push('/' + escapeGlob(rel));
    }
    this.paths = new PathResolver(this.root, deny);
    this.secrets = new SecretMatcher(opts.secretGlobs ?? DEFAULT_SECRET_GLOBS);
    const journalDir = path.join(this.dataDir, 'journal');
    // Commits a crashed process left half done are finished or undone before anything else runs.
    this.recovered = recoverCommits(journalDir, this.root);
    this.files = new FileAccess({
      root: this.root,
      bridge: opts.bridge,
      unsavedBuffers: opts.unsavedBuffers,
      maxFileBytes: opts.maxFileBytes,
      allowReadonlyWrites: opts.allowReadonlyWrites,
      faultHook: opts.faultHook,
      journalDir,
      hardLinks: opts.hardLinks,
    });
    this.store = openStore(this.dataDir);
    this.auditSpool = path.join(this.dataDir, 'audit-spool.jsonl');
    try {
      this.flushAuditSpool();
    } catch {
      // still locked: the next row appends them
    }
    this.trash = new WorkspaceTrash(this.dataDir, this.store.trash, opts.trashRetentionDays ?? DEFAULT_TRASH_RETENTION_DAYS, this.root, this.sessionId);
    // Deletes cut off before their trash row (a crash, a locked database) are listed again.
    try {
      this.trashRecovered = this.trash.recover();
    } catch {
      this.trashRecovered = { adopted: [], dropped: [] };
    }
    this.checkpoints = new Checkpoints({ root: this.root, files: this.files, repo: this.store.checkpoints });
    this.diagnostics = opts.diagnostics ?? null;
    this.postEdit =
      this.diagnostics && opts.postEditDiagnostics ? new PostEditDiagnostics(this.diagnostics, (abs) => this.paths.relative(abs), opts.postEditDiagnostics, this.paths.root) : null;
  }

  get audit(): AuditRepository {
    return this.store.audit;
  }

  resolve(p: string, opts: { allowRoot?: boolean } = {}): ResolvedPath {
    return this.paths.resolve(p, opts);
  }

  searchContext(signal?: AbortSignal): SearchContext {
    return { rootAbs: this.root, isDenied: (rel) => this.paths.isDenied(rel), isSecret: (rel) => this.secrets.isSecret(rel), signal };
  }

  /** A file that usually holds secrets (secret_globs): reading or searching it needs the user's approval. */
  isSecret(rel: string): boolean {
    return this.secrets.isSecret(rel);
  }

  /** A bounded snapshot of the workspace's files: .git, .gitignore'd paths and the deny globs left out. */
  scanFiles(opts: Omit<ScanOptions, 'isIgnored'> = {}): Promise<WorkspaceScan> {
    return scanWorkspace(this.root, { ...opts, isIgnored: (rel) => this.paths.isDenied(rel) });
  }

  /** Runs `fn` while holding the workspace write lock (writes are serialized per workspace). */
  withWriteLock<T>(fn: () => Promise<T>): Promise<T> {
    return this.writeLock.run(fn);
  }

  /**
   * The write path of every write tool: inside the lock, plan against the CURRENT content (stale gate
   * included), commit all-or-nothing, and audit the attempt whether it succeeded or not. A cancelled
   * call is checked after every wait up to the commit's renames and then changes nothing. With
   * `opts.diagnostics`, once the lock is released, the result gains what the write changed in the
   * diagnostics of the loaded buffers it wrote into (`diagnostics`, see post-edit-diagnostics.ts).
   */
  async runWrite<T>(
    tool: string,
    operation: string,
    draft: AuditDraft,
    plan: (draft: AuditDraft, how: { speculate: boolean }) => Promise<WritePlan<T>>,
    opts: WriteOptions = {},
  ): Promise<T> {
    if (this.closed) throw new ToolError('internal_error', 'The workspace is closed.');
    const { review, signal } = opts;
    // Set inside the lock; TS does not track assignments made in the callback, hence the holder.
    const watch: { pending: PendingDiagnostics | null } = { pending: null };
    const initial = { ...draft };
    // A plan may view its file speculatively (FileAccess.view `speculate`: no wait for Neovim's buffer
    // status) unless the user reviewed it; a miss (SpeculativeViewMissed, before the commit point:
    // nothing changed, nothing audited) plans it again from the real view.
    let speculate = !review;
    const result = await this.withWriteLock(async () => {
      let p: WritePlan<T> | undefined;
      for (;;) {
        try {
          throwIfCancelled(signal);
          p = await plan(draft, { speculate });
          if (review) p = await applyReviewSelection(this, p, review);
          throwIfCancelled(signal);
          // The pre-images are stored before anything changes; a failed write records nothing else.
          traceMark('planned');
          const capture = await this.checkpoints.capture(p.changes);
          await p.beforeCommit?.();
          traceMark('checkpoint captured');
          // The diagnostics before the change (one round trip to Neovim; never fails the write).
          if (opts.diagnostics && this.postEdit) watch.pending = await this.postEdit.arm(p.changes);
          traceMark('diagnostics armed');
          let report: CommitReport;
          try {
            report = await this.files.commit(p.changes, signal);
          } catch (err) {
            await p.onFailure?.();
            throw err;
          }
          // The files changed: from here on the call reports success, whatever the bookkeeping does (a
          // locked database is waited for up to its busy timeout; what still fails is said in the result).
          const warnings: string[] = [];
          traceMark('committed');
          try {
            await this.checkpoints.record(capture, p.changes, report);
          } catch (err) {
            warnings.push(`the checkpoint was not recorded (:CabooseUndo cannot undo this change): ${errText(err)}`);
          }
          try {
            await p.afterCommit?.(report);
          } catch (err) {
            warnings.push(`bookkeeping after the write failed (a deleted file's trash entry is added at the next start): ${errText(err)}`);
          }
          if (warnings.length && p.result && typeof p.result === 'object') Object.assign(p.result, { warnings });
        } catch (err) {
          watch.pending?.cancel();
          watch.pending = null;
          if (err instanceof SpeculativeViewMissed && speculate) {
            traceMark('speculative view missed: planned again');
            speculate = false;
            for (const k of Object.keys(draft) as (keyof AuditDraft)[]) if (!(k in initial)) delete draft[k];
            Object.assign(draft, initial);
            continue;
          }
          const te = toToolError(err, draft.path);
          this.recordAudit(tool, operation, draft, false, te.kind);
          throw te;
        }
        break;
      }
      for (const a of p.audit) this.recordAudit(tool, a.operation, a, true, null);
      traceMark('audit row');
      return p.result;
    });
    // Waiting for the language servers holds no lock: other writes go on meanwhile.
    const settled = await watch.pending?.settle(signal);
    if (settled && result && typeof result === 'object') Object.assign(result, { diagnostics: settled });
    traceMark('write done');
    return result;
  }

  /**
   * One audit row about this workspace (also for an attempt refused before it reached the plan, e.g.
   * invalid arguments). `details` is stored as JSON and covered by the chain hash.
   */
  recordAudit(tool: string, operation: string, d: AuditDraft, ok: boolean, errorKind: ErrorKind | null, details?: object): void {
    if (this.closed) return;
    this.appendAudit({
      time: new Date().toISOString(),
      sessionId: this.sessionId,
      tool,
      operation,
      path: d.path,
      toPath: d.toPath,
      beforeSha256: d.beforeSha256,
      afterSha256: d.afterSha256,
      diff: d.diff,
      ok,
      errorKind,
      workspace: this.root,
      details: details === undefined ? null : JSON.stringify(details),
    });
  }

  /**
   * Appends an audit row. When the database cannot take it (locked past its busy timeout, read-only),
   * the row is kept in `<dataDir>/audit-spool.jsonl` (fsynced) and appended, in order, before the next
   * row or when the workspace is next opened: the log never misses a write that happened.
   */
  private appendAudit(e: AuditEntry): void {
    try {
      this.flushAuditSpool();
      this.store.audit.append(e);
    } catch {
      const fd = fs.openSync(this.auditSpool, 'a', 0o600);
      try {
        fs.writeSync(fd, JSON.stringify(e) + '\n');
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    }
  }

  /** Appends the spooled audit rows (see appendAudit); throws when the database still cannot take them. */
  flushAuditSpool(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.auditSpool, 'utf8');
    } catch {
      return;
    }
    const entries: AuditEntry[] = [];
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        entries.push(JSON.parse(line) as AuditEntry);
      } catch {
        // a line cut off by a crash while it was written
      }
    }
    this.store.audit.appendAll(entries);
    fs.rmSync(this.auditSpool, { force: true });
  }

  close(): void {
    if (this.closed) return;
    try {
      this.flushAuditSpool();
    } catch {
      // still locked: the next open appends them
    }
    this.closed = true;
    this.store.close();
  }
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The FileWorkspace behind a tool context (internal_error when a caller passed a bare Workspace). */
export function fileWorkspace(ws: Workspace): FileWorkspace {
  if (ws instanceof FileWorkspace) return ws;
  throw new ToolError('internal_error', 'File tools need a workspace opened with openWorkspace().');
}


export function notFound(rel: string, hint = 'Check the path with list_directory or glob.'): ToolError {
  return new ToolError('not_found', `"${rel}" does not exist.`, { path: rel, suggestedAction: hint });
}

/** Maps filesystem errors to the tool error kinds. */
export function toToolError(err: unknown, rel: string | null): ToolError {
  if (err instanceof ToolError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const p = rel ?? undefined;
  switch (code) {
    case 'ENOENT':
      return new ToolError('not_found', `Not found: ${(err as Error).message}`, { path: p });
    case 'EEXIST':
    case 'ENOTDIR':
      return new ToolError('already_exists', `A file is in the way: ${(err as Error).message}`, { path: p });
    case 'EISDIR':
      return new ToolError('is_directory', `Is a directory: ${(err as Error).message}`, { path: p });
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new ToolError('permission_denied', `Permission denied: ${(err as Error).message}`, { path: p });
    default: {
      const message = err instanceof Error ? err.message : String(err);
      return new ToolError('internal_error', message, { path: p });
    }
  }
}
