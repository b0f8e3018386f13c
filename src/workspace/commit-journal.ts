import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sha256OfFileSync } from './file-sha';

/**
 * The intent log of disk commits, so that a process killed in the middle of one (SIGKILL, OOM, a
 * crash) leaves neither temp files nor a half-applied multi-file change behind.
 *
 * Before the first temp file is written, `<dir>/<pid>-<start>-<id>.prep` lists every step of the
 * commit (its target, temp and backup names). It becomes `.pending` once all temps are written (the
 * renames begin), `.done` once every rename is done, and is removed at the end. The next workspace
 * opened on the same data folder recovers the journals of processes that are gone: `.prep` → the temps
 * are deleted; `.pending` → the commit is rolled back (backups restored, created files removed);
 * `.done` → the backups are deleted. Process crashes only: the journal is not fsynced.
 *
 * Recovery only touches a file whose current bytes are exactly what the interrupted commit wrote (the
 * journal holds their sha256): a file the user changed since keeps the user's version. It only handles
 * journals of the workspace being opened (the journal holds its root).
 */

export interface JournalStep {
  /** create: link the temp into place (nothing was there); replace: back up, then rename the temp over; delete: rename to the backup. */
  kind: 'create' | 'replace' | 'delete';
  target: string;
  tmp?: string;
  backup?: string;
  /** sha256 of the bytes the commit puts at `target` (create, replace). */
  newSha256?: string;
  /** sha256 the file had when the change was planned. */
  oldSha256?: string;
  /** replace: the new bytes are written into the file itself (a file with several hard links); `backup` is a copy. */
  inPlace?: boolean;
}

type Phase = 'prep' | 'pending' | 'done';

const NAME = /^(\d+)-(\d+|x)-([0-9a-f]+)\.(prep|pending|done)(?:\.claimed-(\d+)-(\d+|x))?$/;

/** The process start time (clock ticks since boot, Linux), so a reused pid is not taken for the writer. */
function startTime(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return 'dead';
    return fields[19] ?? 'x';
  } catch {
    return 'x';
  }
}

function isAlive(pid: number, start: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(pid);
  if (now === 'dead') return false;
  return start === 'x' || now === 'x' || now === start;
}

const SELF = `${process.pid}-${startTime(process.pid)}`;

export class CommitJournal {
  private file: string;

  private constructor(
    private readonly base: string,
    private phase: Phase,
  ) {
    this.file = `${base}.${phase}`;
  }

  /**
   * Records the steps of a commit that is about to start. The journal's writes, renames and unlink are
   * small metadata operations done synchronously (≈ 0.05 ms each): through the thread pool — busy hashing
   * the new bytes during a commit — each waited ≈ 0.4–1 ms for a thread, on the edit's path (issue 24).
   */
  static async begin(dir: string, steps: JournalStep[], root: string | null = null): Promise<CommitJournal> {
    const j = new CommitJournal(path.join(dir, `${SELF}-${randomBytes(6).toString('hex')}`), 'prep');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(j.file, JSON.stringify({ root, steps }));
    return j;
  }

  /**
   * Replaces the recorded steps while the commit is still being prepared (before `mark('pending')`): the
   * new bytes' sha256s, hashed while the temp files were written. Written beside the journal under a name
   * recovery ignores, then renamed over it: a crash leaves the old or the new list, never a torn one.
   */
  update(steps: JournalStep[], root: string | null = null): void {
    if (this.phase !== 'prep') throw new Error('a commit journal can only be updated before its renames');
    const next = `${this.base}.update`;
    fs.writeFileSync(next, JSON.stringify({ root, steps }));
    fs.renameSync(next, this.file);
  }

  async mark(phase: Phase): Promise<void> {
    const next = `${this.base}.${phase}`;
    fs.renameSync(this.file, next);
    this.file = next;
    this.phase = phase;
  }

  /** The commit finished (or was rolled back in this process): nothing is left to recover. */
  async end(): Promise<void> {
    try {
      fs.unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}

export interface RecoveryReport {
  /** Commits cut off before their renames: temps deleted. */
  discarded: number;
  /** Commits cut off during their renames: rolled back. */
  rolledBack: number;
  /** Commits cut off after their renames: backups deleted. */
  finished: number;
  /** Files put back to what they were before an interrupted commit (absolute paths). */
  restored: string[];
  /** Files an interrupted commit had changed but left as they are: their bytes are no longer what it wrote (changed since). */
  kept: string[];
}

/**
 * Recovers the journals in `dir` left by processes that are gone (see CommitJournal), those of the
 * workspace at `root` only (every journal when `root` is absent). Synchronous, best effort.
 */
export function recoverCommits(dir: string, root?: string): RecoveryReport {
  const report: RecoveryReport = { discarded: 0, rolledBack: 0, finished: 0, restored: [], kept: [] };
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return report;
  }
  for (const name of names) {
    // A list being replaced (CommitJournal.update) when its process died: the journal itself holds the old one.
    const u = /^(\d+)-(\d+|x)-[0-9a-f]+\.update$/.exec(name);
    if (u && !isAlive(Number(u[1]), u[2])) unlinkQuiet(path.join(dir, name));
    const m = NAME.exec(name);
    if (!m) continue;
    const [, pid, start, id, phase, claimer, claimerStart] = m;
    if (isAlive(Number(pid), start)) continue;
    if (claimer !== undefined && isAlive(Number(claimer), claimerStart)) continue;
    let journal: { root?: string | null; steps?: JournalStep[] } | null = null;
    try {
      journal = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as { root?: string | null; steps?: JournalStep[] };
    } catch {
      // cut off while it was being written (nothing was done yet), or claimed meanwhile
    }
    if (root !== undefined && journal && !belongsTo(journal, root)) continue;
    // Claim it first, so two processes opening the workspace at once do not both replay it.
    const claimed = path.join(dir, `${pid}-${start}-${id}.${phase}.claimed-${SELF}`);
    try {
      fs.renameSync(path.join(dir, name), claimed);
    } catch {
      continue;
    }
    const steps: JournalStep[] = journal?.steps ?? [];
    if (phase === 'prep') {
      for (const s of steps) unlinkQuiet(s.tmp);
      report.discarded++;
    } else if (phase === 'pending') {
      for (const s of [...steps].reverse()) rollBack(s, report);
      report.rolledBack++;
    } else {
      for (const s of steps) {
        unlinkQuiet(s.tmp);
        if (s.kind !== 'create') unlinkQuiet(s.backup);
      }
      report.finished++;
    }
    unlinkQuiet(claimed);
  }
  return report;
}

/** The journal is about the workspace at `root` (older journals without a root: all their files are under it). */
function belongsTo(j: { root?: string | null; steps?: JournalStep[] }, root: string): boolean {
  if (j.root) return j.root === root;
  const under = (p: string): boolean => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
  return (j.steps ?? []).every((s) => under(s.target));
}

/** The target holds exactly what the commit wrote (journals without the hash: assumed, as before). */
function holdsNew(s: JournalStep): boolean {
  return s.newSha256 === undefined || sha256OfFileSync(s.target) === s.newSha256;
}

function exists(p: string | undefined): fs.Stats | null {
  if (!p) return null;
  try {
    return fs.lstatSync(p);
  } catch {
    return null;
  }
}

function unlinkQuiet(p: string | undefined): void {
  if (!p) return;
  try {
    fs.unlinkSync(p);
  } catch {
    // already gone
  }
}

/**
 * Undoes one step of a commit cut off during its renames, from whatever state the kill left it in, but
 * only where the file still holds what the commit wrote: a later edit (by the user) is kept.
 */
function rollBack(s: JournalStep, report: RecoveryReport): void {
  const tmp = exists(s.tmp);
  const target = exists(s.target);
  const backup = exists(s.backup);
  if (s.kind === 'create') {
    // Linked into place (same inode as the temp), or linked and the temp already removed.
    if (target && (!tmp || (tmp.ino === target.ino && tmp.dev === target.dev))) {
      if (holdsNew(s)) {
        unlinkQuiet(s.target);
        report.restored.push(s.target);
      } else report.kept.push(s.target);
    }
    unlinkQuiet(s.tmp);
  } else if (s.kind === 'replace' && s.inPlace) {
    // The backup is a copy; the new bytes went into the file itself.
    if (backup && target) {
      const now = sha256OfFileSync(s.target);
      if (now === s.newSha256) {
        try {
          fs.writeFileSync(s.target, fs.readFileSync(s.backup!), { flag: 'r+' });
          fs.truncateSync(s.target, backup.size);
          report.restored.push(s.target);
        } catch {
          return;
        }
      } else if (now !== s.oldSha256) {
        // Cut off while writing in place, or changed since: the copy of the old bytes stays beside it.
        report.kept.push(s.target);
        return;
      }
    }
    unlinkQuiet(s.backup);
  } else if (s.kind === 'replace') {
    // The backup exists from the first step; without the temp the new content was renamed over the target.
    if (backup && !tmp) {
      if (holdsNew(s)) {
        renameQuiet(s.backup!, s.target);
        report.restored.push(s.target);
      } else {
        unlinkQuiet(s.backup);
        report.kept.push(s.target);
      }
    } else unlinkQuiet(s.backup);
    unlinkQuiet(s.tmp);
  } else if (backup && !target) {
    renameQuiet(s.backup!, s.target);
    report.restored.push(s.target);
  } else if (backup && target) {
    // Another file was created at the deleted path since: it stays, and so does the old one beside it.
    report.kept.push(s.target);
  }
}

function renameQuiet(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch {
    // best effort: the other steps are still undone
  }
}

/** What the chat says about a recovery (null when it changed no file), with workspace-relative paths. */
export function recoveryNotice(r: RecoveryReport, root: string): string | null {
  const rel = (p: string): string => path.relative(root, p).split(path.sep).join('/');
  const parts: string[] = [];
  if (r.restored.length) parts.push(`put back to their version before the interrupted change: ${r.restored.map(rel).join(', ')}`);
  if (r.kept.length) parts.push(`left as they are (changed since the crash): ${r.kept.map(rel).join(', ')}`);
  if (!parts.length) return null;
  return `A change interrupted by a crash was undone. Files ${parts.join('; files ')}.`;
}
