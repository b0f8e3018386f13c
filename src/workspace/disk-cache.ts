/**
 * The bytes and sha256 of files as the host last read or wrote them, keyed by the file's identity on disk
 * (device, inode, size, mtime and ctime in nanoseconds), so that a view of a file nobody changed since
 * skips reading and hashing it (issue 24: 6 ms of a 4.9 MB file's edit).
 *
 * When an identity proves the content. Every change of a file's content (write, truncate, a rename over
 * it — a new inode —, utimes that put an old mtime back) sets its ctime to the kernel's current time, and
 * userspace cannot set a ctime. The kernel's file times come from a coarse clock (one tick, ≤ 10 ms, or
 * the filesystem's own granularity), so a change made in the same tick as the moment the content was
 * captured could leave every field as it was (same size, same times): the "racy git" problem. So an
 * entry is only made when the file's ctime (and mtime) is older than the moment the content was captured
 * by more than RACY_NS; any later change then gets a later ctime. A file the host has just written is
 * always racy (its rename set the ctime): it is read back in the background once RACY_NS has passed, and
 * cached when it still holds the bytes written (`settle`).
 *
 * Only local filesystems with nanosecond times are trusted (ext2/3/4, xfs, btrfs, tmpfs, f2fs, overlay,
 * zfs, bcachefs): a network filesystem's times come from another clock and may be cached by the client.
 * Times whose nanoseconds are a whole millisecond are taken for a coarse filesystem (no entry).
 *
 * Not covered (the commit still proves what it displaces byte for byte, so nothing is lost, the call
 * answers stale_file then): a program writing through a shared writable mmap into a page that was
 * already dirty when the content was captured (no new file time until write-back); the system clock set
 * back by more than RACY_NS; one write() that stalls after setting the file's times (the kernel sets them
 * when the call starts, then copies the bytes: dirty-page throttling, swap or a slow mapped source can
 * hold it for longer than RACY_NS), so a capture made meanwhile is torn under an identity that stays.
 * Hence an entry only ever answers a view made for a write whose caller names the sha256 it saw
 * (`lookup`'s `expectSha`) — the commit then compares the file it displaces with the entry's bytes — and
 * only when the entry holds that sha256: what the agent is shown (read tools, reviews, checkpoints) is
 * always read from the disk.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { anchoringSupported, openVerified } from './anchored';
import { isUnder } from './paths';
import { fileHoldsExactly, fileHoldsExactlySync } from './file-sha';

/** More than one coarse clock tick (≤ 10 ms at HZ=100) of the kernel's file times. */
export const RACY_NS = 20_000_000n;
const MAX_BYTES = 64 * 1024 * 1024;
/** Files below this are read and hashed in well under a millisecond: not worth keeping. */
const MIN_BYTES = 64 * 1024;

/** Filesystems whose file times are set by this kernel, in nanoseconds (statfs f_type). */
const LOCAL_NS_FILESYSTEMS = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0xf2f52010, 0x794c7630, 0x2fc12fc1, 0xca451a4e]);

/** dev → its filesystem is local with nanosecond times (statfs, asked once per device). */
const localDevs = new Map<bigint, Promise<boolean>>();
const localDevsKnown = new Map<bigint, boolean>();

/** The filesystem of `p` (device `dev`) is local with nanosecond times. */
export function localFilesystem(p: string, dev: bigint): Promise<boolean> {
  let known = localDevs.get(dev);
  if (!known) {
    known = fsp.statfs(p).then(
      (s) => {
        const local = LOCAL_NS_FILESYSTEMS.has(Number(s.type));
        localDevsKnown.set(dev, local);
        return local;
      },
      () => {
        // Not remembered: `p` may have gone; the next question asks again.
        localDevs.delete(dev);
        return false;
      },
    );
    localDevs.set(dev, known);
  }
  return known;
}

/** localFilesystem's answer when it is already known (undefined before its first statfs ended). */
export function knownLocalFilesystem(dev: bigint): boolean | undefined {
  return localDevsKnown.get(dev);
}

export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  mode: bigint;
  nlink: bigint;
}

interface Entry {
  id: FileIdentity;
  bytes: Buffer;
  sha256: string;
}

export function identityOf(st: fs.BigIntStats): FileIdentity {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, mode: st.mode, nlink: st.nlink };
}

export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.mode === b.mode && a.nlink === b.nlink;
}

/** The wall clock in nanoseconds (the clock file times come from), rounded down to the millisecond. */
export function wallNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

export class DiskCache {
  private readonly entries = new Map<string, Entry>();
  private total = 0;
  /** How often a view was answered from an entry, and how many entries were made (tests, bench). */
  readonly stats = { hits: 0, entries: 0 };

  /** There is an entry for `abs` (its file was on a local filesystem). */
  has(abs: string): boolean {
    return this.entries.has(abs);
  }

  /**
   * The entry for `abs` when the file is still exactly the one it was made from and holds `expectSha`
   * (the sha256 the caller's write was computed against; another one means the entry or the caller is
   * behind: the disk is read).
   */
  lookup(abs: string, id: FileIdentity, expectSha: string): { bytes: Buffer; sha256: string } | null {
    const e = this.entries.get(abs);
    if (!e) return null;
    if (!sameIdentity(e.id, id) || e.sha256 !== expectSha) {
      this.drop(abs);
      return null;
    }
    // Most recently used last.
    this.entries.delete(abs);
    this.entries.set(abs, e);
    this.stats.hits++;
    return { bytes: e.bytes, sha256: e.sha256 };
  }

  /**
   * Offers content read from `abs`: `id` was seen before and after the read (the same), `capturedNs` is
   * the wall clock taken before the first of them. Kept only when that identity proves the content.
   */
  async offer(abs: string, id: FileIdentity, capturedNs: bigint, bytes: Buffer, sha256: string): Promise<boolean> {
    this.drop(abs);
    if (bytes.length < MIN_BYTES || bytes.length > MAX_BYTES / 4 || BigInt(bytes.length) !== id.size) return false;
    if (!notRacy(id, capturedNs)) return false;
    if (!(await this.localFs(abs, id.dev))) return false;
    this.entries.set(abs, { id, bytes, sha256 });
    this.total += bytes.length;
    this.stats.entries++;
    while (this.total > MAX_BYTES) {
      const first = this.entries.keys().next().value;
      if (first === undefined) break;
      this.drop(first);
    }
    return true;
  }

  /** Forgets `abs` (the host is about to change it, or it changed). */
  drop(abs: string): void {
    const e = this.entries.get(abs);
    if (!e) return;
    this.entries.delete(abs);
    this.total -= e.bytes.length;
  }

  /**
   * After the host wrote `bytes` (sha256 `sha256`) to `abs`: once the write is no longer racy, reads the
   * file back through a verified handle and caches it when it still holds exactly these bytes. Runs in
   * the background (the agent's next call comes after a model round trip); errors only mean no entry.
   */
  settle(abs: string, root: string | null, bytes: Buffer, sha256: string, delayMs = Number(RACY_NS / 1_000_000n) + 5): void {
    this.drop(abs);
    if (bytes.length < MIN_BYTES || bytes.length > MAX_BYTES / 4) return;
    const t = setTimeout(() => {
      void this.readBack(abs, root, bytes, sha256, 3).catch(() => undefined);
    }, delayMs);
    t.unref();
  }

  private async readBack(abs: string, root: string | null, bytes: Buffer, sha256: string, tries: number): Promise<void> {
    const anchored = root !== null && anchoringSupported() && isUnder(root, abs);
    const fh = anchored ? await openVerified(root, abs, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK) : await fsp.open(abs, 'r');
    try {
      const captured = wallNs();
      const before = identityOf(await fh.stat({ bigint: true }));
      if (before.size !== BigInt(bytes.length)) return;
      if (!notRacy(before, captured)) {
        // Written again meanwhile, or the clock is behind the file time: try a little later.
        if (tries > 1) {
          const t = setTimeout(() => void this.readBack(abs, root, bytes, sha256, tries - 1).catch(() => undefined), Number(RACY_NS / 1_000_000n));
          t.unref();
        }
        return;
      }
      // A local filesystem's pages are in memory (the host just wrote them): read synchronously into the
      // shared 1 MiB piece (file-sha.ts), neither five thread-pool round trips nor a new 1 MiB buffer an
      // edit (the host's allocations decide how often its full garbage collection runs, issue 24).
      // Elsewhere no entry is ever made (offer), so nothing is read.
      const local = knownLocalFilesystem(before.dev);
      if (local === false) return;
      if ((local ? fileHoldsExactlySync(fh.fd, bytes) : await fileHoldsExactly(fh, bytes)) === null) return;
      const after = identityOf(await fh.stat({ bigint: true }));
      if (!sameIdentity(before, after)) return;
      await this.offer(abs, after, captured, bytes, sha256);
    } finally {
      await fh.close().catch(() => undefined);
    }
  }

  private localFs(abs: string, dev: bigint): Promise<boolean> {
    return localFilesystem(abs, dev);
  }
}

/** Both file times are older than `capturedNs` by more than RACY_NS, and look nanosecond-grained. */
function notRacy(id: FileIdentity, capturedNs: bigint): boolean {
  if (id.ctimeNs % 1_000_000n === 0n || id.mtimeNs % 1_000_000n === 0n) return false;
  return id.ctimeNs + RACY_NS < capturedNs && id.mtimeNs + RACY_NS < capturedNs;
}
