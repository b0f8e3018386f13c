/**
 * A warm message (the host already running: `:Caboose again` in a Neovim whose first message was answered)
 * laid out on one clock: Neovim's side (the command, the rpc notification out, each host event in, the
 * chat buffer's change), the host's (bench/warm-marks.cjs, preloaded with `node -r`: each stdin read, the
 * model request, the response's first bytes, each stdout write) and the fake server's (the request in, the
 * first chunk out). Neovim's `uv.hrtime`, Node's `process.hrtime` and this process share CLOCK_MONOTONIC,
 * so every mark is in ms after the command. Also Neovim's redraws, markdown parses over 0.5 ms and main-loop
 * gaps ≥ 4 ms (bench/chat-probe.lua's 2 ms probe). Each message is sent 20 ms after the previous reply ended
 * (as bench/chat.ts's warm run; BENCH_WARM_GAP_MS). Ends with each step's median / min / max.
 *
 *   npm run build && node --import tsx bench/warm-timeline.ts [neovims] [messages each]
 *
 * Env: BENCH_TIMELINE_BEFORE_MS (also show what happened this long before the command: the previous reply's
 * end, its highlighting), BENCH_PLUGIN_ROOT (another checkout's plugin, built, e.g. the tree before a change), HOST_NODE_ARGS
 * (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), WINDOWS_FILE (appends each message's `t0 t_first` in ns, to
 * cut a host CPU profile down to the warm paths).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI } from '../test/support/fake-openai';
import { defaultNvim, startNvim } from '../test/support/nvim';
import { loadLine } from './chat';
import { markServerRequests, markedHostNode, runScript } from './timeline-support';

const PROBE = path.join(__dirname, 'chat-probe.lua');

/** Lua wrappers that note the warm path's steps (same clock). */
const LUA_MARKS = `
local uv = vim.uv
_G.caboose_timeline = {}
local function mark(s) table.insert(_G.caboose_timeline, { s, uv.hrtime() }) end
_G.caboose_mark = mark
local rpc = require('caboose.rpc')
local call, on_event = rpc.call, rpc.on_event
rpc.call = function(method, ...) mark('rpc.call ' .. method .. ' (rpcnotify next)'); local r = call(method, ...); mark('rpc.call ' .. method .. ' returned'); return r end
local LT = require('vim.treesitter.languagetree')
local parse = LT.parse
LT.parse = function(self, ...)
  local a = uv.hrtime()
  local r = { parse(self, ...) }
  local ms = (uv.hrtime() - a) / 1e6
  if ms > 0.5 then mark(string.format('LanguageTree:parse %s took %.1f ms', self:lang(), ms)) end
  return unpack(r)
end
vim.api.nvim_create_autocmd('User', { pattern = '*', callback = function(ev) mark('User ' .. ev.match) end })
local rs
vim.api.nvim_set_decoration_provider(vim.api.nvim_create_namespace('caboose_warm_timeline'), {
  on_start = function() rs = uv.hrtime() end,
  on_end = function() if rs then mark(string.format('redraw (%.1f ms)', (uv.hrtime() - rs) / 1e6)) end end,
})
rpc.on_event = function(name, p)
  local a = uv.hrtime()
  mark('event ' .. name .. ' in' .. ((name == 'assistant_delta' and p and p.text) and (' (' .. #p.text .. ' chars)') or ''))
  local r = on_event(name, p)
  mark(string.format('event %s handled (%.2f ms)', name, (uv.hrtime() - a) / 1e6))
  return r
end
`;

async function main(): Promise<void> {
  const neovims = Number(process.argv[2] ?? 3);
  const messages = Number(process.argv[3] ?? 3);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-warm-'));
  const { node, marksDir } = markedHostNode(work, 'warm-marks.cjs', process.env.HOST_NODE_ARGS);
  const fake = await startFakeOpenAI();
  const serverMarks: [string, number][] = [];
  const unmarkServer = markServerRequests(serverMarks, 2);
  const cacheHome = path.join(work, 'cache');
  const firsts: number[][] = [];
  const steps = new Map<string, number[]>();
  const step = (name: string, ms: number | undefined) => {
    if (ms === undefined || Number.isNaN(ms)) return;
    if (!steps.has(name)) steps.set(name, []);
    steps.get(name)!.push(ms);
  };
  try {
    for (let i = 0; i < neovims; i++) {
      const t = await startNvim({
        nvim: defaultNvim(),
        ...(process.env.BENCH_PLUGIN_ROOT ? { pluginRoot: process.env.BENCH_PLUGIN_ROOT } : {}),
        env: { OPENAI_BASE_URL: fake.url, CABOOSE_MODEL: 'fake-model', XDG_CACHE_HOME: cacheHome },
        initLua: `require('caboose').setup({ host = { node = ${JSON.stringify(node)} } })\ndofile(${JSON.stringify(PROBE)})\n${process.env.NO_LUA_MARKS ? "" : LUA_MARKS}`,
      });
      const idle = (tail: string) =>
        t.waitFor(
          () => t.lua<boolean>("return require('caboose').state().state == 'idle' and table.concat(require('caboose.chat').lines(), '\\n'):find(..., 1, true) ~= nil", [tail]),
          `idle after ${tail}`,
          30_000,
        );
      const runs: { t0: number; t_first: number; first_ms: number; stall: number; tl: [string, number][]; server: [string, number][] }[] = [];
      let pid = 0;
      try {
        await t.nvim.uiAttach(200, 50, { ext_linegrid: true, rgb: true });
        await t.lua('caboose_bench.probe_start()');
        await new Promise((r) => setTimeout(r, 150));
        fake.script({ text: 'Zephyr here: this reply arrives in small chunks. Cold done.' });
        await t.lua('caboose_bench.run(...)', ['Caboose hi', 'Zephyr', null]);
        await idle('Cold done.');
        for (let m = 0; m < messages; m++) {
          // As bench/chat.ts's warm run: 20 ms after the previous reply ended (BENCH_WARM_GAP_MS).
          await new Promise((r) => setTimeout(r, Number(process.env.BENCH_WARM_GAP_MS ?? 20)));
          serverMarks.length = 0;
          fake.script({ text: `Quokka${m} again: the second message goes to a host that is already running. Warm done ${m}.` });
          await t.lua(process.env.BENCH_TIMELINE_BEFORE_MS ? 'caboose_bench.run(...)' : '_G.caboose_timeline = {}; caboose_bench.run(...)', ['Caboose again', `Quokka${m}`, null]);
          await idle(`Warm done ${m}.`);
          await new Promise((r) => setTimeout(r, 30));
          const r = await t.lua<{ t0: number; t_first: number; first_ms: number; stall_first_ms: number; tl: [string, number][]; gaps: [number, number][]; pid: number }>(
            "local r = caboose_bench.result(); r.t0 = caboose_bench.t0; r.t_first = caboose_bench.t_first; r.tl = _G.caboose_timeline; r.gaps = caboose_bench.gaps; r.pid = require('caboose.rpc').host_pid(); r.err = caboose_bench.watch_error; return r",
          );
          pid = r.pid;
          if (r.first_ms === undefined) throw new Error(`message ${m + 2}: the first token was not seen in the chat (${String((r as { err?: string }).err ?? 'no watch error')})`);
          if (process.env.WINDOWS_FILE) fs.appendFileSync(process.env.WINDOWS_FILE, `${r.t0} ${r.t_first}\n`);
          runs.push({ t0: r.t0, t_first: r.t_first, first_ms: r.first_ms, stall: r.stall_first_ms, tl: [...r.tl, ...r.gaps.map(([end, len]): [string, number] => [`main-loop gap of ${(len / 1e6).toFixed(1)} ms ends`, end])], server: [...serverMarks] });
        }
      } finally {
        await t.close();
      }
      await new Promise((res) => setTimeout(res, 300)); // the host writes its marks as it exits
      let host: [string, number][] = [];
      try {
        host = JSON.parse(fs.readFileSync(path.join(marksDir, `${pid}.json`), 'utf8')) as [string, number][];
      } catch {
        process.stdout.write('(no host marks written)\n');
      }
      firsts.push(runs.map((r) => r.first_ms));
      runs.forEach((r, m) => {
        const t0 = r.t0 / 1e6;
        const end = r.t_first / 1e6 + 3;
        const from = t0 - Number(process.env.BENCH_TIMELINE_BEFORE_MS ?? 1);
        const rows: [string, number][] = [
          ...r.server,
          ...r.tl.map(([s, ns]): [string, number] => [`nvim: ${s}`, ns / 1e6]),
          ['nvim: FIRST TOKEN in the chat', r.t_first / 1e6],
          ...host.map(([s, ns]): [string, number] => [`host: ${s}`, ns / 1e6]).filter(([, ms]) => ms >= from && ms <= end),
        ];
        rows.sort((a, b) => a[1] - b[1]);
        const at = (re: RegExp, from = t0 - 1) => rows.find(([n, ms]) => re.test(n) && ms >= from)?.[1];
        const notify = at(/nvim: rpc\.call session\.send \(/);
        const stdin = at(/host: stdin data .*session\.send/);
        const req = at(/host: http\.request called/);
        const srv = at(/fake server: request/);
        const chunk = at(/fake server: chunk #1/);
        const headers = at(/host: response headers/);
        const out = at(/host: stdout write .*assistant_delta/);
        const inn = at(/nvim: event assistant_delta in/);
        const first = r.t_first / 1e6;
        const d = (a?: number, b?: number) => (a === undefined || b === undefined ? undefined : b - a);
        step('1 nvim: command → rpcnotify', d(t0, notify));
        step('2 pipe: rpcnotify → host reads it', d(notify, stdin));
        step('3 host: message → HTTP request sent', d(stdin, req));
        step('4 tcp: request → fake server has it', d(req, srv));
        step('5 fake server: request → first chunk', d(srv, chunk));
        step('6 tcp: first chunk → host has the headers', d(chunk, headers));
        step('7 host: headers → first delta written to Neovim', d(headers, out));
        step('8 pipe: delta written → Neovim runs it', d(out, inn));
        step('9 nvim: delta → in the chat buffer', d(inn, first));
        step('= first token', r.first_ms);
        process.stdout.write(`\nneovim ${i} message ${m + 2}: first token ${r.first_ms.toFixed(1)} ms, longest stall ${r.stall.toFixed(1)} ms; ${loadLine()}\n`);
        for (const [s, ms] of rows) if (ms >= from && ms <= end) process.stdout.write(`${(ms - t0).toFixed(2).padStart(8)}  ${s}\n`);
      });
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
    process.stdout.write(`\nper step (ms), median / min / max of ${firsts.flat().length} warm messages:\n`);
    for (const [name, xs] of steps) process.stdout.write(`${name.padEnd(52)} ${med(xs).toFixed(2).padStart(6)} ${Math.min(...xs).toFixed(2).padStart(6)} ${Math.max(...xs).toFixed(2).padStart(6)}\n`);
    process.stdout.write(`\nfirst token per neovim (messages 2..): ${firsts.map((f) => f.map((x) => x.toFixed(1)).join(' ')).join(' | ')}\n`);
  } finally {
    unmarkServer();
    await fake.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

runScript(main);
