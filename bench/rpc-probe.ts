/**
 * A second RPC client for bench/chat.ts, in its own process (so the benchmark's own event loop does not
 * colour the figures): connects to Neovim's server address and calls nvim_eval('1') every 10 ms,
 * recording each round trip — how long a plugin, a statusline or a GUI asking Neovim something waits.
 *
 *   node --import tsx bench/rpc-probe.ts <socket> [intervalMs]
 *
 * Prints `ready` once connected; on `stop` (a line on stdin) or stdin closing, prints one JSON line
 * `{"samples":[[start,ms],...]}` (start: process.hrtime in ns, the same CLOCK_MONOTONIC as Neovim's
 * vim.uv.hrtime(); ms: the round trip) and exits. Stops by itself after 5 minutes.
 */
import { attach } from 'neovim';

const noop = () => undefined;
const silentLogger = { level: 'error', debug: noop, info: noop, warn: noop, error: noop };
const MAX_MS = 5 * 60_000;

async function main(): Promise<void> {
  const socket = process.argv[2];
  const intervalMs = Number(process.argv[3] ?? 10);
  if (!socket) throw new Error('usage: rpc-probe.ts <socket> [intervalMs]');
  const nvim = attach({ socket, options: { logger: silentLogger as never } });
  await nvim.eval('1');
  let stop = false;
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    if (d.includes('stop')) stop = true;
  });
  process.stdin.on('end', () => (stop = true));
  process.stdout.write('ready\n');
  const samples: [number, number][] = [];
  const deadline = Date.now() + MAX_MS;
  while (!stop && Date.now() < deadline) {
    const t0 = process.hrtime.bigint();
    await nvim.eval('1');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    samples.push([Number(t0), ms]);
    if (ms < intervalMs) await new Promise((r) => setTimeout(r, intervalMs - ms));
  }
  process.stdout.write(JSON.stringify({ samples }) + '\n', () => process.exit(0));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
