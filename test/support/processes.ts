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
