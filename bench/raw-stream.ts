/**
 * The baseline for bench/chat.ts's streaming figures: the same chat-completions SSE stream consumed by a
 * plain Node HTTP client (node:http, events split on blank lines, each `data:` JSON-parsed and its
 * delta.content appended), in its own process like the host. Timed from the request to `[DONE]`.
 *
 *   node --import tsx bench/raw-stream.ts <base url ending in /v1>
 *
 * Prints one JSON line: `{"ms":…, "firstMs":…, "chars":…, "cpuMs":…}` (firstMs: first non-empty content delta;
 * cpuMs: this process's CPU time from the request to `[DONE]`, read as the host's is read by bench/chat-probe.lua:
 * the scheduler's run time of every thread, in nanoseconds, from /proc/self/task/<tid>/schedstat (where it is
 * missing: process.cpuUsage(), user + system); cpuUsageMs: process.cpuUsage()'s figure, for comparison).
 */
import { plainSseRead } from './plain-sse';
import { threadsCpuMs } from './thread-cpu';

function main(): void {
  const base = process.argv[2];
  if (!base) throw new Error('usage: raw-stream.ts <base url>');
  const t0 = process.hrtime.bigint();
  const sched0 = threadsCpuMs();
  const cpu0 = process.cpuUsage();
  const since = () => Number(process.hrtime.bigint() - t0) / 1e6;
  let firstMs: number | undefined;
  let text = '';
  const timer = setTimeout(() => {
    process.stderr.write('raw-stream: no [DONE] after 120 s\n');
    process.exit(1);
  }, 120_000);
  const finish = () => {
    clearTimeout(timer);
    const cpu = process.cpuUsage(cpu0);
    const sched1 = threadsCpuMs();
    const cpuUsageMs = (cpu.user + cpu.system) / 1000;
    const cpuMs = sched0 !== undefined && sched1 !== undefined ? sched1 - sched0 : cpuUsageMs;
    process.stdout.write(JSON.stringify({ ms: since(), firstMs, chars: text.length, cpuMs, cpuUsageMs }) + '\n', () => process.exit(0));
  };
  plainSseRead(base, (delta) => {
    if (firstMs === undefined) firstMs = since();
    text += delta;
  }).then(finish, (err: Error) => {
    process.stderr.write(`raw-stream: ${err.message}\n`);
    process.exit(1);
  });
}

main();
