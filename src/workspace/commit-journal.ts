import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

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
 */

export interface JournalStep {
  /** create: link the temp into place (nothing was there); replace: back up, then rename the temp over; delete: rename to the backup. */
  kind: 'create' | 'replace' | 'delete';
  target: string;
  tmp?: string;
  backup?: string;
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

  /** Records the steps of a commit that is about to start. */
  static async begin(dir: string, steps: JournalStep[]): Promise<CommitJournal> {
    const j = new CommitJournal(path.join(dir, `${SELF}-${randomBytes(6).toString('hex')}`), 'prep');
    await fsp.mkdir(dir, { recursive: true });
    await fsp.writeFile(j.file, JSON.stringify({ steps }));
    return j;
  }

  async mark(phase: Phase): Promise<void> {
    const next = `${this.base}.${phase}`;
    await fsp.rename(this.file, next);
    this.file = next;
    this.phase = phase;
  }

  /** The commit finished (or was rolled back in this process): nothing is left to recover. */
  async end(): Promise<void> {
    await fsp.unlink(this.file).catch(() => undefined);
  }
}

export interface RecoveryReport {
  /** Commits cut off before their renames: temps deleted. */
  discarded: number;
  /** Commits cut off during their renames: rolled back. */
  rolledBack: number;
  /** Commits cut off after their renames: backups deleted. */
  finished: number;
}

/** Recovers the journals in `dir` left by processes that are gone (see CommitJournal). Synchronous, best effort. */
export function recoverCommits(dir: string): RecoveryReport {
  const report: RecoveryReport = { discarded: 0, rolledBack: 0, finished: 0 };
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return report;
  }
  for (const name of names) {
    const m = NAME.exec(name);
    if (!m) continue;
    const [, pid, start, id, phase, claimer, claimerStart] = m;
    if (isAlive(Number(pid), start)) continue;
    if (claimer !== undefined && isAlive(Number(claimer), claimerStart)) continue;
    // Claim it first, so two processes opening the workspace at once do not both replay it.
    const claimed = path.join(dir, `${pid}-${start}-${id}.${phase}.claimed-${SELF}`);
    try {
      fs.renameSync(path.join(dir, name), claimed);
    } catch {
      continue;
    }
    let steps: JournalStep[] = [];
    try {
      steps = (JSON.parse(fs.readFileSync(claimed, 'utf8')) as { steps: JournalStep[] }).steps;
    } catch {
      // cut off while it was being written: nothing was done yet
    }
    if (phase === 'prep') {
      for (const s of steps) unlinkQuiet(s.tmp);
      report.discarded++;
    } else if (phase === 'pending') {
      for (const s of [...steps].reverse()) rollBack(s);
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

/** Undoes one step of a commit cut off during its renames, from whatever state the kill left it in. */
function rollBack(s: JournalStep): void {
  const tmp = exists(s.tmp);
  const target = exists(s.target);
  const backup = exists(s.backup);
  if (s.kind === 'create') {
    // Linked into place (same inode as the temp), or linked and the temp already removed.
    if (target && (!tmp || (tmp.ino === target.ino && tmp.dev === target.dev))) unlinkQuiet(s.target);
    unlinkQuiet(s.tmp);
  } else if (s.kind === 'replace') {
    // The backup exists from the first step; without the temp the new content was renamed over the target.
    if (backup && !tmp) renameQuiet(s.backup!, s.target);
    else unlinkQuiet(s.backup);
    unlinkQuiet(s.tmp);
  } else if (backup && !target) {
    renameQuiet(s.backup!, s.target);
  }
}

function renameQuiet(from: string, to: string): void {
  try {
    fs.renameSync(from, to);
  } catch {
    // best effort: the other steps are still undone
  }
}
