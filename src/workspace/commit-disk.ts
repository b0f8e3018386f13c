/**
 * The disk half of a commit: several writes and deletes, all-or-nothing, atomic and durable. New content
 * goes to an fsynced temp file beside its target, the journal (commit-journal.ts) lists every step before
 * anything is written, every folder is reached through a verified handle (anchored.ts), then the temps are
 * renamed into place, what each rename displaced is checked (commit-steps.ts), and the folders are
 * fsynced. Buffers are not its business: file-access.ts decides what reaches the disk.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { STALE_FILE_ACTION, ToolError, throwIfCancelled } from './errors';
import { isUnder } from './paths';
import { CommitJournal, type JournalStep } from './commit-journal';
import { AnchorSet, AnchoredDir, anchoringSupported, readdirVerified } from './anchored';
import { sha256HexAsync } from './file-sha';
import { hardLinkError } from './file-errors';
import { statOrNull, type ChangeBasis } from './file-view';
import { releaseBackup, rollback, verifyDisplaced, writeInPlace, type Step } from './commit-steps';
import { traceMark } from './trace';
import type { WrittenFile } from './buffer-bridge';
import { runQueuedWork } from './io-idle';

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

/** Test hook: runs before each commit step; throwing simulates a failure mid-commit. */
export type CommitFaultHook = (step: { index: number; change: FileChange; phase: 'prepare' | 'commit' | 'renamed' }) => void;

/** What the write tools do to a file with more than one hard link: refuse, or write its content in place (keeping the link). */
export type HardLinkPolicy = 'refuse' | 'in_place';

export interface DiskCommitOptions {
  /** Workspace root: folders are anchored under it (none = plain paths, no folder check). */
  root: string | null;
  /** Where commits keep their intent log (see commit-journal.ts); none = no crash recovery. */
  journalDir: string | null;
  hardLinks: HardLinkPolicy;
  /** The path as error messages show it. */
  rel: (abs: string) => string;
}

export class DiskCommitter {
  private readonly root: string | null;
  private readonly journalDir: string | null;
  private readonly hardLinks: HardLinkPolicy;
  private readonly rel: (abs: string) => string;

  constructor(opts: DiskCommitOptions) {
    this.root = opts.root;
    this.journalDir = opts.journalDir;
    this.hardLinks = opts.hardLinks;
    this.rel = opts.rel;
  }

  /**
   * Writes and deletes on disk, all-or-nothing: every new content goes to a temp file in the target's
   * folder (fsynced) first; then the temps are renamed into place. A failure before the renames removes
   * the temps; a failure during them restores every file already replaced or deleted. An aborted
   * `signal` is the last failure before the renames (the commit point). Returns the sha256 now at each
   * written path. The folders are not fsynced here (syncDirs).
   */
  async commit(
    changes: FileChange[],
    signal?: AbortSignal,
    faultHook?: CommitFaultHook,
    /** Awaited just before the commit point (after the temp files are written): its failure changes nothing. */
    beforeCommitPoint?: () => Promise<void>,
  ): Promise<{ target: string; sha256: string; file?: WrittenFile }[]> {
    if (changes.length === 0) {
      await beforeCommitPoint?.();
      // Buffer-only commits have their commit point here too.
      throwIfCancelled(signal);
      return [];
    }
    const temps = new Map<number, string>();
    const createdDirs: string[] = [];
    const steps: Step[] = [];
    const stats: (fs.Stats | null)[] = [];
    /** What each replaced file is right after its rename (Neovim checks it before recording the file as read). */
    const files = new Map<string, WrittenFile | undefined>();
    // The new bytes are hashed (thread pool) while the temp files are written; the journal gets their
    // sha256s before the commit point (recovery needs them from its renames on, not before).
    const hashes: (Promise<string> | undefined)[] = changes.map((c) => (c.type === 'write' ? Promise.resolve(c.sha256 ?? sha256HexAsync(c.bytes)) : undefined));
    for (const h of hashes) h?.catch(() => undefined);
    // Every name and step is fixed first: the journal lists them before anything is written.
    const plan: JournalStep[] = await Promise.all(
      changes.map(async (c, i): Promise<JournalStep> => {
        if (c.type === 'delete') {
          stats[i] = null;
          return { kind: 'delete', target: c.abs, backup: siblingName(c.abs, 'bak'), ...(c.expectSha256 ? { oldSha256: c.expectSha256 } : {}) };
        }
        // Synchronous (≈ 10 µs): through the thread pool, busy hashing the new bytes, it waited for a thread.
        const st = c.createOnly ? null : statSyncOrNull(c.abs);
        stats[i] = st;
        const kind = c.createOnly || !st ? 'create' : 'replace';
        const inPlace = kind === 'replace' && st!.isFile() && st!.nlink > 1;
        if (inPlace && this.hardLinks === 'refuse') throw hardLinkError(this.rel(c.abs), st!.nlink);
        const oldSha256 = c.basis?.diskSha256 ?? undefined;
        return {
          kind,
          target: c.abs,
          ...(oldSha256 ? { oldSha256 } : {}),
          ...(inPlace ? { inPlace: true } : { tmp: siblingName(c.abs, 'tmp') }),
          ...(kind === 'replace' ? { backup: siblingName(c.abs, 'bak') } : {}),
        };
      }),
    );
    traceMark('disk: planned');
    const journal = this.journalDir ? await CommitJournal.begin(this.journalDir, plan, this.root) : null;
    traceMark('disk: journal');
    // Every folder is opened once and verified (anchored.ts); all names below are reached through those
    // handles, so a folder swapped for a link by another process cannot redirect a step out of the root.
    const anchors = this.root !== null && anchoringSupported() ? new AnchorSet(this.root) : null;
    const at = (p: string): string => (anchors ? anchors.via(p) : p);
    try {
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i];
        faultHook?.({ index: i, change: c, phase: 'prepare' });
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
      traceMark('disk: temp written + fsync');
      await beforeCommitPoint?.();
      // Queued work (a caller's hash of the new bytes) ran during the fsync; without temp files, now.
      runQueuedWork();
      for (let i = 0; i < changes.length; i++) if (hashes[i]) plan[i].newSha256 = await hashes[i];
      traceMark('disk: new sha256');
      throwIfCancelled(signal);
      journal?.update(plan, this.root);
      await journal?.mark('pending');
      for (let i = 0; i < changes.length; i++) {
        const c = changes[i];
        const p = plan[i];
        faultHook?.({ index: i, change: c, phase: 'commit' });
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
          files.set(c.abs, writtenFile(at(c.abs)));
          const expectBytes = p.oldSha256 && c.basis?.diskSha256 === p.oldSha256 ? c.basis.diskBytes : undefined;
          steps.push({ kind: 'replaced', target: c.abs, backup: p.backup!, bytes: c.bytes, expect: p.oldSha256 ?? null, ...(expectBytes ? { expectBytes } : {}) });
        }
        faultHook?.({ index: i, change: c, phase: 'renamed' });
      }
      // What each rename displaced must be what the change was computed from: another program's write
      // in between would otherwise be lost. On a mismatch, everything is put back (their version kept).
      traceMark('disk: link + rename');
      for (const s of steps) if (!(s.kind === 'replaced' && s.inPlace)) await verifyDisplaced(s, this.rel(s.target), at);
      traceMark('disk: displaced verified');
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
    const written: { target: string; sha256: string; file?: WrittenFile }[] = [];
    for (const p of plan) {
      const file = files.get(p.target);
      if (p.newSha256) written.push({ target: p.target, sha256: p.newSha256, ...(file ? { file } : {}) });
    }
    return written;
  }

  /**
   * Creates `abs` (never overwriting) from what `fill` writes into a temp file beside it, journaled
   * like a commit: for content too large to hold in memory (restore_file of a large file). A loaded
   * buffer waiting for the file is file-access.ts's business.
   */
  async createStreamed(abs: string, sha256: string, fill: (tmp: string) => Promise<void>): Promise<void> {
    const tmp = siblingName(abs, 'tmp');
    const journal = this.journalDir ? await CommitJournal.begin(this.journalDir, [{ kind: 'create', target: abs, tmp, newSha256: sha256 }], this.root) : null;
    // Through verified folder handles, as commit (anchored.ts).
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
  async syncDirs(changes: FileChange[]): Promise<void> {
    const dirs = new Set(changes.map((c) => path.dirname(c.abs)));
    for (const d of dirs) await fsyncDir(d);
  }
}

/** The file at `p` as a WrittenFile (undefined when it cannot be stat'ed or its inode is not a safe integer). */
function writtenFile(p: string): WrittenFile | undefined {
  try {
    const st = fs.statSync(p, { bigint: true });
    if (st.ino > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
    return {
      ino: Number(st.ino),
      size: Number(st.size),
      mtimeSec: Number(st.mtimeNs / 1_000_000_000n),
      mtimeNsec: Number(st.mtimeNs % 1_000_000_000n),
      ctimeSec: Number(st.ctimeNs / 1_000_000_000n),
      ctimeNsec: Number(st.ctimeNs % 1_000_000_000n),
    };
  } catch {
    return undefined;
  }
}

function statSyncOrNull(p: string): fs.Stats | null {
  try {
    return fs.statSync(p);
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
    traceMark('disk: temp written');
    // Root (or a member of the group) can keep the old owner and group; others keep what they may.
    if (owner && (owner.uid !== process.getuid?.() || owner.gid !== process.getgid?.())) {
      await fh.chown(owner.uid, owner.gid).catch(() => fh.chown(-1, owner.gid).catch(() => undefined));
    }
    if (mode !== undefined) await fh.chmod(mode);
    const synced = fh.sync();
    // The longest wait of a commit: queued CPU work of the call runs meanwhile (io-idle.ts).
    runQueuedWork();
    traceMark('disk: queued work done (sha256, diff)');
    await synced;
    traceMark('disk: temp fsynced');
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

/** fsyncs a folder (its renames become durable); a no-op where folders cannot be fsynced. */
export async function fsyncDir(dir: string): Promise<void> {
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
