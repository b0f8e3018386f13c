/** sha256 in hex, the file identity of the stale-file protocol: of bytes, on the thread pool, or of a file on disk. */
import fs from 'node:fs';
import { createHash, webcrypto, type Hash } from 'node:crypto';
import { commonPrefix } from './buffer-hunks';

export function sha256Hex(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** How often sha256After keeps the hash's state (and the smallest buffer it keeps states for). */
const MARK_STEP = 256 * 1024;
/** Hash states of a buffer hashed by sha256After: state i has hashed its bytes [0, (i + 1) × MARK_STEP). */
const marks = new WeakMap<Buffer, Hash[]>();

/**
 * sha256Hex of `next`, resumed from `prev`'s hash: when `prev` was hashed by this function (its states
 * every 256 KiB are kept beside it), hashing starts from the last state inside the bytes `prev` and `next`
 * have in common at their start (found by a native compare, not assumed), so an edit half-way down a
 * 4.9 MB file hashes only the second half (≈ 1.2 of 2.5 ms, issue 24). `next`'s states are kept for the
 * next edit. Same result as sha256Hex(next), given what the host assumes of every content buffer (the disk
 * cache hands the same one to later views): its bytes are never changed in place once hashed.
 */
export function sha256After(prev: Buffer | null, next: Buffer): string {
  const old = prev ? marks.get(prev) : undefined;
  let k = 0;
  if (old && prev) {
    const usable = Math.min(old.length, Math.floor(next.length / MARK_STEP)) * MARK_STEP;
    k = Math.floor(commonPrefix(prev, next, Math.min(usable, prev.length)) / MARK_STEP);
  }
  const states = old ? old.slice(0, k) : [];
  const h = k > 0 ? states[k - 1].copy() : createHash('sha256');
  let pos = k * MARK_STEP;
  while (pos < next.length) {
    const end = Math.min(pos + MARK_STEP, next.length);
    h.update(next.subarray(pos, end));
    pos = end;
    if (pos % MARK_STEP === 0 && next.length >= 2 * MARK_STEP) states.push(h.copy());
  }
  if (next.length >= 2 * MARK_STEP) marks.set(next, states);
  return h.digest('hex');
}

/** sha256Hex computed on the thread pool (the calling thread stays free). */
export async function sha256HexAsync(bytes: Buffer): Promise<string> {
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', bytes)).toString('hex');
}

const PIECE = 1 << 20;

/**
 * The open file `fh` holds exactly `expect` (from offset 0 to its end): its size, else null. Read in
 * 1 MiB pieces compared as they come: no buffer as large as the file is allocated (a 4.9 MB one per
 * check made the host's garbage collector run every few edits).
 */
export async function fileHoldsExactly(fh: Pick<import('node:fs/promises').FileHandle, 'read'> | { read: (b: Buffer, off: number, len: number, pos: number) => Promise<{ bytesRead: number }> }, expect: Buffer): Promise<number | null> {
  const piece = Buffer.allocUnsafeSlow(Math.min(PIECE, expect.length + 1));
  let pos = 0;
  for (;;) {
    const { bytesRead } = await fh.read(piece, 0, piece.length, pos);
    if (bytesRead === 0) return pos === expect.length ? pos : null;
    if (pos + bytesRead > expect.length || piece.compare(expect, pos, pos + bytesRead, 0, bytesRead) !== 0) return null;
    pos += bytesRead;
  }
}

let scratch: Buffer | null = null;

/**
 * fileHoldsExactly with synchronous reads of the descriptor `fd` (for files on a local filesystem, whose
 * pages are in memory after the host read or wrote them): ≈ 0.2 ms for 4.9 MB, against ≈ 0.8 ms through
 * the thread pool, one round trip a piece (issue 24). One 1 MiB piece is kept for every call.
 */
export function fileHoldsExactlySync(fd: number, expect: Buffer): number | null {
  scratch ??= Buffer.allocUnsafeSlow(PIECE);
  const piece = scratch;
  let pos = 0;
  for (;;) {
    const n = fs.readSync(fd, piece, 0, Math.min(piece.length, expect.length + 1 - pos), pos);
    if (n === 0) return pos === expect.length ? pos : null;
    if (pos + n > expect.length || piece.compare(expect, pos, pos + n, 0, n) !== 0) return null;
    pos += n;
  }
}

/** sha256 of a file's bytes, read in 1 MiB pieces (null when it cannot be read). Crash recovery and the trash use it. */
export function sha256OfFileSync(p: string): string | null {
  try {
    const h = createHash('sha256');
    const fd = fs.openSync(p, 'r');
    try {
      const buf = Buffer.allocUnsafe(1 << 20);
      for (;;) {
        const n = fs.readSync(fd, buf, 0, buf.length, null);
        if (n === 0) break;
        h.update(buf.subarray(0, n));
      }
    } finally {
      fs.closeSync(fd);
    }
    return h.digest('hex');
  } catch {
    return null;
  }
}
