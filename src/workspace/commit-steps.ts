/**
 * The steps a disk commit (commit-disk.ts) has taken, and what happens to them after: the file each
 * rename displaced is checked against the sha256 its change was computed from (another program's write
 * in between is not lost), released once the commit holds, or put back on a rollback, keeping what
 * other programs wrote meanwhile.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { concurrentWriteError } from './file-errors';
import { fileHoldsExactly, fileHoldsExactlySync } from './file-sha';
import { knownLocalFilesystem, localFilesystem } from './disk-cache';

/** One rename done: a file created, replaced (its old version moved to `backup`) or deleted (moved to `backup`). */
export type Step =
  | { kind: 'created'; target: string; bytes: Buffer }
  | { kind: 'replaced'; target: string; backup: string; bytes: Buffer; expect: string | null; expectBytes?: Buffer; inPlace?: boolean; checkedSize?: number }
  | { kind: 'deleted'; target: string; backup: string; expect: string | null; checkedSize?: number };

/** The file a step moved aside (its backup) still has the sha256 its change was computed from. */
export async function verifyDisplaced(s: Step, rel: string, at: (p: string) => string = (p) => p): Promise<void> {
  if (s.kind === 'created' || !s.expect) return;
  if (s.kind === 'replaced' && s.expectBytes) {
    // The bytes the change was computed from (they hash to `expect`) are at hand: compared byte for byte,
    // which is the same proof without hashing the file.
    const size = await sameBytes(at(s.backup), s.expectBytes);
    if (size === null) throw concurrentWriteError(rel);
    s.checkedSize = size;
    return;
  }
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
 * The file at `p` holds exactly `expect`: its size, else null. On a local filesystem it is read
 * synchronously (its pages are in memory: ≈ 0.2 ms for 4.9 MB, four times less than one thread-pool
 * round trip a 1 MiB piece); elsewhere (or before the filesystem is known) through the thread pool.
 */
async function sameBytes(p: string, expect: Buffer): Promise<number | null> {
  const fd = fs.openSync(p, 'r');
  try {
    const dev = fs.fstatSync(fd, { bigint: true }).dev;
    const local = knownLocalFilesystem(dev);
    if (local) return fileHoldsExactlySync(fd, expect);
    if (local === undefined) void localFilesystem(p, dev);
    return await fileHoldsExactly(fdReader(fd), expect);
  } finally {
    fs.closeSync(fd);
  }
}

function fdReader(fd: number): { read: (b: Buffer, off: number, len: number, pos: number) => Promise<{ bytesRead: number }> } {
  return {
    read: (b, off, len, pos) => new Promise((resolve, reject) => fs.read(fd, b, off, len, pos, (err, bytesRead) => (err ? reject(err) : resolve({ bytesRead })))),
  };
}

/**
 * Before a displaced file (a backup) goes: bytes another program appended to it after it was checked
 * (through a descriptor it opened before the rename) are appended at its path, not lost. Its open, stat
 * and unlink are synchronous (metadata operations of a few µs, on the call's path).
 */
export async function releaseBackup(s: Step, at: (p: string) => string = (p) => p): Promise<void> {
  if (s.kind === 'created') return;
  let fd: number | null = null;
  if (s.checkedSize !== undefined) {
    try {
      fd = fs.openSync(at(s.backup), 'r');
    } catch {
      fd = null;
    }
  }
  let size = s.checkedSize ?? 0;
  if (fd !== null) {
    try {
      size = appendGrowthSync(fd, size, at(s.target));
    } catch {
      // best effort, as before
    }
  }
  try {
    fs.unlinkSync(at(s.backup));
  } catch {
    // already gone
  }
  if (fd !== null) keepWatchingFd(fd, size, s.target);
}

/** appendGrowth for a descriptor, synchronously (there is nothing to append unless another program wrote). */
function appendGrowthSync(fd: number, from: number, target: string): number {
  const { size } = fs.fstatSync(fd);
  if (size <= from) return from;
  const extra = Buffer.alloc(size - from);
  fs.readSync(fd, extra, 0, extra.length, from);
  fs.appendFileSync(target, extra);
  return size;
}

/** keepWatching for a descriptor (closed afterwards). */
function keepWatchingFd(fd: number, from: number, target: string): void {
  const t = setTimeout(() => {
    try {
      appendGrowthSync(fd, from, target);
    } catch {
      // best effort
    } finally {
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
    }
  }, LATE_WRITE_GRACE_MS);
  t.unref();
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
export async function writeInPlace(abs: string, bytes: Buffer): Promise<void> {
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

/** Undoes `steps`, last first, best effort: each file is put back as it was before the commit, keeping what other programs wrote meanwhile. */
export async function rollback(steps: Step[], at: (p: string) => string = (p) => p): Promise<void> {
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
