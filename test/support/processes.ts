import fs from 'node:fs';

/**
 * Is a process alive? A zombie (exited, not yet reaped: PID 1 in a container may never reap orphans)
 * counts as dead. Without /proc, existing is alive.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true;
  }
}

/** Live processes whose command line holds `needle` (e.g. a unique sleep duration, `sleep\0<n>.`). */
export function processesByCmdline(needle: string): number[] {
  const out: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'latin1').includes(needle) && processAlive(Number(d))) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}
