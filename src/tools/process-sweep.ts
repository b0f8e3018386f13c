import fs from 'node:fs';
import fsp from 'node:fs/promises';

/**
 * Finds the processes a bash command started even when they left its process group (`setsid`,
 * daemons): each command runs with `CABOOSE_BASH_RUN=<tag>` in its environment, which every
 * descendant inherits, and on Linux `/proc/<pid>/environ` shows it. Elsewhere nothing is found and
 * the process-group kill is all there is.
 */

export const RUN_TAG_VAR = 'CABOOSE_BASH_RUN';

const hasProc = fs.existsSync('/proc/self/environ');

function carries(environ: string, needle: string): boolean {
  return environ.startsWith(needle) || environ.includes(`\0${needle}`);
}

/** Pids (not ours) whose environment carries the tag. */
export async function taggedPids(tag: string): Promise<number[]> {
  if (!hasProc) return [];
  const needle = `${RUN_TAG_VAR}=${tag}\0`;
  const names = await fsp.readdir('/proc').catch(() => [] as string[]);
  const found = await Promise.all(
    names.map(async (d) => {
      if (!/^\d+$/.test(d) || Number(d) === process.pid) return 0;
      const env = await fsp.readFile(`/proc/${d}/environ`, 'latin1').catch(() => '');
      return carries(env, needle) ? Number(d) : 0;
    }),
  );
  return found.filter((p) => p > 0);
}

/** taggedPids, synchronously (for the host's exit, when nothing asynchronous runs any more). */
export function taggedPidsSync(tag: string): number[] {
  if (!hasProc) return [];
  const needle = `${RUN_TAG_VAR}=${tag}\0`;
  const out: number[] = [];
  let names: string[] = [];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return out;
  }
  for (const d of names) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (carries(fs.readFileSync(`/proc/${d}/environ`, 'latin1'), needle)) out.push(Number(d));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** Sends `sig` to each pid; returns how many still existed. */
export function signalPids(pids: number[], sig: NodeJS.Signals): number {
  let n = 0;
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
      n++;
    } catch {
      // already gone
    }
  }
  return n;
}

/**
 * The watchdog: a small `sh` started once per host (detached, so it outlives a SIGKILL of the host) that
 * reads "add <pgid> <tag>" and "del <pgid> <tag>" lines on its stdin. When stdin ends (the host is gone,
 * however it died) it SIGKILLs every process group still registered and every process carrying a
 * registered tag. Sandboxed commands need none of this (their PID namespace dies with bwrap, and bwrap
 * with the host); for unsandboxed ones it is what makes them die with the host. Not covered: a process
 * that left both the group and the tag (`env -u CABOOSE_BASH_RUN setsid …`) before the host died.
 */
const WATCHDOG_SCRIPT = [
  'pgs=" "; tags=" "',
  'while read -r op pg tag; do',
  '  case "$op" in',
  '    add) pgs="$pgs$pg "; tags="$tags$tag ";;',
  '    del) pgs=$(printf %s "$pgs" | sed "s/ $pg / /"); tags=$(printf %s "$tags" | sed "s/ $tag / /");;',
  '  esac',
  'done',
  'for pg in $pgs; do kill -KILL -- "-$pg" 2>/dev/null; done',
  'for t in $tags; do',
  '  for f in $(grep -lzx "CABOOSE_BASH_RUN=$t" /proc/[0-9]*/environ 2>/dev/null); do p=${f#/proc/}; kill -KILL "${p%/environ}" 2>/dev/null; done',
  'done',
].join('\n');

let watchdog: import('node:child_process').ChildProcess | null = null;
let watchdogFailed = false;

function watchdogWrite(line: string): void {
  if (watchdogFailed || process.platform === 'win32') return;
  if (!watchdog) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { spawn } = require('node:child_process') as typeof import('node:child_process');
      watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
      watchdog.on('error', () => {
        watchdogFailed = true;
        watchdog = null;
      });
      watchdog.stdin?.on('error', () => {});
      watchdog.unref();
      (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    } catch {
      watchdogFailed = true;
      return;
    }
  }
  watchdog?.stdin?.write(line);
}

/** Registers a command's process group and tag with the watchdog (killed if the host dies first). */
export function guardCommand(pgid: number, tag: string): void {
  watchdogWrite(`add ${pgid} ${tag}\n`);
}

/** The command is over and swept: its pgid may be reused by others, so the watchdog forgets it. */
export function releaseCommand(pgid: number, tag: string): void {
  watchdogWrite(`del ${pgid} ${tag}\n`);
}

/**
 * Every live descendant of `root` (by parent pid, from /proc/<pid>/stat), found before the kill: a child
 * that left the group and the tag (`env -i setsid …`) is still a descendant while its parent lives.
 */
export function descendantsSync(root: number): number[] {
  if (!hasProc) return [];
  const children = new Map<number, number[]>();
  let names: string[] = [];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  for (const d of names) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'latin1');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid);
      if (list) list.push(Number(d));
      else children.set(ppid, [Number(d)]);
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const stack = [root];
  while (stack.length > 0) {
    for (const c of children.get(stack.pop() as number) ?? []) {
      if (c === process.pid || out.includes(c)) continue;
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}
