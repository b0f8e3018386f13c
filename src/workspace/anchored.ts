/**
 * Confined file access without a check-then-use gap (issue 18, item 8).
 *
 * A path checked with realpath can be redirected before it is used: another process may exchange a
 * folder of it with a symlink to anywhere (renameat2 RENAME_EXCHANGE). So every use here first OPENS
 * the object (the last name never followed: O_NOFOLLOW), then asks the kernel where the opened handle
 * really is (`/proc/self/fd/<fd>`), and only uses the handle when that is exactly the path the
 * workspace resolved. Reads go through the handle; changes in a folder go through
 * `/proc/self/fd/<dirfd>/<name>`, a single name looked up in the verified folder, so a swap of any
 * folder above it after the check changes nothing.
 *
 * On systems without /proc/self/fd (macOS) the functions fall back to plain paths (the old check).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ToolError, STALE_FILE_ACTION } from './errors';
import { isUnder } from './paths';

const PROC_FD = '/proc/self/fd';

let supported: boolean | undefined;
/** Linux with /proc mounted: an open handle's real path can be read back (checked once, on a handle of "/"). */
export function anchoringSupported(): boolean {
  if (supported === undefined) {
    supported = false;
    if (process.platform === 'linux' && process.env.CABOOSE_NO_PROC_FD !== '1') {
      let fd: number | null = null;
      try {
        fd = fs.openSync('/', O_RDONLY | O_DIRECTORY);
        supported = safeReadlink(`${PROC_FD}/${fd}`) === '/';
      } catch {
        supported = false;
      } finally {
        if (fd !== null) fs.closeSync(fd);
      }
    }
  }
  return supported;
}

function safeReadlink(p: string): string | null {
  try {
    return fs.readlinkSync(p);
  } catch {
    return null;
  }
}

const { O_RDONLY, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = fs.constants;

/** Where the open handle `fd` really is (null when the system cannot tell). */
export async function realPathOfFd(fd: number): Promise<string | null> {
  if (!anchoringSupported()) return null;
  try {
    return await fsp.readlink(`${PROC_FD}/${fd}`);
  } catch {
    return null;
  }
}

function relOf(root: string, abs: string): string {
  return path.relative(root, abs).split(path.sep).join('/') || '.';
}

/**
 * The error for a handle that is not where the path said (a link swapped in, a folder moved):
 * outside_workspace when the handle or the path now leads out of the root, else stale_file.
 */
export async function redirectedError(root: string, abs: string, real: string | null): Promise<ToolError> {
  const rel = relOf(root, abs);
  const now = await fsp.realpath(abs).catch(() => null);
  if (real === null || !isUnder(root, real.replace(/ \(deleted\)$/, '')) || (now !== null && !isUnder(root, now))) {
    return new ToolError('outside_workspace', `"${rel}" was redirected outside the workspace while being used (a folder or the file was replaced by a symbolic link); nothing was read or changed.`, {
      path: rel,
      suggestedAction: 'Something is swapping links in the workspace; ask the user before going on.',
    });
  }
  return new ToolError('stale_file', `"${rel}" moved while being used (a folder of its path was replaced); nothing was read or changed.`, {
    path: rel,
    suggestedAction: STALE_FILE_ACTION,
  });
}

/** What an O_NOFOLLOW open of `abs` that failed with `err` reports: ELOOP and a linked folder (ENOTDIR) as outside_workspace. */
async function noFollowOpenError(root: string, abs: string, err: unknown): Promise<unknown> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP') return redirectedError(root, abs, null);
  // O_DIRECTORY with O_NOFOLLOW on a symlink is ENOTDIR.
  if (code === 'ENOTDIR' && (await fsp.lstat(abs).catch(() => null))?.isSymbolicLink()) {
    return redirectedError(root, abs, await fsp.realpath(abs).catch(() => null));
  }
  return err;
}

/**
 * Opens `abs` (a realpath-resolved path under `root`) without following a symlink at its last name and
 * verifies that the handle is exactly at `abs`. ELOOP (the last name is now a link) is outside_workspace.
 * Other errors (ENOENT…) are thrown as they are.
 */
export async function openVerified(root: string, abs: string, flags: number): Promise<fsp.FileHandle> {
  if (!anchoringSupported()) return fsp.open(abs, flags);
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(abs, flags | O_NOFOLLOW);
  } catch (err) {
    throw await noFollowOpenError(root, abs, err);
  }
  const real = await realPathOfFd(fh.fd);
  if (real !== abs) {
    await fh.close().catch(() => undefined);
    throw await redirectedError(root, abs, real);
  }
  return fh;
}

/**
 * Opens the folder `abs` synchronously (O_NOFOLLOW) and verifies the handle is exactly at `abs` (see
 * openVerified): a folder's open and readlink are metadata operations of a few µs; through the thread
 * pool each waited for a thread and a turn of the event loop, several times on every commit's path
 * (issue 24). Errors as openVerified.
 */
async function openVerifiedDir(root: string, abs: string): Promise<number> {
  let fd: number;
  try {
    fd = fs.openSync(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (err) {
    throw await noFollowOpenError(root, abs, err);
  }
  const real = safeReadlink(`${PROC_FD}/${fd}`);
  if (real !== abs) {
    fs.closeSync(fd);
    throw await redirectedError(root, abs, real);
  }
  return fd;
}

/**
 * openVerified's quick form, synchronous (an open and a readlink of a few µs, no thread-pool round
 * trips): the descriptor of `abs` when it opens (its last name not followed) and is exactly at `abs`,
 * else null — the caller then takes openVerified's path, which gives the errors.
 */
export function openVerifiedQuick(abs: string, flags: number): number | null {
  if (!anchoringSupported()) return null;
  let fd: number;
  try {
    fd = fs.openSync(abs, flags | O_NOFOLLOW);
  } catch {
    return null;
  }
  if (safeReadlink(`${PROC_FD}/${fd}`) === abs) return fd;
  fs.closeSync(fd);
  return null;
}

/** A folder opened and verified: names in it are reached through its handle, whatever happens to its path. */
export class AnchoredDir {
  private closed = false;

  private constructor(
    readonly abs: string,
    private readonly fd: number | null,
  ) {}

  /** Opens the existing folder `abs` (verified, see openVerified). */
  static async open(root: string, abs: string): Promise<AnchoredDir> {
    if (!anchoringSupported()) return new AnchoredDir(abs, null);
    return new AnchoredDir(abs, await openVerifiedDir(root, abs));
  }

  /**
   * Opens the folder `abs`, creating the missing ones on the way (each made through its verified
   * parent). `created` receives the topmost folder made, as `mkdir -p` reports it.
   */
  static async ensure(root: string, abs: string, created?: string[]): Promise<AnchoredDir> {
    if (!anchoringSupported()) {
      const made = await fsp.mkdir(abs, { recursive: true });
      if (made && created) created.push(made);
      return new AnchoredDir(abs, null);
    }
    try {
      return await AnchoredDir.open(root, abs);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || abs === root || !isUnder(root, abs)) throw err;
    }
    const parent = await AnchoredDir.ensure(root, path.dirname(abs), created);
    let made = false;
    try {
      try {
        await fsp.mkdir(parent.at(path.basename(abs)));
        made = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      if (made && created && !created.some((c) => isUnder(c, abs))) created.push(abs);
      return await AnchoredDir.open(root, abs);
    } finally {
      await parent.close();
    }
  }

  /** A path reaching `name` (one name, no `/`) inside this folder through its handle. */
  at(name: string): string {
    if (name.includes('/') || name === '..' || name === '.') throw new Error(`not a single name: ${name}`);
    if (this.closed) throw new Error(`folder handle already closed: ${this.abs}`);
    return this.fd !== null ? `${PROC_FD}/${this.fd}/${name}` : path.join(this.abs, name);
  }

  /** The folder itself through its handle (for readdir). */
  get self(): string {
    if (this.closed) throw new Error(`folder handle already closed: ${this.abs}`);
    return this.fd !== null ? `${PROC_FD}/${this.fd}` : this.abs;
  }

  /** Throws when the folder is no longer at `abs` (moved, or its path now goes through a link). */
  async assertInPlace(root: string): Promise<void> {
    if (this.fd === null) return;
    if (this.closed) throw new Error(`folder handle already closed: ${this.abs}`);
    // Synchronous (a readlink of a few µs), as the open.
    const real = safeReadlink(`${PROC_FD}/${this.fd}`);
    if (real !== this.abs) throw await redirectedError(root, this.abs, real);
  }

  async sync(): Promise<void> {
    const fd = this.fd;
    if (fd === null || this.closed) return;
    await new Promise<void>((resolve) => fs.fsync(fd, () => resolve()));
  }

  async close(): Promise<void> {
    if (this.fd === null || this.closed) return;
    this.closed = true;
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

/**
 * Anchored folders for a set of paths, one handle per folder: `via(abs)` gives the path that reaches
 * `abs` through its folder's verified handle. For one commit; close() at the end.
 */
export class AnchorSet {
  private readonly dirs = new Map<string, AnchoredDir>();

  constructor(private readonly root: string) {}

  /** Opens (or, with `create`, makes) the folder of `abs`. */
  async add(abs: string, opts: { create?: boolean; created?: string[] } = {}): Promise<AnchoredDir> {
    const dir = path.dirname(abs);
    let d = this.dirs.get(dir);
    if (!d) {
      d = opts.create ? await AnchoredDir.ensure(this.root, dir, opts.created) : await AnchoredDir.open(this.root, dir);
      this.dirs.set(dir, d);
    }
    return d;
  }

  /** `abs` reached through its folder's handle (its folder must have been added). */
  via(abs: string): string {
    const d = this.dirs.get(path.dirname(abs));
    if (!d) throw new Error(`folder not anchored: ${abs}`);
    return d.at(path.basename(abs));
  }

  has(abs: string): boolean {
    return this.dirs.has(path.dirname(abs));
  }

  /** Every folder is still where it was opened. */
  async assertInPlace(): Promise<void> {
    for (const d of this.dirs.values()) await d.assertInPlace(this.root);
  }

  async assertDirInPlace(abs: string): Promise<void> {
    await this.dirs.get(path.dirname(abs))?.assertInPlace(this.root);
  }

  async syncAll(): Promise<void> {
    for (const d of this.dirs.values()) await d.sync();
  }

  async close(): Promise<void> {
    for (const d of this.dirs.values()) await d.close();
    this.dirs.clear();
  }
}

/** lstat through a verified folder handle; null when absent. */
export async function lstatAnchored(root: string, abs: string): Promise<fs.Stats | null> {
  let dir: AnchoredDir;
  try {
    dir = await AnchoredDir.open(root, path.dirname(abs));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
  try {
    return await fsp.lstat(dir.at(path.basename(abs)));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  } finally {
    await dir.close();
  }
}

/**
 * Reads a file with its handle verified (see openVerified): what is read is the file at `abs` inside
 * the workspace. A folder gives kind 'directory', a FIFO or device 'other' (never opened for reading
 * in a way that blocks), a missing file null.
 */
export async function readVerified(
  root: string,
  abs: string,
  beforeRead?: (stat: fs.Stats) => void,
): Promise<{ kind: 'file'; stat: fs.Stats; bytes: Buffer } | { kind: 'directory'; stat: fs.Stats } | { kind: 'other'; stat: fs.Stats } | null> {
  let fh: fsp.FileHandle;
  try {
    fh = await openVerified(root, abs, O_RDONLY | O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
  try {
    const stat = await fh.stat();
    if (stat.isDirectory()) return { kind: 'directory', stat };
    if (!stat.isFile()) return { kind: 'other', stat };
    beforeRead?.(stat);
    return { kind: 'file', stat, bytes: await fh.readFile() };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** The entries of a folder read through its verified handle (nothing when it moved or became a link). */
export async function readdirVerified(root: string, abs: string): Promise<fs.Dirent[]> {
  const dir = await AnchoredDir.open(root, abs);
  try {
    return await fsp.readdir(dir.self, { withFileTypes: true });
  } finally {
    await dir.close();
  }
}
