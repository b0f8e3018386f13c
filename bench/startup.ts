/**
 * Host start-up: from Neovim's jobstart() of the host to the answer of its first request (host.ping),
 * measured inside a headless Neovim so it is exactly what a user's first command waits for.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nvimBinaries } from '../test/support/nvim-path';

const REPO = path.resolve(__dirname, '..');

export interface StartupResult {
  runs: number;
  medianMs: number;
  p90Ms: number;
  minMs: number;
  /** The first start, before the host's compiled-code cache exists. */
  firstMs: number;
  nvim: string;
}

const LUA = (entry: string, runs: number) => `
local entry = ${JSON.stringify(entry)}
local out = {}
for i = 1, ${runs} do
  local t0 = vim.uv.hrtime()
  local ch = vim.fn.jobstart({ 'node', entry }, { rpc = true })
  vim.rpcrequest(ch, 'host.ping', vim.empty_dict())
  table.insert(out, (vim.uv.hrtime() - t0) / 1e6)
  vim.fn.jobstop(ch)
  vim.fn.jobwait({ ch }, 2000)
end
io.stdout:write(table.concat(out, ' '))
`;

export function runStartupBenchmark(runs = Number(process.env.BENCH_STARTUP_RUNS ?? 15)): StartupResult {
  const nvim = nvimBinaries()[0];
  const entry = path.join(REPO, 'rplugin', 'node', 'caboose');
  // The host keeps its compiled code in CABOOSE_CACHE_DIR (the plugin sets stdpath('cache')/caboose):
  // one start (not counted) fills it, as a user's first start after installing the plugin does.
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-startup-'));
  try {
    const start = (n: number) =>
      execFileSync(nvim.path, ['--headless', '-u', 'NONE', '-i', 'NONE', '-n', '+lua ' + LUA(entry, n).replace(/\n/g, ' '), '+qa!'], {
        encoding: 'utf8',
        env: { ...process.env, CABOOSE_LOG_FILE: '', CABOOSE_CACHE_DIR: cacheDir },
      });
    const first = Number(start(1).trim());
    const times = start(runs).trim().split(/\s+/).map(Number).sort((a, b) => a - b);
    const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))];
    return { runs: times.length, medianMs: q(0.5), p90Ms: q(0.9), minMs: times[0], firstMs: first, nvim: nvim.version };
  } finally {
    fs.rmSync(cacheDir, { recursive: true, force: true });
  }
}

export function formatStartupTable(r: StartupResult): string {
  const ok = r.medianMs <= 150 ? '✓' : '✗';
  return [
    '| benchmark | median (ms) | p90 (ms) | min (ms) | runs | target |',
    '|---|---:|---:|---:|---:|---:|',
    `| jobstart → first answer (host.ping), Neovim ${r.nvim} | ${r.medianMs.toFixed(1)} ${ok} | ${r.p90Ms.toFixed(1)} | ${r.minMs.toFixed(1)} | ${r.runs} | ≤ 150 |`,
    `| (information) the first start, no compiled-code cache yet | ${r.firstMs.toFixed(1)} | — | — | 1 | — |`,
  ].join('\n');
}

if (require.main === module) {
  process.stdout.write(formatStartupTable(runStartupBenchmark()) + '\n');
}
