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
