/**
 * The one module through which file content is viewed and written. Without a bridge it is the disk.
 * With a Neovim buffer bridge, a file loaded in a buffer with unsaved changes is viewed from, and
 * written into, that buffer (never to disk); disk writes keep clean loaded buffers in sync.
 *
 * Its parts: file-view.ts (a file as the agent sees it, the disk view), stale-gate.ts (the sha256s the
 * agent saw), buffer-bridge.ts and buffer-cache.ts (the Neovim buffers), commit-disk.ts and
 * commit-steps.ts (the atomic disk commit), file-errors.ts (the refusals). This file joins them: a view
 * of disk or buffer, and a commit that sends each change to the disk or into its unsaved buffer.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './errors';
import { isUnder } from './paths';
import { anchoringSupported, lstatAnchored } from './anchored';
import { sha256Hex } from './file-sha';
import { bufferChangedError, isPermissionError, readonlyError, unreadableError, unsavedBufferError } from './file-errors';
import { assertTextFile, diskView, statOrNull, toTextView, type FileView, type TextView } from './file-view';
import { StaleGate } from './stale-gate';
import { bufferLines, fmtKey, linesToBytes, type WrittenFile, type BufferBridge, type BufferOp, type BufferOpResult, type BufferSnapshot, type UnsavedBuffersPolicy } from './buffer-bridge';
import { KnownBuffers } from './buffer-cache';
import { DiskCommitter, type CommitFaultHook, type FileChange, type HardLinkPolicy } from './commit-disk';
import { DiskCache } from './disk-cache';
import { traceMark } from './trace';
import { runQueuedWork } from './io-idle';

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;

/** What a commit's buffer gates decided (FileAccess.checkGates). */
interface GateCheck {
  status: Map<string, BufferSnapshot>;
  disk: FileChange[];
  bufferSets: { change: FileChange & { type: 'write' }; snap: BufferSnapshot; op: BufferOp & { type: 'set' } }[];
  after: (BufferOp | (() => BufferOp))[];
  opLines: Map<BufferOp, Buffer>;
}

/** What a commit did besides writing the disk. */
export interface CommitReport {
  /** Files whose change went into an unsaved buffer only (not to disk): the sha256 that buffer now writes. */
  buffered: Map<string, { sha256: string }>;
  /** A bridge is attached (write results then say savedToDisk). */
  bridged: boolean;
}

export interface FileAccessOptions {
  /** Workspace root, for relative paths in error messages. */
  root?: string;
  bridge?: BufferBridge | null;
  /** What writes do to a file with unsaved buffer changes. Default 'edit_buffer'. */
  unsavedBuffers?: UnsavedBuffersPolicy;
  maxFileBytes?: number;
  /** Let the write tools change read-only files (see assertWritable). Default false. */
  allowReadonlyWrites?: boolean;
  faultHook?: CommitFaultHook;
  /** Where commits keep their intent log (see commit-journal.ts); none = no crash recovery. */
  journalDir?: string;
  /** A file with several hard links: refuse to replace it (default), or write it in place. */
  hardLinks?: HardLinkPolicy;
}

export class FileAccess {
  readonly maxFileBytes: number;
  readonly unsavedBuffers: UnsavedBuffersPolicy;
  readonly allowReadonlyWrites: boolean;
  private readonly bridge: BufferBridge | null;
  private readonly root: string | null;
  /** The sha256s the agent saw (the stale gate). */
  private readonly gate = new StaleGate();
  /** Buffer lines and bytes the host knows per file (buffer-cache.ts). */
  private readonly known = new KnownBuffers();
  faultHook: CommitFaultHook | undefined;
  readonly hardLinks: HardLinkPolicy;
  private readonly disk: DiskCommitter;
  /** Files as last read or written, by their identity on disk (disk-cache.ts). */
  private readonly diskCache = new DiskCache();

  constructor(opts: FileAccessOptions = {}) {
    this.bridge = opts.bridge ?? null;
    this.root = opts.root ?? null;
    this.unsavedBuffers = opts.unsavedBuffers ?? 'edit_buffer';
    this.maxFileBytes = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.allowReadonlyWrites = opts.allowReadonlyWrites ?? false;
    this.faultHook = opts.faultHook;
    this.hardLinks = opts.hardLinks ?? 'refuse';
    this.disk = new DiskCommitter({ root: this.root, journalDir: opts.journalDir ?? null, hardLinks: this.hardLinks, rel: (abs) => this.rel(abs) });
  }

  private rel(abs: string): string {
    return this.root ? path.relative(this.root, abs).split(path.sep).join('/') : abs;
  }

  /** Views answered from the disk cache and entries made (disk-cache.ts), for tests and the bench. */
  get diskCacheStats(): { hits: number; entries: number } {
    return { ...this.diskCache.stats };
  }

  get hasBridge(): boolean {
    return this.bridge !== null;
  }

  /**
   * The current state of `abs`: the buffer's text when it is loaded with unsaved changes, else the disk.
   * `remember` (read tools) records the disk hash seen with a buffer view for the write gate.
   * `forWrite`: the view is for a write the agent computed against this sha256 (its commit compares the
   * file it displaces with the view's bytes): only then may the disk cache answer (disk-cache.ts).
   */
  async view(abs: string, opts: { remember?: boolean; forWrite?: string } = {}): Promise<FileView> {
    let loaded: BufferSnapshot | undefined;
    // The disk is read (and hashed) while Neovim answers: both views are needed for a loaded buffer.
    const diskP = diskView(abs, this.rel(abs), this.root, this.diskCache, opts.forWrite);
    diskP.catch(() => undefined);
    if (this.bridge) {
      const k = this.known.get(abs);
      loaded = (await this.bridge.status([abs], 'modified', k?.bytes ? new Map([[abs, k.tick]]) : undefined)).get(abs);
      traceMark('view: buffer status');
      let cachedSha: string | undefined;
      if (loaded?.modified && !loaded.bytes) {
        const c = this.known.get(abs);
        if (c?.bytes && c.tick === loaded.changedtick && c.fmt === fmtKey(loaded.format)) {
          loaded.bytes = c.bytes;
          cachedSha = c.sha;
        } else loaded = (await this.bridge.status([abs], 'modified')).get(abs);
      }
      if (loaded?.modified && loaded.bytes) {
        // The gate hashes what the buffer would write; the tools see the text in UTF-8 (same bytes for UTF-8).
        const sha = cachedSha ?? sha256Hex(loaded.bytes);
        const bytes = loaded.utf8 ?? loaded.bytes;
        this.known.set(abs, { tick: loaded.changedtick, fmt: fmtKey(loaded.format), bytes, sha });
        const disk = await diskP;
        const v: FileView = {
          abs,
          kind: 'file',
          bytes,
          sha256: sha,
          mode: disk.mode ?? 0o644,
          size: bytes.length,
          source: 'buffer',
          diskSha256: disk.kind === 'file' ? disk.sha256 : null,
          changedtick: loaded.changedtick,
        };
        if (opts.remember) this.gate.remember(abs, v.sha256!, v.diskSha256 ?? null);
        return v;
      }
    }
    const v = await diskP;
    traceMark(`view: disk ${this.diskCache.stats.hits}`);
    if (loaded) v.changedtick = loaded.changedtick;
    if (opts.remember) this.gate.noteGiven(abs, v.sha256);
    return v;
  }

  /**
   * Refuses to change a read-only file: one without its owner's write bit (what Neovim marks
   * 'readonly'; a mode check, so it holds for root too) or one this user may not write (access()).
   * Off with allowReadonlyWrites. Paths that do not exist on disk pass.
   */
  async assertWritable(v: FileView, rel: string): Promise<void> {
    if (this.allowReadonlyWrites || v.kind === 'missing' || v.kind === 'directory') return;
    if (v.mode !== null && (v.mode & 0o200) === 0) throw readonlyError(rel, `mode 0${v.mode.toString(8).padStart(3, '0')}`);
    try {
      await fsp.access(v.abs, fs.constants.W_OK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw readonlyError(rel, code === 'EROFS' ? 'read-only file system' : 'not writable by you');
    }
  }

  /** Records that the agent was given `sha` for `abs` (a read, or a write's result). */
  noteGiven(abs: string, sha: string | null | undefined): void {
    this.gate.noteGiven(abs, sha);
  }

  /**
   * The stale gate: `expected` (what the agent last read) must still describe the file on both sides.
   * For an unsaved buffer, its text must hash to `expected` and the disk must be as it was when the
   * agent read that buffer. `""` asserts the path is absent. The message says which side changed.
   */
  assertFresh(view: FileView, expected: string | undefined, rel: string): void {
    this.gate.assertFresh(view, expected, rel);
  }

  /** Every loaded file buffer with unsaved changes (abs → its bytes); empty without a bridge. */
  async unsavedBufferTexts(): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    if (!this.bridge) return out;
    for (const [abs, s] of await this.bridge.modified()) if (s.bytes) out.set(abs, s.utf8 ?? s.bytes);
    return out;
  }

  /** Size check before reading (file_too_large) for callers that will show the content. */
  async assertReadable(abs: string, rel: string): Promise<void> {
    // Through the verified folder (anchored.ts): a swapped link cannot make the error tell an outside file's size.
    const anchored = this.root !== null && anchoringSupported() && isUnder(this.root, abs);
    const st = await (anchored ? lstatAnchored(this.root!, abs) : statOrNull(abs)).catch((err: unknown) => {
      throw isPermissionError(err) ? unreadableError(rel) : err;
    });
    if (st && st.isFile() && st.size > this.maxFileBytes) {
      throw new ToolError('file_too_large', `"${rel}" is ${st.size} bytes; the limit is ${this.maxFileBytes}.`, {
        path: rel,
        suggestedAction: 'Use grep or search_files to find the part you need.',
      });
    }
  }

  /** View a file as text; throws not_found, is_directory, binary_file or file_too_large. */
  async viewText(abs: string, rel: string): Promise<TextView> {
    await this.assertReadable(abs, rel);
    const v = await this.view(abs);
    return toTextView(v, rel, this.maxFileBytes);
  }

  /** A text file's bytes, checked (not_found, is_directory, file_too_large, binary_file) but not decoded. */
  async viewChecked(
    abs: string,
    rel: string,
    opts: { remember?: boolean } = {},
  ): Promise<FileView & { kind: 'file'; bytes: Buffer; sha256: string; mode: number }> {
    await this.assertReadable(abs, rel);
    const v = await this.view(abs, opts);
    assertTextFile(v, rel, this.maxFileBytes);
    return v as FileView & { kind: 'file'; bytes: Buffer; sha256: string; mode: number };
  }

  /**
   * Writes and deletes several files all-or-nothing. With a bridge, every buffer gate is checked
   * first (a buffer changed since the view → stale_file; delete/move of an unsaved buffer →
   * unsaved_buffer); then the disk changes are committed; then the buffers are updated: a change to
   * an unsaved buffer lands in that buffer only (never on disk), clean loaded buffers are brought in
   * sync with the new disk bytes, deleted files' buffers are wiped and moved ones renamed.
   * Once `signal` is aborted, nothing is changed (`cancelled`) up to the first rename.
   */
  async commit(changes: FileChange[], signal?: AbortSignal): Promise<CommitReport> {
    const report: CommitReport = { buffered: new Map(), bridged: this.bridge !== null };
    if (!this.bridge) {
      await this.commitDisk(changes, true, signal);
      return report;
    }
    const movedFrom = new Set(changes.flatMap((c) => (c.type === 'write' && c.movedFrom ? [c.movedFrom] : [])));
    const paths = [...new Set(changes.flatMap((c) => (c.type === 'write' && c.movedFrom ? [c.abs, c.movedFrom] : [c.abs])))];
    // Which changes go to disk follows from their basis alone: one computed from the disk is written to disk
    // or refused, one computed from an unsaved buffer goes to that buffer or is refused. So the disk part is
    // prepared (journal, temp files, their fsync) while Neovim answers the buffer status, and the gates
    // below are checked before the commit point: a refusal there leaves the disk as it was.
    const diskPlanned = changes.filter((c) => c.type === 'delete' || (c.basis ?? { source: 'disk' }).source !== 'buffer');
    const validation = this.bridge.status(paths, 'never').then((status) => {
      traceMark('commit: buffer status');
      return this.checkGates(changes, status, movedFrom);
    });
    validation.catch(() => undefined); // awaited below; a disk failure may come first
    // Its cancel check also guards the buffer updates, which only follow the disk commit.
    const written = this.commitDisk(diskPlanned, false, signal, async () => {
      const v = await validation;
      if (v.disk.length !== diskPlanned.length || v.disk.some((c, i) => c !== diskPlanned[i])) {
        throw new ToolError('internal_error', 'the buffer gates and the planned disk changes disagree');
      }
    });
    let ops: BufferOp[];
    let checked: GateCheck;
    try {
      checked = await validation;
      ops = [...checked.bufferSets.map((b) => b.op), ...checked.after.map((a) => (typeof a === 'function' ? a() : a))];
      const files = await written;
      // Clean buffers: the file each was brought in sync with, as the rename left it.
      for (const op of ops) if (op.type === 'set' && op.clean && files.has(op.abs)) op.file = files.get(op.abs);
    } catch (err) {
      await written.catch(() => undefined);
      // A gate's refusal is the answer even when the disk part failed too (it was checked first before).
      throw await validation.then(
        () => err,
        (gateErr: unknown) => gateErr,
      );
    }
    const { status, bufferSets, opLines } = checked;
    // The folders' fsync runs while Neovim updates the buffers; both end before the commit returns.
    traceMark('commit: disk done');
    const synced = this.disk.syncDirs(diskPlanned).then(() => traceMark('commit: folder fsync'));
    if (ops.length === 0) {
      await synced;
      return report;
    }
    let results: BufferOpResult[];
    try {
      const updated = this.bridge.update(ops);
      // Queued CPU work of the call (the new bytes' sha256 awaited below) runs while Neovim works.
      runQueuedWork();
      results = await updated;
      traceMark('commit: buffer updated');
    } finally {
      await synced;
    }
    this.known.learn(ops, results, status, opLines);
    for (let i = 0; i < bufferSets.length; i++) {
      const r = results[i];
      const { change, snap } = bufferSets[i];
      if (!r?.ok) {
        if (r?.reason === 'changed' || r?.reason === 'skipped') throw bufferChangedError(this.rel(change.abs));
        throw new ToolError('internal_error', `Could not update the buffer of ${this.rel(change.abs)}: ${r?.message ?? r?.reason ?? 'no reply'}`);
      }
      const k = this.known.get(change.abs);
      const bytes = k?.bytes ?? r.bytes ?? linesToBytes(opLines.get(bufferSets[i].op)!, snap.format);
      // The buffer usually writes exactly the planned bytes: their sha256 is then already known.
      const sha = change.sha256 !== undefined && bytes.equals(change.bytes) ? await change.sha256 : sha256Hex(bytes);
      if (k?.bytes) k.sha = sha;
      report.buffered.set(change.abs, { sha256: sha });
      this.gate.remember(change.abs, sha, change.basis?.diskSha256 ?? null);
    }
    return report;
  }

  /**
   * The buffer gates of a commit, from Neovim's buffer status: a buffer changed since the view → stale_file,
   * delete/move of an unsaved buffer → unsaved_buffer. Gives the disk changes, the unsaved buffers' updates
   * and the ops that bring clean buffers in sync once the disk is written (built later, off the disk's path).
   * Runs before the commit point (it reads the files' present sizes).
   */
  private checkGates(changes: FileChange[], status: Map<string, BufferSnapshot>, movedFrom: Set<string>): GateCheck {
    const disk: FileChange[] = [];
    const bufferSets: { change: FileChange & { type: 'write' }; snap: BufferSnapshot; op: BufferOp & { type: 'set' } }[] = [];
    // Clean buffers' ops are built (line hunks computed) while the disk write runs.
    const after: (BufferOp | (() => BufferOp))[] = [];
    const opLines = new Map<BufferOp, Buffer>();
    for (const c of changes) {
      const s = status.get(c.abs);
      if (c.type === 'delete') {
        if (s?.modified) throw unsavedBufferError(this.rel(c.abs), movedFrom.has(c.abs) ? 'it cannot be moved' : 'it cannot be deleted');
        disk.push(c);
        if (!movedFrom.has(c.abs)) after.push({ type: 'wipe', abs: c.abs });
        continue;
      }
      const basis = c.basis ?? { source: 'disk' };
      if (c.movedFrom && status.get(c.movedFrom)?.modified) throw unsavedBufferError(this.rel(c.movedFrom), 'it cannot be moved');
      if (s?.modified) {
        if (basis.source !== 'buffer' || basis.changedtick !== s.changedtick) throw bufferChangedError(this.rel(c.abs));
        if (this.unsavedBuffers === 'refuse') throw unsavedBufferError(this.rel(c.abs), 'unsaved_buffers is "refuse"');
        const dec = bufferLines(c.bytes, s.format);
        const op = this.known.setOp({ type: 'set', abs: c.abs, changedtick: s.changedtick, clean: false, returnBytes: s.format.fileencoding !== 'utf-8' }, dec.lines, s);
        opLines.set(op, dec.lines);
        bufferSets.push({ change: c, snap: s, op });
        continue;
      }
      if (basis.source === 'buffer') throw bufferChangedError(this.rel(c.abs));
      disk.push(c);
      if (c.movedFrom) after.push({ type: 'rename', from: c.movedFrom, to: c.abs });
      // A buffer that was waiting for a new file (`:edit new.txt`) or a restored one is re-read.
      if (s && (c.reload || c.createOnly)) after.push({ type: 'reload', abs: c.abs });
      else if (s) {
        const dec = bufferLines(c.bytes, s.format);
        // Neovim remembers the size it read; a new size needs an extra step to store the time silently.
        const sizeChanged = (fs.statSync(c.abs, { throwIfNoEntry: false })?.size ?? -1) !== c.bytes.length;
        after.push(() => {
          const op = this.known.setOp({ type: 'set', abs: c.abs, changedtick: s.changedtick, clean: true, finalEol: dec.finalEol, bom: dec.bom, sizeChanged }, dec.lines, s);
          opLines.set(op, dec.lines);
          return op;
        });
      }
    }
    return { status, disk, bufferSets, after, opLines };
  }

  /** The disk commit (commit-disk.ts); the agent is given the written files' sha256s; `syncDirs`: the folders are fsynced. */
  private async commitDisk(changes: FileChange[], syncDirs = true, signal?: AbortSignal, beforeCommitPoint?: () => Promise<void>): Promise<Map<string, WrittenFile>> {
    for (const c of changes) {
      this.diskCache.drop(c.abs);
      if (c.type === 'write' && c.movedFrom) this.diskCache.drop(c.movedFrom);
    }
    const written = await this.disk.commit(changes, signal, this.faultHook, beforeCommitPoint);
    // The write results give these sha256s to the agent.
    for (const w of written) this.gate.noteGiven(w.target, w.sha256);
    // Once no longer racy, the written files are read back in the background: the next view of one
    // nobody changed meanwhile skips reading and hashing it.
    const byTarget = new Map(written.map((w) => [w.target, w.sha256]));
    for (const c of changes) {
      const sha = byTarget.get(c.abs);
      if (c.type === 'write' && sha !== undefined) this.diskCache.settle(c.abs, this.root, c.bytes, sha);
    }
    if (syncDirs) await this.disk.syncDirs(changes);
    const files = new Map<string, WrittenFile>();
    for (const w of written) if (w.file) files.set(w.target, w.file);
    return files;
  }

  /**
   * Creates `abs` (never overwriting) from what `fill` writes into a temp file beside it, journaled
   * like a commit: for content too large to hold in memory (restore_file of a large file). A loaded
   * buffer waiting for the file re-reads it.
   */
  async createStreamed(abs: string, sha256: string, fill: (tmp: string) => Promise<void>): Promise<void> {
    await this.disk.createStreamed(abs, sha256, fill);
    this.noteGiven(abs, sha256);
    if (this.bridge && (await this.bridge.status([abs], 'never')).has(abs)) await this.bridge.update([{ type: 'reload', abs }]);
  }
}

/**
 * Result fields of a write to `abs` once committed: with a bridge, `savedToDisk` (false when the
 * change went into an unsaved buffer, which then also gives the new sha256); nothing without one.
 */
export function savedFields(report: CommitReport, abs: string): { savedToDisk?: boolean; unsavedBuffer?: boolean; sha256?: string } {
  if (!report.bridged) return {};
  const b = report.buffered.get(abs);
  return b ? { savedToDisk: false, unsavedBuffer: true, sha256: b.sha256 } : { savedToDisk: true };
}
