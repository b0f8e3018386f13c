import { createHash, randomBytes, webcrypto } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { STALE_FILE_ACTION, ToolError, throwIfCancelled } from './errors';
import { decodeText, isBinary, type TextEncodingInfo } from './encoding';
import { lineHunksBytes, type LineHunk } from './buffer-hunks';
import { isUnder } from './paths';
import { CommitJournal, type JournalStep } from './commit-journal';
import { AnchorSet, AnchoredDir, anchoringSupported, lstatAnchored, readVerified, readdirVerified } from './anchored';

/**
 * The one module through which file content is viewed and written. Without a bridge it is the disk.
 * With a Neovim buffer bridge, a file loaded in a buffer with unsaved changes is viewed from, and
 * written into, that buffer (never to disk); disk writes keep clean loaded buffers in sync.
 */

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;

export function sha256Hex(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** sha256Hex computed on the thread pool (the calling thread stays free). */
export async function sha256HexAsync(bytes: Buffer): Promise<string> {
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', bytes)).toString('hex');
}

/** A file's current state as the agent sees it. */
export interface FileView {
  abs: string;
  kind: 'file' | 'missing' | 'directory' | 'other';
  /** Full bytes (null unless kind is 'file'). */
  bytes: Buffer | null;
  /** sha256 over the full bytes. */
  sha256: string | null;
  /** Permission bits (e.g. 0o644). */
  mode: number | null;
  size: number;
  /** 'buffer': the file is loaded in a Neovim buffer with unsaved changes and this is that buffer's text. */
  source: 'disk' | 'buffer';
  /** For a buffer view: sha256 of the file on disk (null when it does not exist on disk). */
  diskSha256?: string | null;
  /** The file is loaded in a buffer (clean or not): its b:changedtick when viewed. */
  changedtick?: number;
}

export interface TextView extends FileView {
  kind: 'file';
  bytes: Buffer;
  sha256: string;
  mode: number;
  text: string;
  encoding: TextEncodingInfo;
}

/** What the change was computed from; commit refuses it when a buffer changed in between. */
export interface ChangeBasis {
  source: 'disk' | 'buffer';
  /** changedtick of the buffer the change was computed from (buffer views). */
  changedtick?: number;
  /**
   * The disk sha256 seen with the view: with that buffer (buffer views, remembered for the next write's
   * gate), or the file itself (disk views). The commit proves the file it displaces still has it.
   */
  diskSha256?: string | null;
}

/** A change `commit` makes; several are committed all-or-nothing. */
export type FileChange =
  | {
      type: 'write';
      abs: string;
      bytes: Buffer;
      /** sha256 of `bytes` when the caller computes it anyway (not hashed again). */
      sha256?: string | Promise<string>;
      /** Permission bits for the written file (kept from the old file by callers). */
      mode?: number;
      /** Fail with already_exists instead of replacing an existing file. */
      createOnly?: boolean;
      /** The view this change was computed from (default: the disk). */
      basis?: ChangeBasis;
      /** The file moves here from this path (its buffer is renamed instead of wiped). */
      movedFrom?: string;
      /** Reload a clean loaded buffer with `:edit!` instead of updating it in place (restore_file). */
      reload?: boolean;
    }
  | {
      type: 'delete';
      abs: string;
      /** sha256 the deleted file had when the change was planned: the commit proves it still has it. */
      expectSha256?: string;
    };

/** How a loaded buffer writes its lines ('fileformat', 'eol'/'fixeol', 'bomb', 'fileencoding'). */
export interface BufferFormat {
  eol: '\n' | '\r\n' | '\r';
  /** A line break follows the last line ('eol', or 'fixeol' without 'binary'). */
  finalEol: boolean;
  bom: boolean;
  /** Normalised 'fileencoding' ('utf-8' when empty). */
  fileencoding: string;
}

/** A loaded buffer's state, read in one round trip. */
export interface BufferSnapshot {
  bufnr: number;
  modified: boolean;
  changedtick: number;
  format: BufferFormat;
  /** The bytes `:write` would produce (present for modified buffers, or when asked). */
  bytes?: Buffer;
  /** With a non-UTF-8 'fileencoding': the same text in UTF-8 (tools read and edit this; sha256 is over `bytes`). */
  utf8?: Buffer;
}

/** An update the bridge performs on the buffers after (or instead of) a disk commit. */
export type BufferOp =
  | {
      type: 'set';
      abs: string;
      /** The new buffer lines, each followed by "\n" ("" = no lines). May be decoded on first access. */
      readonly text: string;
      /** When the host knows the buffer's text at `changedtick`: only these line hunks are sent. */
      hunks?: LineHunk[];
      /** Refuse unless the buffer is still at this changedtick. */
      changedtick?: number;
      /** The disk now holds exactly this text: mark the buffer unmodified and store the file's time. */
      clean: boolean;
      finalEol?: boolean;
      bom?: boolean;
      /** A clean update: the file's size differs from the one Neovim stored when it last read it. */
      sizeChanged?: boolean;
      /** Return the bytes the buffer would now write (non-UTF-8 'fileencoding'). */
      returnBytes?: boolean;
    }
  | { type: 'reload'; abs: string }
  | { type: 'wipe'; abs: string }
  | { type: 'rename'; from: string; to: string };

export interface BufferOpResult {
  ok: boolean;
  /** A 'set' op: the buffer's changedtick afterwards. */
  changedtick?: number;
  reason?: string;
  message?: string;
  bytes?: Buffer;
}

/**
 * The live-buffer seam (issue 4); null/absent means disk only. One call = one round trip to Neovim.
 * - `status`: snapshots of the loaded buffers among `absPaths` (absent = not loaded); bytes for
 *   modified buffers when `withBytes` is 'modified'.
 * - `modified`: every loaded file buffer with unsaved changes, with bytes (grep/search_files).
 * - `update`: runs buffer operations in order; 'set' ops without `clean` are all checked against their
 *   changedtick before any runs.
 */
export interface BufferBridge {
  /** `have`: changedticks whose bytes the caller already holds; the bridge may leave their bytes out. */
  status(absPaths: string[], withBytes: 'modified' | 'never', have?: Map<string, number>): Promise<Map<string, BufferSnapshot>>;
  modified(): Promise<Map<string, BufferSnapshot>>;
  update(ops: BufferOp[]): Promise<BufferOpResult[]>;
}

export type UnsavedBuffersPolicy = 'edit_buffer' | 'refuse';

/** What a commit did besides writing the disk. */
export interface CommitReport {
  /** Files whose change went into an unsaved buffer only (not to disk): the sha256 that buffer now writes. */
  buffered: Map<string, { sha256: string }>;
  /** A bridge is attached (write results then say savedToDisk). */
  bridged: boolean;
}

/** Test hook: runs before each commit step; throwing simulates a failure mid-commit. */
export type CommitFaultHook = (step: { index: number; change: FileChange; phase: 'prepare' | 'commit' | 'renamed' }) => void;

/** What the write tools do to a file with more than one hard link: refuse, or write its content in place (keeping the link). */
export type HardLinkPolicy = 'refuse' | 'in_place';

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

type Step =
  | { kind: 'created'; target: string; bytes: Buffer }
  | { kind: 'replaced'; target: string; backup: string; bytes: Buffer; expect: string | null; inPlace?: boolean; checkedSize?: number }
  | { kind: 'deleted'; target: string; backup: string; expect: string | null; checkedSize?: number };

const MAX_REMEMBERED = 4096;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NEWLINE = Buffer.from('\n');

export function unsavedBufferError(rel: string, what: string): ToolError {
  return new ToolError('unsaved_buffer', `"${rel}" has unsaved changes in a Neovim buffer; ${what}.`, {
    path: rel,
    suggestedAction: `Ask the user to save or discard their changes to ${rel} first.`,
  });
}

/** The basis to put on a write computed from `v`. */
export function basisOf(v: FileView): ChangeBasis {
  return v.source === 'buffer' ? { source: 'buffer', changedtick: v.changedtick, diskSha256: v.diskSha256 ?? null } : { source: 'disk', diskSha256: v.sha256 };
}

export class FileAccess {
  readonly maxFileBytes: number;
  readonly unsavedBuffers: UnsavedBuffersPolicy;
  readonly allowReadonlyWrites: boolean;
  private readonly bridge: BufferBridge | null;
  private readonly root: string | null;
  /** `${abs}\0${bufferSha}` → the disk sha256 seen when the agent read that unsaved buffer. */
  private readonly seenDisk = new Map<string, string | null>();
  /** abs → the sha256s the agent was given for it this session (reads, write results): the stale gate tells them from made-up ones. */
  private readonly given = new Map<string, string[]>();
  /** Buffer lines (UTF-8, see bufferLines) and bytes when modified the host knows per file, valid for one changedtick and format. */
  private readonly known = new Map<string, { tick: number; fmt: string; lines?: Buffer; bytes?: Buffer; sha?: string }>();
  faultHook: CommitFaultHook | undefined;
  private readonly journalDir: string | null;
  readonly hardLinks: HardLinkPolicy;

  constructor(opts: FileAccessOptions = {}) {
    this.bridge = opts.bridge ?? null;
    this.root = opts.root ?? null;
    this.unsavedBuffers = opts.unsavedBuffers ?? 'edit_buffer';
    this.maxFileBytes = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.allowReadonlyWrites = opts.allowReadonlyWrites ?? false;
    this.faultHook = opts.faultHook;
    this.journalDir = opts.journalDir ?? null;
    this.hardLinks = opts.hardLinks ?? 'refuse';
  }

  private rel(abs: string): string {
    return this.root ? path.relative(this.root, abs).split(path.sep).join('/') : abs;
  }

  get hasBridge(): boolean {
    return this.bridge !== null;
  }

  /**
   * The current state of `abs`: the buffer's text when it is loaded with unsaved changes, else the disk.
   * `remember` (read tools) records the disk hash seen with a buffer view for the write gate.
   */
  async view(abs: string, opts: { remember?: boolean } = {}): Promise<FileView> {
    let loaded: BufferSnapshot | undefined;
    // The disk is read (and hashed) while Neovim answers: both views are needed for a loaded buffer.
    const diskP = diskView(abs, this.rel(abs), this.root);
    diskP.catch(() => undefined);
    if (this.bridge) {
      const k = this.known.get(abs);
      loaded = (await this.bridge.status([abs], 'modified', k?.bytes ? new Map([[abs, k.tick]]) : undefined)).get(abs);
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
        if (opts.remember) this.remember(abs, v.sha256!, v.diskSha256 ?? null);
        return v;
      }
    }
    const v = await diskP;
    if (loaded) v.changedtick = loaded.changedtick;
    if (opts.remember) this.noteGiven(abs, v.sha256);
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

  /**
   * A 'set' op putting `lines` (see bufferLines) into the buffer: only line hunks when the buffer's
   * lines at the checked changedtick are known. `text` is decoded only if something reads it.
   */
  private setOp(fields: Omit<BufferOp & { type: 'set' }, 'text' | 'hunks'>, lines: Buffer, s: BufferSnapshot): BufferOp & { type: 'set' } {
    const k = this.known.get(fields.abs);
    let hunks: LineHunk[] | undefined;
    // The lines depend on the changedtick only; bytes also on the format they were written with.
    if (k && k.tick === s.changedtick) {
      const bytesOk = k.bytes && k.fmt === fmtKey(s.format) && s.format.fileencoding === 'utf-8';
      const old = k.lines ?? (bytesOk ? bufferLines(k.bytes!, s.format).lines : undefined);
      if (old) hunks = lineHunksBytes(old, lines);
    }
    let text: string | undefined;
    const op = { ...fields, ...(hunks ? { hunks } : {}) } as BufferOp & { type: 'set' };
    Object.defineProperty(op, 'text', { enumerable: true, get: () => (text ??= lines.toString('utf8')) });
    return op;
  }

  /** Records the buffers' lines after 'set' ops (and forgets buffers that were wiped, renamed or reloaded). */
  private learn(ops: BufferOp[], results: BufferOpResult[], status: Map<string, BufferSnapshot>, opLines: Map<BufferOp, Buffer>): void {
    ops.forEach((op, i) => {
      const r = results[i];
      if (op.type === 'set') {
        const s = status.get(op.abs);
        const lines = opLines.get(op);
        if (!r?.ok || r.changedtick === undefined || !s || !lines) return void this.known.delete(op.abs);
        // A clean buffer is viewed from disk: only its lines are kept (for the next hunks).
        const entry: { tick: number; fmt: string; lines: Buffer; bytes?: Buffer } = { tick: r.changedtick, fmt: fmtKey(s.format), lines };
        if (!op.clean && s.format.fileencoding === 'utf-8') entry.bytes = r.bytes ?? linesToBytes(lines, s.format);
        this.known.set(op.abs, entry);
      } else if (op.type === 'rename') {
        this.known.delete(op.from);
        this.known.delete(op.to);
      } else this.known.delete(op.abs);
    });
  }

  /** Records that the agent was given `sha` for `abs` (a read, or a write's result). */
  noteGiven(abs: string, sha: string | null | undefined): void {
    if (!sha) return;
    const list = this.given.get(abs) ?? [];
    this.given.delete(abs);
    if (!list.includes(sha)) list.push(sha);
    if (list.length > 64) list.shift();
    this.given.set(abs, list);
    if (this.given.size > MAX_REMEMBERED) this.given.delete(this.given.keys().next().value!);
  }

  private wasGiven(abs: string, sha: string): boolean {
    return this.given.get(abs)?.includes(sha) ?? false;
  }

  private remember(abs: string, bufferSha: string, diskSha: string | null): void {
    this.noteGiven(abs, bufferSha);
    const key = `${abs}\0${bufferSha}`;
    this.seenDisk.delete(key);
    this.seenDisk.set(key, diskSha);
    if (this.seenDisk.size > MAX_REMEMBERED) this.seenDisk.delete(this.seenDisk.keys().next().value!);
  }

  /**
   * The stale gate: `expected` (what the agent last read) must still describe the file on both sides.
   * For an unsaved buffer, its text must hash to `expected` and the disk must be as it was when the
   * agent read that buffer. `""` asserts the path is absent. The message says which side changed.
   */
  assertFresh(view: FileView, expected: string | undefined, rel: string): void {
    // A FIFO, socket or device has no content to compare: say what it is rather than "changed".
    if (view.kind === 'other') throw notRegularFileError(view.abs, rel);
    if (expected === undefined) return;
    if (expected === '') {
      if (view.kind !== 'missing') {
        throw new ToolError('stale_file', `"${rel}" exists, but the expected sha256 "" asserts it does not.`, {
          path: rel,
          suggestedAction: STALE_FILE_ACTION,
        });
      }
      return;
    }
    const exp = expected.toLowerCase();
    const key = `${view.abs}\0${exp}`;
    const seen = this.seenDisk.has(key) ? this.seenDisk.get(key)! : undefined;
    let bufferChanged: boolean;
    let diskChanged: boolean;
    if (view.source === 'buffer') {
      bufferChanged = view.sha256 !== exp;
      // Read as an unsaved buffer: compare the disk with the disk seen then; read from disk: with that read.
      diskChanged = seen !== undefined ? (view.diskSha256 ?? null) !== seen : bufferChanged && view.diskSha256 !== exp;
    } else {
      if (view.sha256 === exp) return;
      if (view.kind === 'missing') {
        throw new ToolError('stale_file', `"${rel}" no longer exists.`, { path: rel, suggestedAction: STALE_FILE_ACTION });
      }
      // The agent read an unsaved buffer that was since saved or discarded, or it read the disk.
      bufferChanged = seen !== undefined;
      diskChanged = seen === undefined || view.sha256 !== seen;
    }
    if (!bufferChanged && !diskChanged) return;
    if (seen === undefined && !this.wasGiven(view.abs, exp)) {
      // Not a sha256 any read or write of this session returned for this file: made up, or taken from elsewhere.
      const read = this.given.has(view.abs);
      throw new ToolError(
        'stale_file',
        `"${rel}": the expected sha256 ${exp.slice(0, 12)}… is not one this file had since the agent read it (${read ? 'no read or write of this file returned it' : 'this file was not read in this session'}); it was not necessarily changed.`,
        {
          path: rel,
          suggestedAction: STALE_FILE_ACTION,
          details: { bufferChanged: false, diskChanged: false, unknownSha256: true },
        },
      );
    }
    const what = bufferChanged && diskChanged
      ? 'both the Neovim buffer (edited by the user) and the file on disk changed'
      : bufferChanged
        ? 'the Neovim buffer changed (the user edited it)'
        : 'the file on disk changed';
    throw new ToolError('stale_file', `"${rel}" changed since you read it: ${what} (sha256 mismatch).`, {
      path: rel,
      suggestedAction: STALE_FILE_ACTION,
      details: { bufferChanged, diskChanged },
    });
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
    const status = await this.bridge.status(paths, 'never');
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
        const op = this.setOp({ type: 'set', abs: c.abs, changedtick: s.changedtick, clean: false, returnBytes: s.format.fileencoding !== 'utf-8' }, dec.lines, s);
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
          const op = this.setOp({ type: 'set', abs: c.abs, changedtick: s.changedtick, clean: true, finalEol: dec.finalEol, bom: dec.bom, sizeChanged }, dec.lines, s);
          opLines.set(op, dec.lines);
          return op;
        });
      }
    }
    // Its cancel check also guards the buffer updates, which only follow the disk commit.
    const written = this.commitDisk(disk, false, signal);
    let ops: BufferOp[];
    try {
      ops = [...bufferSets.map((b) => b.op), ...after.map((a) => (typeof a === 'function' ? a() : a))];
    } finally {
      await written;
    }
    // The folders' fsync runs while Neovim updates the buffers; both end before the commit returns.
    const synced = this.syncDirs(disk);
    if (ops.length === 0) {
      await synced;
      return report;
    }
    let results: BufferOpResult[];
    try {
      results = await this.bridge.update(ops);
    } finally {
      await synced;
    }
    this.learn(ops, results, status, opLines);
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
      this.remember(change.abs, sha, change.basis?.diskSha256 ?? null);
    }
    return report;
  }

  /**
   * Writes and deletes on disk, all-or-nothing: every new content goes to a temp file in the target's
   * folder (fsynced) first; then the temps are renamed into place. A failure before the renames removes
   * the temps; a failure during them restores every file already replaced or deleted. An aborted
   * `signal` is the last failure before the renames (the commit point).
   */
  private async commitDisk(changes: FileChange[], syncDirs = true, signal?: AbortSignal): Promise<void> {
    if (changes.length === 0) {
      // Buffer-only commits have their commit point here too.
      throwIfCancelled(signal);
      return;
    }
    const temps = new Map<number, string>();
    const createdDirs: string[] = [];
    const steps: Step[] = [];
    const stats: (fs.Stats | null)[] = [];
    // Every name and step is fixed first: the journal lists them before anything is written.
    const plan: JournalStep[] = await Promise.all(
      changes.map(async (c, i): Promise<JournalStep> => {
        if (c.type === 'delete') {
          stats[i] = null;
          return { kind: 'delete', target: c.abs, backup: siblingName(c.abs, 'bak'), ...(c.expectSha256 ? { oldSha256: c.expectSha256 } : {}) };
        }
        const st = c.createOnly ? null : await statOrNull(c.abs);
        stats[i] = st;
        const kind = c.createOnly || !st ? 'create' : 'replace';
        const newSha256 = await (c.sha256 ?? sha256HexAsync(c.bytes));
        const inPlace = kind === 'replace' && st!.isFile() && st!.nlink > 1;
        if (inPlace && this.hardLinks === 'refuse') throw hardLinkError(this.rel(c.abs), st!.nlink);
        const oldSha256 = c.basis?.diskSha256 ?? undefined;
        return {
          kind,
          target: c.abs,
          newSha256,
          ...(oldSha256 ? { oldSha256 } : {}),
          ...(inPlace ? { inPlace: true } : { tmp: siblingName(c.abs, 'tmp') }),
          ...(kind === 'replace' ? { backup: siblingName(c.abs, 'bak') } : {}),
        };
      }),
    );
    const journal = this.journalDir ? await CommitJournal.begin(this.journalDir, plan, this.root) : null;
    // Every folder is opened once and verified (anchored.ts); all names below are reached through those
    // handles, so a folder swapped for a link by another process cannot redirect a step out of the root.
    const anchors = this.root !== null && anchoringSupported() ? new AnchorSet(this.root) : null;
    const at = (p: string): string => (anchors ? anchors.via(p) : p);
    try {
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i];
        this.faultHook?.({ index: i, change: c, phase: 'prepare' });
        if (c.type !== 'write' || plan[i].inPlace) {
          await anchors?.add(c.abs);
          continue;
        }
        const dir = path.dirname(c.abs);
        if (anchors) await anchors.add(c.abs, { create: true, created: createdDirs });
        else {
          const made = await fsp.mkdir(dir, { recursive: true });
          if (made) createdDirs.push(made);
        }
        await this.assertFolderUnchanged(dir, anchors, c.abs);
        // The owner and group stay the old file's (where this process may set them).
        await writeTemp(at(plan[i].tmp!), c.bytes, c.mode, stats[i] ?? undefined);
        temps.set(i, plan[i].tmp!);
      }
      throwIfCancelled(signal);
      await journal?.mark('pending');
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i];
        const p = plan[i];
        this.faultHook?.({ index: i, change: c, phase: 'commit' });
        await this.assertFolderUnchanged(path.dirname(c.abs), anchors, c.abs);
        if (p.kind === 'delete') {
          // The file is moved aside; the sha256 of what was moved is checked below.
          await fsp.rename(at(c.abs), at(p.backup!));
          steps.push({ kind: 'deleted', target: c.abs, backup: p.backup!, expect: p.oldSha256 ?? null });
        } else if (c.type !== 'write') {
          continue;
        } else if (p.kind === 'create') {
          await linkNoClobber(at(p.tmp!), at(c.abs), c.abs);
          temps.delete(i);
          await fsp.unlink(at(p.tmp!)).catch(() => undefined);
          steps.push({ kind: 'created', target: c.abs, bytes: c.bytes });
        } else if (p.inPlace) {
          // More than one hard link: a copy of the old bytes, then the new bytes written into the same inode.
          await fsp.copyFile(at(c.abs), at(p.backup!), fs.constants.COPYFILE_EXCL);
          steps.push({ kind: 'replaced', target: c.abs, backup: p.backup!, bytes: c.bytes, expect: p.oldSha256 ?? null, inPlace: true });
          await verifyDisplaced(steps[steps.length - 1], this.rel(c.abs), at);
          await writeInPlace(at(c.abs), c.bytes);
        } else {
          // The backup is a second name of the file about to be displaced (a copy where links fail):
          // whatever another program writes to it until the rename is in what is hashed below.
          await backupCopy(at(c.abs), at(p.backup!));
          await fsp.rename(at(p.tmp!), at(c.abs));
          temps.delete(i);
          steps.push({ kind: 'replaced', target: c.abs, backup: p.backup!, bytes: c.bytes, expect: p.oldSha256 ?? null });
        }
        this.faultHook?.({ index: i, change: c, phase: 'renamed' });
      }
      // What each rename displaced must be what the change was computed from: another program's write
      // in between would otherwise be lost. On a mismatch, everything is put back (their version kept).
      for (const s of steps) if (!(s.kind === 'replaced' && s.inPlace)) await verifyDisplaced(s, this.rel(s.target), at);
      await journal?.mark('done');
    } catch (err) {
      await rollback(steps, at);
      for (const t of temps.values()) await fsp.unlink(at(t)).catch(() => undefined);
      await anchors?.close();
      for (const d of createdDirs.reverse()) await removeTreeIfEmpty(d, this.root);
      await journal?.end();
      throw err;
    }
    for (const s of steps) await releaseBackup(s, at).catch(() => undefined);
    await anchors?.close();
    await journal?.end();
    // The write results give these sha256s to the agent.
    for (const p of plan) if (p.newSha256) this.noteGiven(p.target, p.newSha256);
    if (syncDirs) await this.syncDirs(changes);
  }

  /**
   * Creates `abs` (never overwriting) from what `fill` writes into a temp file beside it, journaled
   * like a commit: for content too large to hold in memory (restore_file of a large file). A loaded
   * buffer waiting for the file re-reads it.
   */
  async createStreamed(abs: string, sha256: string, fill: (tmp: string) => Promise<void>): Promise<void> {
    const tmp = siblingName(abs, 'tmp');
    const journal = this.journalDir ? await CommitJournal.begin(this.journalDir, [{ kind: 'create', target: abs, tmp, newSha256: sha256 }], this.root) : null;
    // Through verified folder handles, as commitDisk (anchored.ts).
    const anchors = this.root !== null && anchoringSupported() ? new AnchorSet(this.root) : null;
    const at = (p: string): string => (anchors ? anchors.via(p) : p);
    const created: string[] = [];
    try {
      if (anchors) await anchors.add(abs, { create: true, created });
      else await fsp.mkdir(path.dirname(abs), { recursive: true });
      await this.assertFolderUnchanged(path.dirname(abs), anchors, abs);
      await fill(at(tmp));
      await journal?.mark('pending');
      await linkNoClobber(at(tmp), at(abs), abs);
      await journal?.mark('done');
    } finally {
      await fsp.unlink(at(tmp)).catch(() => undefined);
      await anchors?.close();
      await journal?.end();
    }
    await fsyncDir(path.dirname(abs));
    this.noteGiven(abs, sha256);
    if (this.bridge && (await this.bridge.status([abs], 'never')).has(abs)) await this.bridge.update([{ type: 'reload', abs }]);
  }

  /**
   * A change's folder is still the real folder it was planned for: a symlink swapped into its path since
   * (by another process) would redirect the write, possibly out of the workspace.
   */
  private async assertFolderUnchanged(dir: string, anchors: AnchorSet | null, abs: string): Promise<void> {
    if (!this.root) return;
    if (anchors) return anchors.assertDirInPlace(abs);
    const real = await fsp.realpath(dir).catch(() => null);
    if (real === null || real === dir) return;
    const rel = this.rel(dir) || '.';
    if (!isUnder(this.root, real)) {
      throw new ToolError('outside_workspace', `The folder "${rel}" was replaced by a link to ${real}, outside the workspace, during the write; nothing was written.`, {
        path: rel,
      });
    }
    throw new ToolError('stale_file', `The folder "${rel}" was replaced by a link during the write; nothing was written.`, { path: rel, suggestedAction: STALE_FILE_ACTION });
  }

  /** fsyncs the folders of the changed files (the renames' durability). */
  private async syncDirs(changes: FileChange[]): Promise<void> {
    const dirs = new Set(changes.map((c) => path.dirname(c.abs)));
    for (const d of dirs) await fsyncDir(d);
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

function fmtKey(f: BufferFormat): string {
  return `${f.eol}|${f.finalEol}|${f.bom}|${f.fileencoding}`;
}

/** The file on disk, ignoring buffers. A file that cannot be read (EACCES, or no read bit at all) is permission_denied. */
async function diskView(abs: string, rel: string, root: string | null): Promise<FileView> {
  // Read through a handle verified to be at `abs` (anchored.ts): a link swapped into the path cannot redirect it.
  if (root !== null && anchoringSupported() && isUnder(root, abs)) return diskViewVerified(abs, rel, root);
  try {
    const st = await statOrNull(abs);
    if (!st) return { abs, kind: 'missing', bytes: null, sha256: null, mode: null, size: 0, source: 'disk' };
    if (st.isDirectory()) return { abs, kind: 'directory', bytes: null, sha256: null, mode: st.mode & 0o7777, size: 0, source: 'disk' };
    if (!st.isFile()) return { abs, kind: 'other', bytes: null, sha256: null, mode: st.mode & 0o7777, size: st.size, source: 'disk' };
    // Root could read it anyway: the mode says nobody should.
    if ((st.mode & 0o444) === 0) throw unreadableError(rel);
    const bytes = await fsp.readFile(abs);
    return { abs, kind: 'file', bytes, sha256: sha256Hex(bytes), mode: st.mode & 0o7777, size: bytes.length, source: 'disk' };
  } catch (err) {
    throw isPermissionError(err) ? unreadableError(rel) : err;
  }
}

async function diskViewVerified(abs: string, rel: string, root: string): Promise<FileView> {
  try {
    const r = await readVerified(root, abs, (st) => {
      // Root could read it anyway: the mode says nobody should.
      if ((st.mode & 0o444) === 0) throw unreadableError(rel);
    });
    if (!r) return { abs, kind: 'missing', bytes: null, sha256: null, mode: null, size: 0, source: 'disk' };
    const mode = r.stat.mode & 0o7777;
    if (r.kind === 'directory') return { abs, kind: 'directory', bytes: null, sha256: null, mode, size: 0, source: 'disk' };
    if (r.kind === 'other') return { abs, kind: 'other', bytes: null, sha256: null, mode, size: r.stat.size, source: 'disk' };
    return { abs, kind: 'file', bytes: r.bytes, sha256: sha256Hex(r.bytes), mode, size: r.bytes.length, source: 'disk' };
  } catch (err) {
    throw isPermissionError(err) ? unreadableError(rel) : err;
  }
}

function isPermissionError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EACCES' || code === 'EPERM';
}

function unreadableError(rel: string): ToolError {
  return new ToolError('permission_denied', `"${rel}" cannot be read: permission denied.`, {
    path: rel,
    suggestedAction: `Leave it alone, or ask the user to make it readable (chmod u+r ${rel}).`,
  });
}

/** A path that is a FIFO, socket or device: never opened (a FIFO would block), refused by every file tool. */
export function notRegularFileError(abs: string, rel: string): ToolError {
  let what = 'not a regular file';
  try {
    const st = fs.statSync(abs);
    if (st.isFIFO()) what = 'a FIFO (named pipe), not a regular file';
    else if (st.isSocket()) what = 'a socket, not a regular file';
    else if (st.isCharacterDevice() || st.isBlockDevice()) what = 'a device, not a regular file';
  } catch {
    // gone meanwhile: the generic words
  }
  return new ToolError('permission_denied', `"${rel}" is ${what}; the file tools only read and change regular files.`, {
    path: rel,
    suggestedAction: 'Leave it alone; use bash if it really must be read or written.',
  });
}

function readonlyError(rel: string, why: string): ToolError {
  return new ToolError('permission_denied', `"${rel}" is read-only (${why}); read-only files are not changed.`, {
    path: rel,
    suggestedAction: `Leave it unchanged, or ask the user to make it writable (chmod u+w ${rel}) or to set allow_readonly_writes = true.`,
  });
}


function bufferChangedError(rel: string): ToolError {
  return new ToolError('stale_file', `"${rel}" changed since you read it: the Neovim buffer changed (the user edited, saved or discarded it).`, {
    path: rel,
    suggestedAction: STALE_FILE_ACTION,
    details: { bufferChanged: true, diskChanged: false },
  });
}

/**
 * File bytes → the buffer's lines (as text, each line followed by "\n"): the BOM goes, lines split at
 * the buffer's line break, the final line break dropped. The inverse of what the buffer writes.
 */
export function bytesToBufferText(bytes: Buffer, fmt: BufferFormat): { text: string; finalEol: boolean; bom: boolean } {
  const bom = bytes.length >= 3 && bytes.subarray(0, 3).equals(UTF8_BOM);
  let s = (bom ? bytes.subarray(3) : bytes).toString('utf8');
  if (s.length === 0) return { text: '', finalEol: fmt.finalEol, bom };
  const finalEol = s.endsWith(fmt.eol);
  if (finalEol) s = s.slice(0, -fmt.eol.length);
  if (fmt.eol !== '\n') s = s.split(fmt.eol).join('\n');
  return { text: s + '\n', finalEol, bom };
}

/**
 * bytesToBufferText as UTF-8 bytes, without decoding: for "\n" buffers a view of `bytes` (a copy only
 * when a final line break has to be added).
 */
export function bufferLines(bytes: Buffer, fmt: BufferFormat): { lines: Buffer; finalEol: boolean; bom: boolean } {
  if (fmt.eol !== '\n') {
    const dec = bytesToBufferText(bytes, fmt);
    return { lines: Buffer.from(dec.text, 'utf8'), finalEol: dec.finalEol, bom: dec.bom };
  }
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  const body = bom ? bytes.subarray(3) : bytes;
  if (body.length === 0) return { lines: body, finalEol: fmt.finalEol, bom };
  const finalEol = body[body.length - 1] === 0x0a;
  return { lines: finalEol ? body : Buffer.concat([body, NEWLINE]), finalEol, bom };
}

/** bufferTextToBytes for lines given as UTF-8 bytes (a view of `lines` when possible). */
export function linesToBytes(lines: Buffer, fmt: BufferFormat): Buffer {
  if (lines.length === 0) return Buffer.alloc(0);
  if (fmt.eol !== '\n') return bufferTextToBytes(lines.toString('utf8'), fmt);
  const body = fmt.finalEol ? lines : lines.subarray(0, lines.length - 1);
  return fmt.bom ? Buffer.concat([UTF8_BOM, body]) : body;
}

/** The bytes a UTF-8 buffer with these lines (see bytesToBufferText) writes. */
export function bufferTextToBytes(text: string, fmt: BufferFormat): Buffer {
  if (text.length === 0) return Buffer.alloc(0);
  let body = text.slice(0, -1);
  if (fmt.eol !== '\n') body = body.split('\n').join(fmt.eol);
  if (fmt.finalEol) body += fmt.eol;
  const b = Buffer.from(body, 'utf8');
  return fmt.bom ? Buffer.concat([UTF8_BOM, b]) : b;
}

export function toTextView(v: FileView, rel: string, maxFileBytes = Infinity): TextView {
  assertTextFile(v, rel, maxFileBytes);
  const { text, encoding } = decodeText(v.bytes!);
  return { ...(v as FileView & { kind: 'file'; bytes: Buffer; sha256: string; mode: number }), text, encoding };
}

/** The checks of toTextView without decoding: not_found, is_directory, file_too_large, binary_file. */
export function assertTextFile(v: FileView, rel: string, maxFileBytes: number): void {
  if (v.kind === 'missing') {
    throw new ToolError('not_found', `"${rel}" does not exist.`, { path: rel, suggestedAction: 'Check the path with list_directory or glob.' });
  }
  if (v.kind === 'directory') {
    throw new ToolError('is_directory', `"${rel}" is a directory.`, { path: rel, suggestedAction: 'Use list_directory to see its entries.' });
  }
  if (v.kind !== 'file' || !v.bytes) {
    throw new ToolError('permission_denied', `"${rel}" is not a regular file.`, { path: rel });
  }
  if (v.bytes.length > maxFileBytes) {
    throw new ToolError('file_too_large', `"${rel}" is ${v.bytes.length} bytes; the limit is ${maxFileBytes}.`, {
      path: rel,
      suggestedAction: 'Use grep or search_files to find the part you need.',
    });
  }
  if (isBinary(v.bytes)) {
    throw new ToolError('binary_file', `"${rel}" is a binary file.`, { path: rel, suggestedAction: 'Only text files can be read or edited.' });
  }
}

async function statOrNull(p: string): Promise<fs.Stats | null> {
  try {
    return await fsp.stat(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
}

function siblingName(target: string, kind: 'tmp' | 'bak'): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.caboose-${randomBytes(6).toString('hex')}.${kind}`);
}

async function writeTemp(tmp: string, bytes: Buffer, mode: number | undefined, owner?: { uid: number; gid: number }): Promise<void> {
  const fh = await fsp.open(tmp, 'wx', mode ?? 0o666);
  try {
    await fh.writeFile(bytes);
    // Root (or a member of the group) can keep the old owner and group; others keep what they may.
    if (owner && (owner.uid !== process.getuid?.() || owner.gid !== process.getgid?.())) {
      await fh.chown(owner.uid, owner.gid).catch(() => fh.chown(-1, owner.gid).catch(() => undefined));
    }
    if (mode !== undefined) await fh.chmod(mode);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fh.close();
}

/** Puts `tmp` at `target` only if nothing is there (link fails with EEXIST), so nothing is overwritten. */
async function linkNoClobber(tmp: string, target: string, shown = target): Promise<void> {
  try {
    await fsp.link(tmp, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new ToolError('already_exists', `"${shown}" already exists.`, { path: shown });
    }
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV' && code !== 'EOPNOTSUPP') throw err;
    // Filesystems without hard links: check, then rename (the workspace lock covers our own writers).
    if (await statOrNull(target)) throw new ToolError('already_exists', `"${shown}" already exists.`, { path: shown });
    await fsp.rename(tmp, target);
  }
}

async function backupCopy(target: string, backup: string): Promise<void> {
  try {
    await fsp.link(target, backup);
  } catch {
    await fsp.copyFile(target, backup, fs.constants.COPYFILE_EXCL);
  }
}

/** The sha256 of a file, read in chunks. */
export async function sha256File(p: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(p, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return h.digest('hex');
}

function hardLinkError(rel: string, links: number): ToolError {
  return new ToolError(
    'permission_denied',
    `"${rel}" has ${links} hard links; replacing it would split them (the other names would keep the old text), so it is not changed.`,
    {
      path: rel,
      suggestedAction: `Leave it unchanged, or ask the user to set hard_links = "in_place" (the file is then written in place, keeping every link).`,
      details: { hardLinks: links },
    },
  );
}

function concurrentWriteError(rel: string): ToolError {
  return new ToolError(
    'stale_file',
    `"${rel}" changed since you read it: another program wrote to the file on disk while this change was being committed. Nothing was changed; its version was kept.`,
    { path: rel, suggestedAction: STALE_FILE_ACTION, details: { bufferChanged: false, diskChanged: true, concurrentWrite: true } },
  );
}

/** The file a step moved aside (its backup) still has the sha256 its change was computed from. */
async function verifyDisplaced(s: Step, rel: string, at: (p: string) => string = (p) => p): Promise<void> {
  if (s.kind === 'created' || !s.expect) return;
  const h = createHash('sha256');
  let size = 0;
  for await (const chunk of fs.createReadStream(at(s.backup), { highWaterMark: 1 << 20 })) {
    h.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  if (h.digest('hex') !== s.expect) throw concurrentWriteError(rel);
  s.checkedSize = size;
}

/**
 * Before a displaced file (a backup) goes: bytes another program appended to it after it was checked
 * (through a descriptor it opened before the rename) are appended at its path, not lost.
 */
async function releaseBackup(s: Step, at: (p: string) => string = (p) => p): Promise<void> {
  if (s.kind === 'created') return;
  const fh = s.checkedSize === undefined ? null : await fsp.open(at(s.backup), 'r').catch(() => null);
  let size = s.checkedSize ?? 0;
  if (fh) size = await appendGrowth(fh, size, at(s.target)).catch(() => size);
  await fsp.unlink(at(s.backup)).catch(() => undefined);
  if (fh) keepWatching(fh, size, s.target);
}

/** Appends to `target` what `fh`'s file holds beyond `from`; returns its size. */
async function appendGrowth(fh: fsp.FileHandle, from: number, target: string): Promise<number> {
  const { size } = await fh.stat();
  if (size <= from) return from;
  const extra = Buffer.alloc(size - from);
  await fh.read(extra, 0, extra.length, from);
  await fsp.appendFile(target, extra);
  return size;
}

/** How long a displaced file is still watched for a write already under way (opened before the rename). */
const LATE_WRITE_GRACE_MS = 25;

/**
 * A writer that opened the file before it was displaced may still be writing (its open and its write
 * are apart by microseconds): a moment later, what it added is appended at the path too. Then `fh` closes.
 */
function keepWatching(fh: fsp.FileHandle, from: number, target: string): void {
  const t = setTimeout(() => {
    void appendGrowth(fh, from, target)
      .catch(() => undefined)
      .finally(() => fh.close().catch(() => undefined));
  }, LATE_WRITE_GRACE_MS);
  t.unref();
}

/** Writes `bytes` into the existing inode of `abs` (its hard links keep seeing it). */
async function writeInPlace(abs: string, bytes: Buffer): Promise<void> {
  const fh = await fsp.open(abs, 'r+');
  try {
    await fh.write(bytes, 0, bytes.length, 0);
    await fh.truncate(bytes.length);
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Puts a replaced file's old version (its backup) back. What another program appended to the new
 * version in the meantime is appended to the old one; a full rewrite of it by another program is kept.
 */
async function putBack(target: string, backup: string, ours: Buffer): Promise<void> {
  const fh = await fsp.open(target, 'r').catch(() => null);
  await fsp.rename(backup, target);
  if (!fh) return;
  let now: Buffer;
  try {
    now = await fh.readFile();
  } catch (err) {
    await fh.close();
    throw err;
  }
  keepWatching(fh, now.length, target);
  if (now.length > ours.length && now.subarray(0, ours.length).equals(ours)) await fsp.appendFile(target, now.subarray(ours.length));
  else if (!now.equals(ours)) await fsp.writeFile(target, now);
}

async function rollback(steps: Step[], at: (p: string) => string = (p) => p): Promise<void> {
  for (const s of [...steps].reverse()) {
    try {
      if (s.kind === 'created') {
        const now = await fsp.readFile(at(s.target)).catch(() => null);
        // Another program that appended to the new file keeps what it wrote.
        if (!now || now.equals(s.bytes)) await fsp.unlink(at(s.target));
        else if (now.length > s.bytes.length && now.subarray(0, s.bytes.length).equals(s.bytes)) await fsp.writeFile(at(s.target), now.subarray(s.bytes.length));
      } else if (s.kind === 'replaced' && s.inPlace) {
        await writeInPlace(at(s.target), await fsp.readFile(at(s.backup)));
        await fsp.unlink(at(s.backup));
      } else if (s.kind === 'replaced') {
        await putBack(at(s.target), at(s.backup), s.bytes);
      } else {
        // A deleted file comes back; what another program wrote to a new file at its path meanwhile is
        // appended after it (read through a descriptor held across the rename: nothing written in between is lost).
        try {
          await fsp.link(at(s.backup), at(s.target));
          await fsp.unlink(at(s.backup));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
            await fsp.rename(at(s.backup), at(s.target));
            continue;
          }
          const fh = await fsp.open(at(s.target), 'r');
          try {
            await fsp.rename(at(s.backup), at(s.target));
            const theirs = await fh.readFile();
            await fsp.appendFile(at(s.target), theirs);
            keepWatching(fh, theirs.length, s.target);
          } catch (err) {
            await fh.close();
            throw err;
          }
        }
      }
    } catch {
      // best effort: keep restoring the others
    }
  }
}

/** With `root` (anchored.ts): listed and removed through verified folders, never through a swapped link. */
async function removeTreeIfEmpty(dir: string, root: string | null = null): Promise<boolean> {
  const anchored = root !== null && anchoringSupported() && isUnder(root, dir) && dir !== root;
  let entries: fs.Dirent[];
  try {
    entries = anchored ? await readdirVerified(root, dir) : await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return true;
  }
  for (const e of entries) {
    if (!e.isDirectory()) return false;
    if (!(await removeTreeIfEmpty(path.join(dir, e.name), root))) return false;
  }
  if (!anchored) {
    await fsp.rmdir(dir).catch(() => undefined);
    return true;
  }
  const parent = await AnchoredDir.open(root, path.dirname(dir)).catch(() => null);
  if (parent) {
    await fsp.rmdir(parent.at(path.basename(dir))).catch(() => undefined);
    await parent.close();
  }
  return true;
}

async function fsyncDir(dir: string): Promise<void> {
  try {
    const fh = await fsp.open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // some platforms cannot fsync a directory
  }
}
