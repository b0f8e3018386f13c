/**
 * Chat benchmarks (issue 8): what the user feels when talking to the agent, each figure beside a
 * baseline measured in the same run.
 *
 * 1. Cold `:Caboose hi` → first token, in a fresh headless Neovim (0.12) whose host is not started yet,
 *    with the longest editor stall meanwhile. Baseline: `node -e 0` (median of as many runs). Also the
 *    warm figure: a second message in the same Neovim. The baseline runs are interleaved with the cold
 *    runs (one before each), so a busy moment on a shared machine weighs on both.
 * 2. Streaming, two shapes: a burst (an 80,000-character reply in 10,000 chunks with no delay) and a paced
 *    reply (20,000 characters in 500 chunks 10 ms apart), each (a) into a fresh chat, (b) into
 *    a chat already holding ~400 KB of markdown (~100k tokens). Time until the last characters are in the
 *    chat buffer vs the same SSE stream consumed by a plain Node HTTP client (bench/raw-stream.ts), and
 *    the editor's responsiveness meanwhile: a second RPC client (bench/rpc-probe.ts, its own process)
 *    calling nvim_eval('1') every 10 ms.
 *
 * Every time is taken inside Neovim (bench/chat-probe.lua: t0 just before the command runs, the chat
 * buffer's text watched with nvim_buf_attach), so the measuring client's round trips are not counted.
 * "First token" and "fully rendered" mean: that text is in `require('caboose.chat').buf()`.
 * Neovim has a UI attached (this process, 200×50, ext_linegrid) so it redraws as a real editor does
 * (BENCH_CHAT_UI=0 to leave it off). Node, Neovim and luv share CLOCK_MONOTONIC (uv_hrtime), so the
 * probe's samples are cut to exactly the measured window.
 *
 *   npm run build && node --import tsx bench/chat.ts [cold|stream]
 *
 * Env: BENCH_CHAT_RUNS (cold runs, each a fresh Neovim; default 10), BENCH_STREAM_RUNS (runs per stream
 * case; default 5), BENCH_STREAM_CASES (a comma list of burst-fresh, burst-long, paced-fresh, paced-long, or burst / paced
 * for both cases of a shape; default all), BENCH_NODE (node executable for the host and the baseline; default `node`),
 * BENCH_STREAM_FIRST_MS (the fake server holds each stream run's first token that long after the command, as a
 * hosted model's wait for it; the measured window then includes the wait; default 0).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { startFakeOpenAI, type FakeOpenAI, type FakeTextReply } from '../test/support/fake-openai';
import { defaultNvim, REPO_ROOT, startNvim, type TestNvim } from '../test/support/nvim';
import { threadsCpuMs } from './thread-cpu';

const NODE = process.env.BENCH_NODE ?? 'node';
export const UI = process.env.BENCH_CHAT_UI !== '0';
export const PROBE_LUA = path.join(__dirname, 'chat-probe.lua');
/** A Lua file run after the probe (instrumentation while investigating, e.g. bench/chat-turns.lua; not part of the figures). */
const DIAG = process.env.BENCH_CHAT_DIAG ? path.resolve(process.env.BENCH_CHAT_DIAG) : undefined;
/** BENCH_STREAM_FIRST_MS: how long a stream run's first token is held after the command (0: not held). */
const FIRST_MS = Number(process.env.BENCH_STREAM_FIRST_MS ?? 0);
const TSX = ['--import', 'tsx'];
/** BENCH_HOST_NICE: an experiment — the warm host's threads reniced to this (0: left alone). */
const HOST_NICE = Number(process.env.BENCH_HOST_NICE ?? 0);

/* ------------------------------------------------------------------------------------------------
 * Statistics
 * ---------------------------------------------------------------------------------------------- */

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank quantile (p90 of 10 runs is the 9th). */
export function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/* ------------------------------------------------------------------------------------------------
 * Neovim under measurement
 * ---------------------------------------------------------------------------------------------- */

export interface LuaResult {
  t0: number;
  t_first?: number;
  t_done?: number;
  first_ms?: number;
  done_ms?: number;
  returned_ms?: number;
  stall_first_ms?: number;
  /** Neovim's CPU time during that longest stall (the rest of it: waiting for a CPU). */
  stall_first_cpu_ms?: number;
  /** The most CPU time Neovim spent inside one gap (≥ 4 ms) before the first token. */
  max_gap_cpu_first_ms?: number;
  stall_done_ms?: number;
  /** The main thread's CPU time in that longest stall, and its wait for a CPU (ms, /proc/thread-self/schedstat). */
  stall_done_run_ms?: number;
  stall_done_wait_ms?: number;
  /** When the chat had been drawn with the whole reply (its highlighter done parsing), ms after t0 (bench/chat-probe.lua). */
  settled_ms?: number;
  t_settled?: number;
  /** The most main-thread CPU time in one main-loop gap of the window (ms): the heaviest turn. */
  max_gap_run_ms?: number;
}

/**
 * `env.BENCH_DATA_CARRY` (set by coldEnv): a folder holding the data folder (stdpath('data')/caboose: the
 * session database, the remembered sandbox trial) that an earlier start left; each fresh Neovim starts
 * with a copy of it, as a user's every start but the very first finds the one the last start left. Without
 * it the data folder starts empty (a user's first start ever). `keepDataTo`: where the data folder is
 * copied once this Neovim and its host have exited (it then becomes the next starts' BENCH_DATA_CARRY).
 */
export async function openNvim(fake: FakeOpenAI, env: Record<string, string> = {}, keepDataTo?: string): Promise<TestNvim> {
  const setup = NODE === 'node' ? '{}' : `{ host = { node = ${JSON.stringify(NODE)} } }`;
  const { BENCH_DATA_CARRY: carry, ...nvimEnv } = env;
  let home: string | undefined;
  if (carry || keepDataTo) {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-nvim-'));
    const data = path.join(home, 'data', 'nvim', 'caboose');
    fs.mkdirSync(path.dirname(data), { recursive: true });
    if (carry && fs.existsSync(carry)) fs.cpSync(carry, data, { recursive: true });
  }
  const t = await startNvim({
    ...(home ? { home } : {}),
    nvim: defaultNvim(),
    env: { OPENAI_BASE_URL: fake.url, CABOOSE_MODEL: 'fake-model', ...nvimEnv },
    initLua: `require('caboose').setup(${setup})\ndofile(${JSON.stringify(PROBE_LUA)})${DIAG ? `\ndofile(${JSON.stringify(DIAG)})` : ''}`,
  });
  if (home) {
    const close = t.close.bind(t);
    const h = home;
    t.close = async () => {
      const pid = keepDataTo ? await t.lua<number | null>("return require('caboose.rpc').host_pid()").catch(() => null) : null;
      await close();
      if (keepDataTo) {
        // The host exits once Neovim has closed its stdin: copy the database only after it has.
        for (let i = 0; pid && i < 200 && isAlive(pid); i++) await sleep(25);
        fs.rmSync(keepDataTo, { recursive: true, force: true });
        fs.cpSync(path.join(h, 'data', 'nvim', 'caboose'), keepDataTo, { recursive: true });
      }
      fs.rmSync(h, { recursive: true, force: true });
    };
  }
  return withUi(t);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Attaches this process as Neovim's UI (200×50, ext_linegrid) unless BENCH_CHAT_UI=0; closes `t` on failure. */
export async function withUi(t: TestNvim): Promise<TestNvim> {
  try {
    if (UI) await t.nvim.uiAttach(200, 50, { ext_linegrid: true, rgb: true });
  } catch (err) {
    await t.close();
    throw err;
  }
  return t;
}

/** Runs an Ex command inside Neovim with t0 taken just before it, watching the chat for `first`/`done`. */
async function run(t: TestNvim, cmd: string, first: string, done?: string): Promise<void> {
  await t.lua('caboose_bench.run(...)', [cmd, first, done ?? null]);
}

export async function result(t: TestNvim): Promise<LuaResult> {
  return t.lua<LuaResult>('local r = caboose_bench.result(); r.t0 = caboose_bench.t0; r.t_first = caboose_bench.t_first; r.t_done = caboose_bench.t_done; r.t_settled = caboose_bench.t_settled; return r');
}

export async function waitSeen(t: TestNvim, what: 't_first' | 't_done', timeoutMs: number): Promise<void> {
  await t.waitFor(() => t.lua<boolean>(`assert(not caboose_bench.watch_error, caboose_bench.watch_error); return caboose_bench.${what} ~= nil`), what === 't_first' ? 'the first token in the chat' : 'the whole reply in the chat', timeoutMs);
}

/** Waits until the reply's `tail` is in the chat and the agent is idle again. */
async function waitIdle(t: TestNvim, tail: string, timeoutMs = 60_000): Promise<void> {
  await t.waitFor(
    () => t.lua<boolean>("return require('caboose').state().state == 'idle' and table.concat(require('caboose.chat').lines(), '\\n'):find(..., 1, true) ~= nil", [tail]),
    `idle after "${tail}"`,
    timeoutMs,
  );
}

/* ------------------------------------------------------------------------------------------------
 * 1. Cold :Caboose → first token
 * ---------------------------------------------------------------------------------------------- */

export const COLD_REPLY = 'Zephyr here: this reply arrives in small chunks, a few words at a time, the way a real model streams it. Cold done.';
export const WARM_REPLY = 'Quokka again: the second message goes to a host that is already running. Warm done.';

export interface ColdResult {
  runs: number;
  nodeMs: number[];
  coldFirstMs: number[];
  coldStallMs: number[];
  coldStallCpuMs: number[];
  coldMaxGapCpuMs: number[];
  coldReturnMs: number[];
  warmFirstMs: number[];
  warmStallMs: number[];
  /** The very first start (no compiled-code cache yet, as after installing or updating the plugin). */
  firstEverMs: number;
  /** Cold first token with an empty data folder (a user's first start ever, the code cache filled). */
  emptyDataFirstMs: number[];
  typedFirstMs: number[];
  typedStallMs: number[];
  typedStallCpuMs: number[];
  typedMaxGapCpuMs: number[];
  nvim: string;
}

/** One `node -e 0`, timed around spawnSync. */
export function nodeOnce(): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(NODE, ['-e', '0']);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${NODE} -e 0 failed: ${r.stderr}`);
  return ms;
}

/** A fresh Neovim: cold `:Caboose hi` → first token (`COLD_REPLY`), then a warm second message (`WARM_REPLY`). */
export async function coldAndWarm(fake: FakeOpenAI, env: Record<string, string>): Promise<{ cold: LuaResult; warm: LuaResult }>;
export async function coldAndWarm(fake: FakeOpenAI, env: Record<string, string>, withWarm: false): Promise<{ cold: LuaResult }>;
export async function coldAndWarm(fake: FakeOpenAI, env: Record<string, string>, withWarm = true): Promise<{ cold: LuaResult; warm?: LuaResult }> {
  const t = await openNvim(fake, env);
  try {
    await t.lua('caboose_bench.probe_start()');
    await sleep(100); // let start-up settle; the probe is running
    fake.script({ text: COLD_REPLY });
    await run(t, 'Caboose hi', 'Zephyr');
    await waitSeen(t, 't_first', 30_000);
    await waitIdle(t, 'Cold done.');
    await sleep(20);
    const cold = await result(t);
    if (!withWarm) return { cold };

    fake.script({ text: WARM_REPLY });
    await run(t, 'Caboose again', 'Quokka');
    await waitSeen(t, 't_first', 30_000);
    await waitIdle(t, 'Warm done.');
    await sleep(20);
    const warm = await result(t);
    await t.lua('caboose_bench.probe_stop()');
    return { cold, warm };
  } finally {
    await t.close();
  }
}

/**
 * The environment of the cold runs: one compiled-code cache folder shared by every fresh Neovim (as a
 * user's sessions share stdpath('cache')), filled by a first start that is not counted (its time is
 * returned). `dispose` removes the folder.
 */
export async function coldEnv(fake: FakeOpenAI): Promise<{ env: Record<string, string>; firstEverMs: number; dispose: () => void }> {
  const cacheHome = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-cache-'));
  const env: Record<string, string> = { XDG_CACHE_HOME: cacheHome, ...(process.env.BENCH_HOST_UNBUNDLED ? { CABOOSE_HOST_UNBUNDLED: '1' } : {}) };
  const dispose = () => fs.rmSync(cacheHome, { recursive: true, force: true });
  // The data folder this first start leaves (its session database, its remembered sandbox trial) is where
  // every counted start begins, as a user's every start but the very first (BENCH_NO_DATA_CARRY=1: empty).
  const kept = path.join(cacheHome, 'kept-data');
  let firstEverMs = NaN;
  try {
    const p = await openNvim(fake, env, kept);
    try {
      fake.script({ text: COLD_REPLY });
      await run(p, 'Caboose hi', 'Zephyr');
      await waitSeen(p, 't_first', 30_000);
      await waitIdle(p, 'Cold done.');
      firstEverMs = (await result(p)).first_ms!;
    } finally {
      await p.close();
    }
    if (!process.env.BENCH_NO_DATA_CARRY) env.BENCH_DATA_CARRY = kept;
    return { env, firstEverMs, dispose };
  } catch (err) {
    dispose();
    throw err;
  }
}

export async function runColdBenchmark(runs = Number(process.env.BENCH_CHAT_RUNS ?? 10)): Promise<ColdResult> {
  const res: ColdResult = { runs, nodeMs: [], coldFirstMs: [], coldStallMs: [], coldStallCpuMs: [], coldMaxGapCpuMs: [], coldReturnMs: [], warmFirstMs: [], warmStallMs: [], firstEverMs: NaN, emptyDataFirstMs: [], typedFirstMs: [], typedStallMs: [], typedStallCpuMs: [], typedMaxGapCpuMs: [], nvim: defaultNvim().version };
  nodeOnce(); // warm the page cache
  const fake = await startFakeOpenAI();
  // Every Neovim here is fresh, but they share one cache folder (stdpath('cache')), as a user's
  // Neovim sessions do: the host keeps its compiled code there. A first start (not counted) fills it.
  let dispose = () => {};
  try {
    const ce = await coldEnv(fake);
    const env = ce.env;
    dispose = ce.dispose;
    res.firstEverMs = ce.firstEverMs;
    for (let i = 0; i < runs; i++) {
      // The baseline is interleaved with the runs, so a busy moment on the machine hits both.
      res.nodeMs.push(nodeOnce());
      const { cold, warm } = await coldAndWarm(fake, env);
      // The same start with an empty data folder: the session database created (its migrations run), the
      // sandbox trial run and waited for, as on a user's very first start.
      const { BENCH_DATA_CARRY: _kept, ...emptyEnv } = env;
      res.emptyDataFirstMs.push((await coldAndWarm(fake, emptyEnv, false)).cold.first_ms!);
      res.coldFirstMs.push(cold.first_ms!);
      res.coldStallMs.push(cold.stall_first_ms!);
      res.coldStallCpuMs.push(cold.stall_first_cpu_ms ?? NaN);
      res.coldMaxGapCpuMs.push(cold.max_gap_cpu_first_ms ?? NaN);
      res.coldReturnMs.push(cold.returned_ms!);
      res.warmFirstMs.push(warm.first_ms!);
      res.warmStallMs.push(warm.stall_first_ms!);
      // As a user starts it: the command typed at ~12 keys a second, timed from its <CR>.
      const u = await openNvim(fake, env);
      try {
        await u.lua('caboose_bench.probe_start()');
        await sleep(100);
        fake.script({ text: COLD_REPLY });
        for (const key of ':Caboose hi') {
          await u.nvim.input(key === ' ' ? '<Space>' : key);
          await sleep(TYPING_MS);
        }
        await u.lua('caboose_bench.arm(...)', ['Zephyr', null]);
        await u.nvim.input('<CR>');
        await waitSeen(u, 't_first', 30_000);
        await waitIdle(u, 'Cold done.');
        await sleep(20);
        const typed = await result(u);
        res.typedFirstMs.push(typed.first_ms!);
        res.typedStallMs.push(typed.stall_first_ms!);
        res.typedStallCpuMs.push(typed.stall_first_cpu_ms ?? NaN);
        res.typedMaxGapCpuMs.push(typed.max_gap_cpu_first_ms ?? NaN);
        await u.lua('caboose_bench.probe_stop()');
      } finally {
        await u.close();
      }
    }
  } finally {
    await fake.close();
    dispose();
  }
  return res;
}

/** Pause between typed keys (a fast typist: ~12 keys a second). */
const TYPING_MS = 80;

const ok = (pass: boolean) => (pass ? ' ✓' : ' ✗');
const f1 = (x: number) => x.toFixed(1);

/**
 * `7.9 (6.1; 6.5), …`: each run's longest stall, Neovim's CPU time inside it and the most CPU Neovim spent
 * inside any one gap of the run (its heaviest turn, whatever the load made of the gaps' lengths); spans
 * the three time columns.
 */
const perRun = (ms: number[], cpu: number[], maxCpu: number[]) => `${ms.map((x, i) => `${f1(x)} (${f1(cpu[i])}; ${f1(maxCpu[i])})`).join(', ')} | | `;

export function formatColdTable(r: ColdResult): string {
  const node = median(r.nodeMs);
  const max = (xs: number[]) => Math.max(...xs);
  const cols = (xs: number[]) => `${f1(median(xs))} | ${f1(quantile(xs, 0.9))} | ${f1(max(xs))}`;
  const first = (name: string, xs: number[], target?: number) => {
    const ratio = median(xs) / node;
    return `| ${name} | ${cols(xs)} | ${f1(node)} | ${ratio.toFixed(2)}×${target === undefined ? '' : ok(ratio <= target)} | ${target === undefined ? '—' : `≤ ${target}× \`node -e 0\``} |`;
  };
  const stall = (name: string, xs: number[]) => `| ${name} | ${cols(xs)} | — | — | ≤ 16 ms (worst run${ok(max(xs) <= 16)}) |`;
  return [
    `Neovim ${r.nvim}${UI ? ' (UI attached)' : ''}, ${r.runs} runs, each a fresh Neovim and host; baseline \`${NODE} -e 0\`: median of ${r.nodeMs.length} runs (p90 ${f1(quantile(r.nodeMs, 0.9))} ms).`,
    '',
    '| benchmark | median (ms) | p90 (ms) | worst (ms) | baseline `node -e 0` (ms) | ratio (median) | target |',
    '|---|---:|---:|---:|---:|---:|---|',
    first('cold `:Caboose hi` → first token in the chat (data folder kept from an earlier start)', r.coldFirstMs, 1.5),
    first('(information) cold `:Caboose hi` → first token, first start ever: empty data folder (database created, sandbox trial waited for)', r.emptyDataFirstMs),
    stall('longest editor stall, cold `:Caboose hi` → first token', r.coldStallMs),
    first('warm (second message, same Neovim) → first token', r.warmFirstMs),
    stall('longest editor stall, warm → first token', r.warmStallMs),
    first(`typed \`:Caboose hi\` (${TYPING_MS} ms a key, fresh Neovim), <CR> → first token`, r.typedFirstMs, 1.5),
    stall('longest editor stall, typed <CR> → first token', r.typedStallMs),
    `| (information) cold \`:Caboose hi\` returns to the editor | ${cols(r.coldReturnMs)} | — | — | — |`,
    `| (information) longest stall per run, cold (Neovim's CPU in it; most CPU in one gap) | ${perRun(r.coldStallMs, r.coldStallCpuMs, r.coldMaxGapCpuMs)} | — | — | — |`,
    `| (information) longest stall per run, typed (Neovim's CPU in it; most CPU in one gap) | ${perRun(r.typedStallMs, r.typedStallCpuMs, r.typedMaxGapCpuMs)} | — | — | — |`,
    `| (information) the very first start, no compiled-code cache and an empty data folder (one run) | ${f1(r.firstEverMs)} | — | — | ${f1(node)} | ${(r.firstEverMs / node).toFixed(2)}× | — |`,
  ].join('\n');
}

/* ------------------------------------------------------------------------------------------------
 * 2. Streaming throughput and stalls
 * ---------------------------------------------------------------------------------------------- */

/** How a reply is streamed: its size, the chunk size and the pause between chunks. */
export interface StreamShape {
  label: string;
  chars: number;
  chunkChars: number;
  delayMs: number;
}
/** As fast as the server can send: the worst case for the editor (and a 2-core machine's CPU). */
export const BURST: StreamShape = { label: 'burst', chars: 80_000, chunkChars: 8, delayMs: 0 };
/** Still faster than any hosted model (≈ 1,000 tokens a second), but paced like one. */
const PACED: StreamShape = { label: 'paced', chars: 20_000, chunkChars: 40, delayMs: 10 };
export const STREAM_FIRST = 'Zephyr';
export const STREAM_MARKER = 'END-OF-STREAM-9f3c';
const FILL_BYTES = 400_000;

const WORDS = (
  'the agent reads each file before it edits it and keeps your buffers in step with the disk so that ' +
  'nothing you typed is lost when a tool runs while you keep working in another window of the editor'
).split(' ');

/** Prose of exactly n characters, wrapped near 76 columns, ending with a blank line. */
function prose(n: number, seed: number): string {
  let s = '';
  let col = 0;
  for (let i = seed; s.length < n; i++) {
    const w = WORDS[(i * 7) % WORDS.length];
    if (col + w.length + 1 > 76) {
      s += '\n';
      col = 0;
    } else if (col > 0) {
      s += ' ';
      col++;
    }
    s += w;
    col += w.length;
  }
  return s.slice(0, n - 2).replace(/\s+$/, (m) => 'x'.repeat(m.length)) + '\n\n';
}

/** A fenced TypeScript block of exactly n characters (n ≥ 40), followed by a blank line. */
function code(n: number, seed: number): string {
  const open = '```ts\n';
  const close = '\n```\n\n';
  let body = '';
  for (let i = seed; body.length < n; i++) body += `const value${i} = compute(${i}, "item-${(i * 7919) % 100003}");\n`;
  return open + body.slice(0, n - open.length - close.length).replace(/\n$/, ';') + close;
}

/** A bullet list of exactly n characters, followed by a blank line. */
function list(n: number, seed: number): string {
  let s = '';
  for (let i = seed; s.length < n; i++) s += `- step ${i}: ${WORDS[i % WORDS.length]} ${WORDS[(i + 3) % WORDS.length]} ${WORDS[(i + 5) % WORDS.length]}\n`;
  return s.slice(0, n - 2).replace(/\n$/, '.') + '\n\n';
}

/** The streamed reply: exactly `chars` characters of markdown, starting with the first token, ending with the marker. */
export function streamText(chars = BURST.chars): string {
  const head = `${STREAM_FIRST} streaming: a long answer.\n\n`;
  const tail = `All of it arrived: ${STREAM_MARKER}`;
  let body = '';
  const kinds = [prose, code, prose, list];
  for (let i = 0; body.length < chars - head.length - tail.length; i++) {
    const left = chars - head.length - tail.length - body.length;
    const n = left < 1600 ? left : 800;
    body += (left < 1600 ? prose : kinds[i % kinds.length])(n, i * 13);
  }
  const text = head + body + tail;
  if (text.length !== chars) throw new Error(`stream text is ${text.length} chars`);
  return text;
}

/** ~400 KB of earlier conversation (about 100k tokens at ~4 characters a token). */
export function fillText(): string {
  let s = '';
  for (let i = 0; s.length < FILL_BYTES; i++) {
    s += `## You\n\n${prose(200, i)}## Caboose\n\n${prose(1200, i + 1)}${code(1000, i * 50)}${list(600, i)}${prose(900, i + 2)}`;
  }
  return s;
}

function streamReply(text: string, shape: StreamShape): FakeTextReply {
  const chunks = text.match(new RegExp(`[\\s\\S]{1,${shape.chunkChars}}`, 'g')) ?? [];
  return { text, chunks, delayMs: shape.delayMs };
}

const chunkCount = (shape: StreamShape): number => Math.ceil(shape.chars / shape.chunkChars);

/** One JSON line from a child process started with tsx, within timeoutMs. */
function childJson<T>(script: string, args: string[], timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const p = spawn(NODE, [...TSX, path.join(__dirname, script), ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').pop()!) as T);
      else reject(new Error(`${script} exited ${code}: ${err}`));
    });
  });
}

interface Probe {
  /** The probe process's id (its CPU time is read from /proc). */
  pid?: number;
  /** Stops the probe: every sample as [start (hrtime ns), latency ms]. */
  stop(): Promise<[number, number][]>;
}

/** Starts bench/rpc-probe.ts against Neovim's server address; resolves once it is sampling. */
function startProbe(socket: string): Promise<Probe> {
  return new Promise((resolve, reject) => {
    const p = spawn(NODE, [...TSX, path.join(__dirname, 'rpc-probe.ts'), socket, '10'], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`rpc-probe did not start: ${err}`));
    }, 30_000);
    const lines = readline.createInterface({ input: p.stdout });
    let done: ((v: [number, number][]) => void) | undefined;
    lines.on('line', (line) => {
      if (line === 'ready') {
        clearTimeout(timer);
        resolve({
          pid: p.pid,
          stop: () =>
            new Promise((res, rej) => {
              done = res;
              const kill = setTimeout(() => {
                p.kill('SIGKILL');
                rej(new Error('rpc-probe did not stop'));
              }, 30_000);
              p.once('exit', () => clearTimeout(kill));
              p.stdin.end('stop\n');
            }),
        });
      } else if (line.startsWith('{')) {
        done?.((JSON.parse(line) as { samples: [number, number][] }).samples);
      }
    });
    p.on('exit', (code) => {
      if (code !== 0) reject(new Error(`rpc-probe exited ${code}: ${err}`));
    });
  });
}

export interface StreamCase {
  name: string;
  shape: StreamShape;
  /** Chat size (characters) before the reply. */
  chatChars: number[];
  renderedMs: number[];
  rawMs: number[];
  firstMs: number[];
  rawFirstMs: number[];
  /** nvim_eval('1') round trips of the second client during [t0, rendered]. */
  evalMs: number[];
  /** Longest main-loop gap seen inside Neovim during [t0, rendered], per run. */
  stallMs: number[];
  /** Per run, the longest stall's main-thread CPU time and its wait for a CPU (ms): the rest of it was blocked. */
  stallRunMs?: number[];
  stallWaitMs?: number[];
  nvimCpuMs: number[];
  hostCpuMs: number[];
  /** CPU time (user + system) of the plain Node client reading the same stream (its whole process). */
  rawCpuMs: number[];
  /**
   * The bench's own processes over the same window (from just before the command to the reply seen
   * whole): this process (the fake server, the UI client decoding Neovim's redraws, its polls) and the
   * probe client. They compete with Neovim and the host for the 2 cores; a real setup has a remote
   * server and a UI instead.
   */
  benchCpuMs?: number[];
  probeCpuMs?: number[];
  /** When the chat had been drawn with the whole reply (ms after t0): the end of the stall, eval and Neovim CPU window. */
  settledMs?: number[];
  /** Per run, the most main-thread CPU time in one main-loop gap (ms, gaps ≥ 4 ms). */
  maxGapRunMs?: number[];
}

/** A chat under measurement: caboose's (`cabooseTarget`) or another plugin's (bench/codecompanion.ts). */
export interface StreamTarget {
  /** Opens a new chat (holding `fill` as earlier conversation when given); resolves to the chat's size in characters. */
  newChat(fill: string | null): Promise<number>;
  /** Sends a message with t0 taken just before, the chat buffer watched for `first` and `done` (caboose_bench.watch). */
  send(message: string, first: string, done: string): Promise<void>;
  /** Resolves once the reply ending with `tail` is in the chat and the plugin is idle again. */
  idle(tail: string): Promise<void>;
}

export function cabooseTarget(t: TestNvim): StreamTarget {
  return {
    async newChat(fill) {
      await t.cmd('CabooseNew');
      return fill ? t.lua<number>('return caboose_bench.fill(...)', [fill]) : (await t.chatLines()).join('\n').length;
    },
    send: (message, first, done) => run(t, `Caboose ${message}`, first, done),
    idle: (tail) => waitIdle(t, tail),
  };
}

/**
 * One stream run: the raw-client baseline, then the same stream into a new chat of `target` (in `t`, whose
 * server address is `socket`), with the second client's round trips, the in-Neovim stalls and the CPU
 * times; appended to `c`.
 */
export async function streamRun(t: TestNvim, target: StreamTarget, fake: FakeOpenAI, text: string, shape: StreamShape, fill: string | null, socket: string, c: StreamCase): Promise<void> {
  const raw = await rawRun(fake, text, shape);
  if (raw.cpuMs !== undefined) c.rawCpuMs.push(raw.cpuMs);
  c.rawMs.push(raw.ms);
  c.rawFirstMs.push(raw.firstMs);
  c.chatChars.push(await target.newChat(fill));
  let open: () => void = () => undefined;
  const gate = FIRST_MS > 0 ? new Promise<void>((r) => (open = r)) : undefined;
  fake.script(gate ? { ...streamReply(text, shape), gate, gateAfterChunks: 0 } : streamReply(text, shape));
  const probe = await startProbe(socket);
  await t.lua('caboose_bench.probe_start()');
  await sleep(500); // let the chat settle (redraw, a first parse of the filled chat) before timing
  const before = await t.lua<{ nvim?: number; host?: number }>('return caboose_bench.cpu()');
  const held = gate ? setTimeout(open, FIRST_MS) : undefined;
  const bench0 = process.cpuUsage();
  const probe0 = probe.pid ? threadsCpuMs(probe.pid) : undefined;
  await target.send('stream please', STREAM_FIRST, STREAM_MARKER);
  await waitSeen(t, 't_done', 120_000);
  const bench1 = process.cpuUsage(bench0);
  const probe1 = probe.pid ? threadsCpuMs(probe.pid) : undefined;
  (c.benchCpuMs ??= []).push((bench1.user + bench1.system) / 1000);
  if (probe0 !== undefined && probe1 !== undefined) (c.probeCpuMs ??= []).push(probe1 - probe0);
  clearTimeout(held);
  const after = await t.lua<{ nvim?: number; host?: number }>('return caboose_bench.cpu()');
  // CPU read inside Neovim right before the command and the moment the marker is in the chat (bench/chat-probe.lua
  // `run`), not a round trip later when the host is already ending the turn; a chat started otherwise: the reads around it.
  const [at0, atDone] = await t.lua<[{ nvim?: number; host?: number } | null, { nvim?: number; host?: number } | null]>('return { caboose_bench.cpu_t0 or vim.NIL, caboose_bench.cpu_done or vim.NIL }');
  const cpu0 = at0 && atDone ? at0 : before;
  const cpu1 = at0 && atDone ? atDone : after;
  // Neovim's CPU, stalls and the eval round trips up to the chat drawn with the whole reply (its parse may
  // run in turns after the last append): the probe keeps sampling until then.
  await t.waitFor(() => t.lua<boolean>('return caboose_bench.t_settled ~= nil'), 'the chat drawn with the whole reply', 30_000);
  const settledCpu = await t.lua<{ nvim?: number; host?: number } | null>('return caboose_bench.cpu_settled or vim.NIL');
  const samples = await probe.stop();
  await target.idle(STREAM_MARKER);
  await sleep(20);
  const r = await result(t);
  await t.lua('caboose_bench.probe_stop()');
  c.renderedMs.push(r.done_ms!);
  c.firstMs.push(r.first_ms!);
  c.stallMs.push(r.stall_done_ms!);
  if (r.stall_done_run_ms !== undefined && r.stall_done_wait_ms !== undefined) {
    (c.stallRunMs ??= []).push(r.stall_done_run_ms);
    (c.stallWaitMs ??= []).push(r.stall_done_wait_ms);
  }
  // Round trips that overlap [t0, drawn with the whole reply].
  const end = r.t_settled ?? r.t_done!;
  for (const [start, ms] of samples) if (start + ms * 1e6 >= r.t0 && start <= end) c.evalMs.push(ms);
  if (r.settled_ms !== undefined) (c.settledMs ??= []).push(r.settled_ms);
  if (r.max_gap_run_ms !== undefined) (c.maxGapRunMs ??= []).push(r.max_gap_run_ms);
  const nvimEnd = settledCpu?.nvim !== undefined ? settledCpu : cpu1;
  if (cpu0.nvim !== undefined && nvimEnd.nvim !== undefined) c.nvimCpuMs.push(nvimEnd.nvim - cpu0.nvim);
  if (cpu0.host !== undefined && cpu1.host !== undefined) c.hostCpuMs.push(cpu1.host - cpu0.host);
}

/** The same SSE stream read by a plain Node HTTP client (bench/raw-stream.ts): the baseline of a stream run. */
export async function rawRun(fake: FakeOpenAI, text: string, shape: StreamShape): Promise<{ ms: number; firstMs: number; chars: number; cpuMs?: number }> {
  fake.script(streamReply(text, shape));
  const raw = await childJson<{ ms: number; firstMs: number; chars: number; cpuMs?: number }>('raw-stream.ts', [fake.url], 150_000);
  if (raw.chars !== text.length) throw new Error(`raw client got ${raw.chars} chars`);
  return raw;
}

async function streamCase(fake: FakeOpenAI, shape: StreamShape, name: string, fill: string | null, runs: number): Promise<StreamCase> {
  const text = streamText(shape.chars);
  const c: StreamCase = { name, shape, chatChars: [], renderedMs: [], rawMs: [], firstMs: [], rawFirstMs: [], evalMs: [], stallMs: [], nvimCpuMs: [], hostCpuMs: [], rawCpuMs: [] };
  const t = await openNvim(fake);
  try {
    const socket = path.join(t.home, 'bench.sock');
    await t.lua('return vim.fn.serverstart(...)', [socket]);
    // Warm-up: the host is running and has loaded the agent before anything is timed.
    fake.script({ text: 'Ready.' });
    await t.cmd('Caboose hi');
    await waitIdle(t, 'Ready.');
    if (HOST_NICE !== 0) {
      // BENCH_HOST_NICE (an experiment, not the product): the host's every thread at this niceness.
      const pid = await t.lua<number | null>("return require('caboose.rpc').host_pid()");
      if (pid) for (const tid of fs.readdirSync(`/proc/${pid}/task`)) os.setPriority(Number(tid), HOST_NICE);
    }
    const target = cabooseTarget(t);
    for (let i = 0; i < runs; i++) await streamRun(t, target, fake, text, shape, fill, socket, c);
  } finally {
    await t.close();
  }
  return c;
}

export async function runStreamBenchmark(runs = Number(process.env.BENCH_STREAM_RUNS ?? 5)): Promise<StreamCase[]> {
  const fake = await startFakeOpenAI();
  try {
    const cases: StreamCase[] = [];
    // BENCH_STREAM_CASES: a comma list of burst-fresh, burst-long, paced-fresh, paced-long, or a shape
    // alone (burst, paced: both of its cases); default: all.
    const only = process.env.BENCH_STREAM_CASES?.split(',');
    const want = (id: string) => !only || only.includes(id) || only.includes(id.split('-')[0]);
    for (const shape of [BURST, PACED]) {
      if (want(`${shape.label}-fresh`)) cases.push(await streamCase(fake, shape, 'fresh chat', null, runs));
      if (want(`${shape.label}-long`)) cases.push(await streamCase(fake, shape, 'chat holding ~100k tokens of markdown', fillText(), runs));
    }
    return cases;
  } finally {
    await fake.close();
  }
}

/** Each run's longest stall (ms), with the main thread's CPU time and wait for a CPU in it where known: "36 (12.6 + 22.5 wait)". */
function stallRuns(c: StreamCase): string {
  return c.stallMs
    .map((x, i) => {
      const run = c.stallRunMs?.[i];
      const wait = c.stallWaitMs?.[i];
      return run !== undefined && wait !== undefined && (run > 0 || wait > 0) ? `${x.toFixed(0)} (${run.toFixed(1)} + ${wait.toFixed(1)} wait)` : x.toFixed(0);
    })
    .join(', ');
}

export function formatStreamTables(cases: StreamCase[]): string {
  const runs = cases[0]?.renderedMs.length ?? 0;
  const out = [
    `Two stream shapes: **burst**, ${BURST.chars.toLocaleString('en')} characters in ${chunkCount(BURST).toLocaleString('en')} chunks with no delay (as fast as the server can send); **paced**, ${PACED.chars.toLocaleString('en')} characters in ${chunkCount(PACED).toLocaleString('en')} chunks ${PACED.delayMs} ms apart (≈ 1,000 tokens a second, faster than hosted models). Neovim ${defaultNvim().version}${UI ? ' (UI attached)' : ''}; ${runs} runs per case, host already warm. Baseline: the same SSE stream read by a plain Node HTTP client (bench/raw-stream.ts), once before each run.`,
    '',
    '| reply streamed into | chat before (KB) | fully rendered (ms) | raw stream (ms) | ratio | target ≤ 2× raw + 100 ms | first token (ms) | raw first token (ms) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const c of cases) {
    const got = median(c.renderedMs);
    const raw = median(c.rawMs);
    const limit = 2 * raw + 100;
    out.push(
      `| ${c.shape.label}, ${c.name} | ${Math.round(median(c.chatChars) / 1000)} | ${f1(got)} | ${f1(raw)} | ${(got / raw).toFixed(2)}× | ${f1(limit)}${ok(got <= limit)} | ${f1(median(c.firstMs))} | ${f1(median(c.rawFirstMs))} |`,
    );
  }
  out.push(
    '',
    "Editor responsiveness meanwhile: a second RPC client (its own process) calling `nvim_eval('1')` every 10 ms — round trips overlapping [command, chat drawn with the whole reply] (the end: the reply's last characters in the chat and its highlighter done parsing them, at least 30 ms later; Neovim 0.12 parses in turns after an append), all runs pooled; the longest main-loop gap seen inside Neovim over the same window (2 ms timer, worst run), and per run with the main thread's CPU time in it + its wait for a CPU (run-queue time from /proc/thread-self/schedstat; what is left of the gap the thread was blocked); CPU time: Neovim's from the command to the chat drawn with the whole reply, the host's from the command to the reply's last characters in the chat (read inside Neovim at those moments), median run: the scheduler's run time of every thread of the process, in ns, from /proc/<pid>/task/*/schedstat; the plain client's the same way, from its request to `[DONE]`.",
    '',
    '| reply streamed into | eval p50 (ms) | eval p99 (ms) | eval max (ms) | samples | targets p99 ≤ 16, max ≤ 50 | longest in-Neovim stall (ms) | stall per run (ms) | Neovim CPU (ms) | Neovim CPU / stream time (target ≤ 20 % when paced) | host CPU (ms) | host CPU / raw client CPU (target ≤ 2×) |',
    '|---|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|',
  );
  for (const c of cases) {
    const p99 = quantile(c.evalMs, 0.99);
    const max = Math.max(...c.evalMs);
    const cpu = (xs: number[]) => (xs.length ? f1(median(xs)) : '—');
    const share = c.nvimCpuMs.length ? median(c.nvimCpuMs) / median(c.renderedMs) : NaN;
    const shareCol = Number.isNaN(share) ? '—' : `${(share * 100).toFixed(0)} %${c.shape.delayMs > 0 ? ok(share <= 0.2) : ''}`;
    const hostRatio = c.hostCpuMs.length && c.rawCpuMs.length ? median(c.hostCpuMs) / median(c.rawCpuMs) : NaN;
    // Each run's host CPU against the plain client's run just before it: the spread of the same-run ratio.
    const pairs = c.hostCpuMs.length === c.rawCpuMs.length ? c.hostCpuMs.map((h, i) => h / c.rawCpuMs[i]) : [];
    const spread = pairs.length > 1 ? ` (runs ${Math.min(...pairs).toFixed(2)}–${Math.max(...pairs).toFixed(2)}×)` : '';
    const hostCol = Number.isNaN(hostRatio) ? '—' : `${f1(median(c.rawCpuMs))} ms: ${hostRatio.toFixed(2)}×${ok(hostRatio <= 2)}${spread}`;
    out.push(
      `| ${c.shape.label}, ${c.name} | ${f1(quantile(c.evalMs, 0.5))} | ${f1(p99)} | ${f1(max)} | ${c.evalMs.length} | p99${ok(p99 <= 16)} max${ok(max <= 50)} | ${f1(Math.max(...c.stallMs))} | ${stallRuns(c)} | ${cpu(c.nvimCpuMs)} | ${shareCol} | ${cpu(c.hostCpuMs)} | ${hostCol} |`,
    );
  }
  const own = cases.filter((c) => c.benchCpuMs?.length);
  if (own.length) {
    out.push(
      '',
      "The bench's own processes over the same window (from just before the command to the reply seen whole, median run): this process (the fake server, the UI client decoding Neovim's redraws, its polls of Neovim) and the probe client; they share the 2 cores with Neovim and the host.",
      '',
      '| reply streamed into | bench process CPU (ms) | probe client CPU (ms) | chat drawn with the whole reply (ms after the command; window end) | most Neovim main-thread CPU in one gap, per run (ms) |',
      '|---|---:|---:|---:|---|',
      ...own.map((c) => `| ${c.shape.label}, ${c.name} | ${f1(median(c.benchCpuMs!))} | ${c.probeCpuMs?.length ? f1(median(c.probeCpuMs)) : '—'} | ${c.settledMs?.length ? f1(median(c.settledMs)) : '—'} | ${c.maxGapRunMs?.map(f1).join(', ') ?? '—'} |`),
    );
  }
  return out.join('\n');
}

/* ------------------------------------------------------------------------------------------------ */

/** The machine's load (/proc/loadavg: 1, 5 and 15 minute averages), printed beside each section. */
export function loadLine(): string {
  try {
    const [a, b, c] = fs.readFileSync('/proc/loadavg', 'utf8').split(' ');
    return `Machine load (/proc/loadavg) ${a} ${b} ${c} on ${os.cpus().length} CPUs`;
  } catch {
    return `Machine load: unknown (no /proc/loadavg) on ${os.cpus().length} CPUs`;
  }
}

export async function runChatBenchmarks(which: string | undefined, write: (s: string) => void): Promise<void> {
  if (!which || which === 'cold') {
    write('## Cold `:Caboose` → first token (bench/chat.ts)\n\n');
    const before = loadLine();
    const table = formatColdTable(await runColdBenchmark());
    write(`${before}; after: ${loadLine()}.\n\n${table}\n\n`);
  }
  if (!which || which === 'stream') {
    write('## Streaming throughput and stalls (bench/chat.ts)\n\n');
    const before = loadLine();
    const tables = formatStreamTables(await runStreamBenchmark());
    write(`${before}; after: ${loadLine()}.\n\n${tables}\n\n`);
  }
}

if (require.main === module) {
  const which = process.argv[2];
  if (which && which !== 'cold' && which !== 'stream') {
    process.stderr.write('usage: node --import tsx bench/chat.ts [cold|stream]\n');
    process.exit(2);
  }
  runChatBenchmarks(which, (s) => process.stdout.write(s)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
