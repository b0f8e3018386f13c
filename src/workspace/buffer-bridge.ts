/**
 * The seam to Neovim's loaded buffers (issue 4): what the bridge reports of a buffer and what it is asked
 * to do, and the conversion between a file's bytes and a buffer's lines ('fileformat', 'eol', 'bomb').
 * The Neovim side is src/host/nvim-buffers.ts and lua/caboose/buffers/init.lua.
 */
import type { LineHunk } from './buffer-hunks';

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

/**
 * A file the host wrote, as `stat` saw it right after the rename (inode, size, mtime, ctime). The ctime
 * is what tells a later in-place write of as many bytes whose writer put the mtime back (userspace cannot
 * set a ctime).
 */
export interface WrittenFile {
  ino: number;
  size: number;
  mtimeSec: number;
  mtimeNsec: number;
  ctimeSec?: number;
  ctimeNsec?: number;
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
      /**
       * A clean update: the file the host wrote, as seen right after its rename. Neovim records the file as
       * read without comparing it only while it is still this file (lua/caboose/buffers/filetime.lua).
       */
      file?: WrittenFile;
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

/** What writes do to a file with unsaved buffer changes: change the buffer only, or refuse. */
export type UnsavedBuffersPolicy = 'edit_buffer' | 'refuse';

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NEWLINE = Buffer.from('\n');

/** Which format bytes were written with: cached bytes are valid for one format only. */
export function fmtKey(f: BufferFormat): string {
  return `${f.eol}|${f.finalEol}|${f.bom}|${f.fileencoding}`;
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
