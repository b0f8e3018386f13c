/**
 * A file as the agent sees it: a view of the disk (read through a verified handle, anchored.ts) or of an
 * unsaved buffer (built in file-access.ts), the basis a change records, and the text checks the read
 * and edit tools share.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { ToolError } from './errors';
import { decodeText, isBinary, type TextEncodingInfo } from './encoding';
import { isUnder } from './paths';
import { anchoringSupported, openVerified, readVerified } from './anchored';
import { sha256Hex } from './file-sha';
import { identityOf, sameIdentity, wallNs, type DiskCache } from './disk-cache';
import { isPermissionError, unreadableError } from './file-errors';

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
  /** A disk view's bytes (they hash to diskSha256): the commit compares what it displaces with them. */
  diskBytes?: Buffer;
}

/** The basis to put on a write computed from `v`. */
export function basisOf(v: FileView): ChangeBasis {
  if (v.source === 'buffer') return { source: 'buffer', changedtick: v.changedtick, diskSha256: v.diskSha256 ?? null };
  return { source: 'disk', diskSha256: v.sha256, ...(v.bytes ? { diskBytes: v.bytes } : {}) };
}

/** The file on disk, ignoring buffers. A file that cannot be read (EACCES, or no read bit at all) is permission_denied. */
export async function diskView(abs: string, rel: string, root: string | null, cache?: DiskCache, expectSha?: string): Promise<FileView> {
  // Read through a handle verified to be at `abs` (anchored.ts): a link swapped into the path cannot redirect it.
  if (root !== null && anchoringSupported() && isUnder(root, abs)) return cache ? diskViewCached(abs, rel, root, cache, expectSha) : diskViewVerified(abs, rel, root);
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

/**
 * diskViewVerified with the disk cache (disk-cache.ts): for a write computed against `expectSha`, a file
 * whose identity (device, inode, size, mtime, ctime) is the one of an entry holding that sha256 is not
 * read again; a file read is offered to the cache (kept when that identity proves the content: seen the
 * same before and after the read, and not racy).
 */
async function diskViewCached(abs: string, rel: string, root: string, cache: DiskCache, expectSha: string | undefined): Promise<FileView> {
  let fh: fsp.FileHandle;
  try {
    fh = await openVerified(root, abs, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { abs, kind: 'missing', bytes: null, sha256: null, mode: null, size: 0, source: 'disk' };
    throw isPermissionError(err) ? unreadableError(rel) : err;
  }
  try {
    const captured = wallNs();
    const st = await fh.stat({ bigint: true });
    const mode = Number(st.mode) & 0o7777;
    if (st.isDirectory()) return { abs, kind: 'directory', bytes: null, sha256: null, mode, size: 0, source: 'disk' };
    if (!st.isFile()) return { abs, kind: 'other', bytes: null, sha256: null, mode, size: Number(st.size), source: 'disk' };
    // Root could read it anyway: the mode says nobody should.
    if ((mode & 0o444) === 0) throw unreadableError(rel);
    const id = identityOf(st);
    const hit = expectSha === undefined ? null : cache.lookup(abs, id, expectSha);
    if (hit) return { abs, kind: 'file', bytes: hit.bytes, sha256: hit.sha256, mode, size: hit.bytes.length, source: 'disk' };
    const bytes = await fh.readFile();
    const sha256 = sha256Hex(bytes);
    const after = identityOf(await fh.stat({ bigint: true }));
    if (sameIdentity(id, after)) await cache.offer(abs, id, captured, bytes, sha256);
    return { abs, kind: 'file', bytes, sha256, mode, size: bytes.length, source: 'disk' };
  } catch (err) {
    throw isPermissionError(err) ? unreadableError(rel) : err;
  } finally {
    await fh.close().catch(() => undefined);
  }
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

/** stat, or null when nothing is at `p`. */
export async function statOrNull(p: string): Promise<fs.Stats | null> {
  try {
    return await fsp.stat(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
}
