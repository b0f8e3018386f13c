/** CPU time of a process as the bench reads it: the scheduler's run time of every thread, in nanoseconds. */
import fs from 'node:fs';

/** CPU time (ms) of every thread of process `pid` (/proc/<pid>/task/<tid>/schedstat); undefined without /proc. */
export function threadsCpuMs(pid: number | 'self' = 'self'): number | undefined {
  try {
    let ns = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
    return ns / 1e6;
  } catch {
    return undefined;
  }
}
