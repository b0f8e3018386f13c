/**
 * One cold `:Caboose hi` laid out on one clock (issue 24): what Neovim's main loop did (each gap ≥ 4 ms the
 * bench's 2 ms probe saw, the markdown queries, `jobstart()`), what the host did (bench/host-marks.cjs,
 * preloaded with `node -r`: its bootstrap, the bundle's compile, the first stdin data, better-sqlite3, the
 * sandbox trial, fetch, the first frame to Neovim) and when the fake server got the request. Neovim's
 * `uv.hrtime`, Node's `process.hrtime` and this process share CLOCK_MONOTONIC, so every mark is in ms after
 * the command. The first run fills the compiled-code cache and is not printed.
 *
 *   npm run build && node --import tsx bench/cold-timeline.ts [runs]
 *   (BENCH_HOST_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/p': more options for the host's node)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI } from '../test/support/fake-openai';
import { defaultNvim, startNvim } from '../test/support/nvim';
import { loadLine } from './chat';
import { markServerRequests, markedHostNode, runScript } from './timeline-support';

const PROBE = path.join(__dirname, 'chat-probe.lua');

/** Lua wrappers that note what the cold path runs (same clock). */
const LUA_MARKS = `
local uv = vim.uv
_G.caboose_timeline = {}
local function mark(s) table.insert(_G.caboose_timeline, { s, uv.hrtime() }) end
local function timed(name, fn)
  return function(...)
    local a = uv.hrtime()
    local r = fn(...)
    mark(string.format('%s took %.1f ms', name(...), (uv.hrtime() - a) / 1e6))
    return r
  end
end
vim.fn.jobstart = timed(function() return 'jobstart()' end, vim.fn.jobstart)
vim.treesitter.query.get = timed(function(l, n) return 'query.get ' .. l .. ' ' .. n end, vim.treesitter.query.get)
vim.treesitter.start = timed(function() return 'treesitter.start' end, vim.treesitter.start)
vim.api.nvim_create_autocmd('FileType', { pattern = 'markdown', callback = function() mark('FileType markdown') end })
`;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 3);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-timeline-'));
  const { node, marksDir } = markedHostNode(work, 'host-marks.cjs', process.env.BENCH_HOST_NODE_ARGS);
  const fake = await startFakeOpenAI();
  const serverMarks: [string, number][] = [];
  const unmarkServer = markServerRequests(serverMarks); // the fake server's own view: when the request arrived
  const cacheHome = path.join(work, 'cache');
  const kept = path.join(work, 'kept-data');
  try {
    for (let i = 0; i <= runs; i++) {
      serverMarks.length = 0;
      // Each counted run starts from the data folder the uncounted first run left (its session database, its
      // remembered sandbox trial), as a user's every start but the very first. BENCH_EMPTY_DATA=1: empty.
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-nvim-'));
      const dataDir = path.join(home, 'data', 'nvim', 'caboose');
      fs.mkdirSync(path.dirname(dataDir), { recursive: true });
      if (!process.env.BENCH_EMPTY_DATA && fs.existsSync(kept)) fs.cpSync(kept, dataDir, { recursive: true });
      else fs.mkdirSync(dataDir, { recursive: true });
      const t = await startNvim({
        home,
        nvim: defaultNvim(),
        env: { OPENAI_BASE_URL: fake.url, CABOOSE_MODEL: 'fake-model', XDG_CACHE_HOME: cacheHome },
        initLua: `require('caboose').setup({ host = { node = ${JSON.stringify(node)} } })\ndofile(${JSON.stringify(PROBE)})\n${LUA_MARKS}`,
      });
      try {
        await t.nvim.uiAttach(200, 50, { ext_linegrid: true, rgb: true });
        await t.lua('caboose_bench.probe_start()');
        await new Promise((r) => setTimeout(r, 150));
        fake.script({ text: 'Zephyr here: this reply arrives in small chunks. Cold done.' });
        await t.lua('caboose_bench.run(...)', ['Caboose hi', 'Zephyr', null]);
        await t.waitFor(() => t.lua<boolean>('return caboose_bench.t_first ~= nil'), 'the first token', 30_000);
        await new Promise((r) => setTimeout(r, 300));
        const r = await t.lua<{ t0: number; t_first: number; t_ret: number; first_ms: number; stall_first_ms: number; gaps: [number, number, number?][]; tl: [string, number][]; pid: number }>(
          "local r = caboose_bench.result(); r.t0 = caboose_bench.t0; r.t_first = caboose_bench.t_first; r.t_ret = caboose_bench.t_returned; r.gaps = caboose_bench.gaps; r.tl = _G.caboose_timeline; r.pid = require('caboose.rpc').host_pid(); return r",
        );
        await t.close();
        if (i === 0) {
          // The host exits once Neovim has closed its stdin: keep its data folder only after it has.
          for (let n = 0; n < 200 && alive(r.pid); n++) await new Promise((res) => setTimeout(res, 25));
          fs.cpSync(dataDir, kept, { recursive: true });
        }
        fs.rmSync(home, { recursive: true, force: true });
        if (i === 0) continue;
        await new Promise((res) => setTimeout(res, 200)); // the host writes its marks as it exits
        const t0 = r.t0 / 1e6;
        const rows: [string, number][] = [
          ...serverMarks,
          ...r.tl.map(([s, ns]): [string, number] => [`nvim: ${s}`, ns / 1e6]),
          ['nvim: the command returned', r.t_ret / 1e6],
          ['nvim: FIRST TOKEN in the chat', r.t_first / 1e6],
          ...r.gaps
            .filter(([end]) => end / 1e6 >= t0 && end / 1e6 <= r.t_first / 1e6 + 5)
            .map(([end, len, cpu]): [string, number] => [`nvim: main-loop gap of ${(len / 1e6).toFixed(1)} ms ends (Neovim's CPU in it: ${(cpu ?? NaN).toFixed(1)} ms)`, end / 1e6]),
        ];
        try {
          const host = JSON.parse(fs.readFileSync(path.join(marksDir, `${r.pid}.json`), 'utf8')) as [string, number][];
          rows.push(...host.map(([s, ns]): [string, number] => [`host: ${s}`, ns / 1e6]));
        } catch {
          rows.push(['host: (no marks written)', t0]);
        }
        rows.sort((a, b) => a[1] - b[1]);
        process.stdout.write(`\nrun ${i}: first token ${r.first_ms.toFixed(1)} ms, longest stall ${r.stall_first_ms.toFixed(1)} ms; ${loadLine()}\n`);
        for (const [s, ms] of rows) if (ms - t0 >= -1 && ms - t0 < 2000) process.stdout.write(`${(ms - t0).toFixed(1).padStart(8)}  ${s}\n`);
      } catch (err) {
        await t.close().catch(() => undefined);
        throw err;
      }
    }
  } finally {
    unmarkServer();
    await fake.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

runScript(main);
