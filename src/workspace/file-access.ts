import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../tools/errors';
import { decodeText, isBinary, type TextEncodingInfo } from './encoding';

/**
 * The one module through which file content is viewed and written.
 * Today it reads and writes the disk; issue 4 plugs a Neovim buffer bridge in here so that a file
 * loaded in a modified buffer is viewed from, and written into, that buffer.
 */

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;

export function sha256Hex(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
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
  source: 'disk' | 'buffer';
}

export interface TextView extends FileView {
  kind: 'file';
  bytes: Buffer;
  sha256: string;
  mode: number;
  text: string;
  encoding: TextEncodingInfo;
}

/** A change `commit` makes; several are committed all-or-nothing. */
export type FileChange =
  | {
      type: 'write';
      abs: string;
      bytes: Buffer;
      /** Permission bits for the written file (kept from the old file by callers). */
      mode?: number;
      /** Fail with already_exists instead of replacing an existing file. */
      createOnly?: boolean;
    }
  | { type: 'delete'; abs: string };

/** What a buffer holds for a file that is loaded with unsaved changes. */
export interface BufferSnapshot {
  bytes: Buffer;
}

/**
 * Seam for issue 4 (live Neovim buffers). Null/absent means disk only.
 * - `snapshot`: the buffer's content when the file is loaded in a buffer with unsaved changes, else null.
 * - `apply`: called after a successful disk commit with the changes for files the bridge reported as
 *   loaded; it updates the buffers (reload or write into them).
 */
export interface BufferBridge {
  snapshot(absPath: string): Promise<BufferSnapshot | null>;
  apply(changes: FileChange[]): Promise<void>;
}

/** Test hook: runs before each commit step; throwing simulates a failure mid-commit. */
export type CommitFaultHook = (step: { index: number; change: FileChange; phase: 'prepare' | 'commit' }) => void;

export interface FileAccessOptions {
  bridge?: BufferBridge | null;
  maxFileBytes?: number;
  faultHook?: CommitFaultHook;
}

type Step =
  | { kind: 'created'; target: string }
  | { kind: 'replaced'; target: string; backup: string }
  | { kind: 'deleted'; target: string; backup: string };

export class FileAccess {
  readonly maxFileBytes: number;
  private readonly bridge: BufferBridge | null;
  faultHook: CommitFaultHook | undefined;

  constructor(opts: FileAccessOptions = {}) {
    this.bridge = opts.bridge ?? null;
    this.maxFileBytes = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    this.faultHook = opts.faultHook;
  }

  /** The current state of `abs` (buffer first when a bridge says it holds unsaved changes). */
  async view(abs: string): Promise<FileView> {
    if (this.bridge) {
      const snap = await this.bridge.snapshot(abs);
      if (snap) {
        const st = await statOrNull(abs);
        return {
          abs,
          kind: 'file',
          bytes: snap.bytes,
          sha256: sha256Hex(snap.bytes),
          mode: st ? st.mode & 0o7777 : 0o644,
          size: snap.bytes.length,
          source: 'buffer',
        };
      }
    }
    const st = await statOrNull(abs);
    if (!st) return { abs, kind: 'missing', bytes: null, sha256: null, mode: null, size: 0, source: 'disk' };
    if (st.isDirectory()) return { abs, kind: 'directory', bytes: null, sha256: null, mode: st.mode & 0o7777, size: 0, source: 'disk' };
    if (!st.isFile()) return { abs, kind: 'other', bytes: null, sha256: null, mode: st.mode & 0o7777, size: st.size, source: 'disk' };
    const bytes = await fsp.readFile(abs);
    return { abs, kind: 'file', bytes, sha256: sha256Hex(bytes), mode: st.mode & 0o7777, size: bytes.length, source: 'disk' };
  }

  /** Size check before reading (file_too_large) for callers that will show the content. */
  async assertReadable(abs: string, rel: string): Promise<void> {
    const st = await statOrNull(abs);
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
  async viewChecked(abs: string, rel: string): Promise<FileView & { kind: 'file'; bytes: Buffer; sha256: string; mode: number }> {
    await this.assertReadable(abs, rel);
    const v = await this.view(abs);
    assertTextFile(v, rel, this.maxFileBytes);
    return v as FileView & { kind: 'file'; bytes: Buffer; sha256: string; mode: number };
  }

  /**
   * Writes and deletes several files all-or-nothing: every new content goes to a temp file in the
   * target's folder (fsynced) first; then the temps are renamed into place. A failure before the renames
   * removes the temps; a failure during them restores every file already replaced or deleted.
   */
  async commit(changes: FileChange[]): Promise<void> {
    const temps = new Map<number, string>();
    const createdDirs: string[] = [];
    const steps: Step[] = [];
    try {
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i];
        this.faultHook?.({ index: i, change: c, phase: 'prepare' });
        if (c.type !== 'write') continue;
        const dir = path.dirname(c.abs);
        const made = await fsp.mkdir(dir, { recursive: true });
        if (made) createdDirs.push(made);
        temps.set(i, await writeTemp(dir, path.basename(c.abs), c.bytes, c.mode));
      }
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i];
        this.faultHook?.({ index: i, change: c, phase: 'commit' });
        if (c.type === 'delete') {
          const backup = siblingName(c.abs, 'bak');
          await fsp.rename(c.abs, backup);
          steps.push({ kind: 'deleted', target: c.abs, backup });
          continue;
        }
        const tmp = temps.get(i)!;
        const exists = await statOrNull(c.abs);
        if (c.createOnly || !exists) {
          await linkNoClobber(tmp, c.abs);
          temps.delete(i);
          await fsp.unlink(tmp).catch(() => undefined);
          steps.push({ kind: 'created', target: c.abs });
        } else {
          const backup = siblingName(c.abs, 'bak');
          await backupCopy(c.abs, backup);
          await fsp.rename(tmp, c.abs);
          temps.delete(i);
          steps.push({ kind: 'replaced', target: c.abs, backup });
        }
      }
    } catch (err) {
      await rollback(steps);
      for (const t of temps.values()) await fsp.unlink(t).catch(() => undefined);
      for (const d of createdDirs.reverse()) await removeTreeIfEmpty(d);
      throw err;
    }
    for (const s of steps) if (s.kind !== 'created') await fsp.unlink(s.backup).catch(() => undefined);
    const dirs = new Set(changes.map((c) => path.dirname(c.abs)));
    for (const d of dirs) await fsyncDir(d);
    if (this.bridge) await this.bridge.apply(changes);
  }
}

export function toTextView(v: FileView, rel: string, maxFileBytes = Infinity): TextView {
  assertTextFile(v, rel, maxFileBytes);
  const { text, encoding } = decodeText(v.bytes!);
  return { ...(v as FileView & { kind: 'file'; bytes: Buffer; sha256: string; mode: number }), text, encoding };
}

function assertTextFile(v: FileView, rel: string, maxFileBytes: number): void {
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

async function writeTemp(dir: string, base: string, bytes: Buffer, mode: number | undefined): Promise<string> {
  const tmp = path.join(dir, `.${base}.caboose-${randomBytes(6).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, 'wx', mode ?? 0o666);
  try {
    await fh.writeFile(bytes);
    if (mode !== undefined) await fh.chmod(mode);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await fsp.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await fh.close();
  return tmp;
}

/** Puts `tmp` at `target` only if nothing is there (link fails with EEXIST), so nothing is overwritten. */
async function linkNoClobber(tmp: string, target: string): Promise<void> {
  try {
    await fsp.link(tmp, target);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new ToolError('already_exists', `"${target}" already exists.`, { path: target });
    }
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV' && code !== 'EOPNOTSUPP') throw err;
    // Filesystems without hard links: check, then rename (the workspace lock covers our own writers).
    if (await statOrNull(target)) throw new ToolError('already_exists', `"${target}" already exists.`, { path: target });
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

async function rollback(steps: Step[]): Promise<void> {
  for (const s of [...steps].reverse()) {
    try {
      if (s.kind === 'created') await fsp.unlink(s.target);
      else await fsp.rename(s.backup, s.target);
    } catch {
      // best effort: keep restoring the others
    }
  }
}

async function removeTreeIfEmpty(dir: string): Promise<boolean> {
  let entries: fs.Dirent[];
  try {
    entries = await fsp.readdir(dir, { withFileTypes: true });
  } catch {
    return true;
  }
  for (const e of entries) {
    if (!e.isDirectory()) return false;
    if (!(await removeTreeIfEmpty(path.join(dir, e.name)))) return false;
  }
  await fsp.rmdir(dir).catch(() => undefined);
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
