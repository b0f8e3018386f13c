/**
 * Side by side with codecompanion.nvim (issue 24): the same figures, the same fake OpenAI-compatible
 * server and scripted replies, the same Neovim (0.12, headless, this process attached as its UI as in
 * bench/chat.ts), runs interleaved with ours in one process so a busy moment on the machine weighs on both.
 *
 * Opt-in: codecompanion and its dependency plenary are not part of this project and nothing here fetches
 * them. Point BENCH_CODECOMPANION_DIR and BENCH_PLENARY_DIR at plugin checkouts (e.g. codecompanion.nvim
 * v19.22.0 and plenary.nvim); without them the table prints one "skipped" line. plenary.curl needs `curl`.
 *
 * codecompanion runs with one `openai_compatible` adapter whose env.url is the fake server, the model fixed
 * (`fake-model`), everything else its defaults; it is driven through its own command and chat API
 * (bench/codecompanion-probe.lua), timed inside Neovim with bench/chat-probe.lua's buffer watch and stall
 * probe, exactly as caboose is:
 *
 * 1. cold first token: a fresh Neovim, `:CodeCompanionChat hi` vs caboose's `:Caboose hi` (the cold case
 *    of bench/chat.ts, its compiled-code cache warm), until the reply's first word is in the chat buffer;
 *    `node -e 0` (interleaved) as the common baseline.
 * 2. warm first token: a second message in the same chat (typed under codecompanion's last header and
 *    submitted as <CR> does; `:Caboose again` for caboose).
 * 3. the 80k-character burst of bench/chat.ts into a fresh chat, and 4. into a chat holding ~100k tokens
 *    (codecompanion's chat opened with the same text as earlier messages through its chat API, so it also
 *    sends them to the server; caboose's chat gets them as shown conversation): time until the whole reply
 *    is in the buffer, a second client's nvim_eval('1') round trips, the longest in-Neovim stall,
 *    Neovim's CPU time.
 *
 * Each run proves its precondition: the whole scripted reply is in the chat buffer (text compared) and
 * the server received the prompt.
 *
 *   npm run build && node --import tsx bench/run.ts codecompanion
 *
 * Env: BENCH_CODECOMPANION_DIR, BENCH_PLENARY_DIR (plugin checkouts; both needed), BENCH_CC_RUNS (runs of
 * each case, default 6), BENCH_CC_CASES (comma list of cold, burst-fresh, burst-long, edit; default all).
 */
import fs from 'node:fs';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI } from '../test/support/fake-openai';
import { defaultNvim, startNvim, type TestNvim } from '../test/support/nvim';
import { bigText, LINES, measure } from './buffers';
import {
  BURST,
  COLD_REPLY,
  PROBE_LUA,
  STREAM_MARKER,
  UI,
  WARM_REPLY,
  cabooseTarget,
  coldAndWarm,
  coldEnv,
  fillText,
  loadLine,
  median,
  nodeOnce,
  openNvim,
  quantile,
  result,
  sleep,
  streamRun,
  streamText,
  waitSeen,
  withUi,
  type LuaResult,
  type StreamCase,
  type StreamShape,
  type StreamTarget,
} from './chat';

const CC_PROBE_LUA = path.join(__dirname, 'codecompanion-probe.lua');
const MODEL = 'fake-model';

/** The plugin checkouts, or why the comparison is skipped. */
export function codecompanionDirs(env: NodeJS.ProcessEnv = process.env): { cc: string; plenary: string } | { skip: string } {
  const cc = env.BENCH_CODECOMPANION_DIR;
  const plenary = env.BENCH_PLENARY_DIR;
  if (!cc || !plenary) return { skip: 'BENCH_CODECOMPANION_DIR / BENCH_PLENARY_DIR not set' };
  const need = [path.join(cc, 'lua', 'codecompanion', 'init.lua'), path.join(plenary, 'lua', 'plenary', 'curl.lua')];
  for (const f of need) if (!fs.existsSync(f)) return { skip: `${f} not found` };
  return { cc: path.resolve(cc), plenary: path.resolve(plenary) };
}

/** codecompanion's version (its version.txt), for the table's heading. */
function ccVersion(dir: string): string {
  try {
    return fs.readFileSync(path.join(dir, 'version.txt'), 'utf8').trim();
  } catch {
    return 'unknown version';
  }
}

/** A fresh headless Neovim with codecompanion (not caboose) on the runtimepath, set up for the fake server. */
async function openCodecompanion(fake: FakeOpenAI, dirs: { cc: string; plenary: string }, ui = true): Promise<TestNvim> {
  const url = fake.url.replace(/\/v1$/, '');
  const t = await startNvim({
    nvim: defaultNvim(),
    pluginRoot: null,
    initLua: [
      `vim.opt.runtimepath:prepend(${JSON.stringify(dirs.plenary)})`,
      `vim.opt.runtimepath:prepend(${JSON.stringify(dirs.cc)})`,
      `dofile(${JSON.stringify(PROBE_LUA)})`,
      `dofile(${JSON.stringify(CC_PROBE_LUA)})`,
      `caboose_bench.cc_setup(${JSON.stringify(url)}, ${JSON.stringify(MODEL)})`,
    ].join('\n'),
  });
  return ui ? withUi(t) : t;
}

/** Waits until codecompanion's last chat holds `tail` with no request in flight. */
async function ccIdle(t: TestNvim, tail: string, timeoutMs = 120_000): Promise<void> {
  await t.waitFor(() => t.lua<boolean>('return caboose_bench.cc_idle(...)', [tail]), `codecompanion idle after "${tail}"`, timeoutMs);
}

/** The precondition of a run: the whole scripted reply is in codecompanion's chat buffer. */
async function assertReply(t: TestNvim, reply: string): Promise<void> {
  const text = (await t.lua<string[]>('return caboose_bench.cc_lines()')).join('\n');
  if (!text.includes(reply)) throw new Error(`codecompanion's chat does not hold the whole reply; its tail:\n${text.slice(-400)}`);
}

/** The precondition on the server's side: the last chat request carried `prompt` as its last user message. */
function assertPrompt(fake: FakeOpenAI, prompt: string): void {
  const chats = fake.requests.filter((r) => r.path.endsWith('/chat/completions'));
  const last = chats[chats.length - 1]?.body?.messages?.filter((m) => m.role === 'user').pop();
  const content = typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content);
  if (!content?.includes(prompt)) throw new Error(`the server did not get "${prompt}" (last user message: ${content})`);
}

/** codecompanion's cold and warm first token, in a fresh Neovim (mirrors bench/chat.ts's coldAndWarm). */
async function ccColdAndWarm(fake: FakeOpenAI, dirs: { cc: string; plenary: string }): Promise<{ cold: LuaResult; warm: LuaResult }> {
  const t = await openCodecompanion(fake, dirs);
  try {
    await t.lua('caboose_bench.probe_start()');
    await sleep(100); // let start-up settle; the probe is running
    /** One message through `fn` (cc_open or cc_send), measured; the reply must be whole in the chat. */
    const ask = async (fn: string, prompt: string, needle: string, reply: string, done: string): Promise<LuaResult> => {
      fake.script({ text: reply });
      await t.lua(`caboose_bench.${fn}(...)`, [prompt, needle, null]);
      await waitSeen(t, 't_first', 30_000);
      await ccIdle(t, done);
      await sleep(20);
      const r = await result(t);
      await assertReply(t, reply);
      assertPrompt(fake, prompt);
      return r;
    };
    const cold = await ask('cc_open', 'hi', 'Zephyr', COLD_REPLY, 'Cold done.');
    const warm = await ask('cc_send', 'again', 'Quokka', WARM_REPLY, 'Warm done.');
    await t.lua('caboose_bench.probe_stop()');
    return { cold, warm };
  } finally {
    await t.close();
  }
}

/** codecompanion's chat as a bench/chat.ts stream target. */
function ccTarget(t: TestNvim, fake: FakeOpenAI, reply: string): StreamTarget {
  return {
    newChat: (fill) => t.lua<number>('return caboose_bench.cc_new_chat(...)', [fill ? fillMessages(fill) : null]),
    send: (message, first, done) => t.lua('caboose_bench.cc_send(...)', [message, first, done]),
    async idle(tail) {
      await ccIdle(t, tail);
      await assertReply(t, reply);
      assertPrompt(fake, 'stream please');
    },
  };
}

/** bench/chat.ts's ~100k-token chat text as conversation messages (its "## You" / "## Caboose" turns). */
export function fillMessages(fill: string): { role: 'user' | 'llm'; content: string }[] {
  const out: { role: 'user' | 'llm'; content: string }[] = [];
  const parts = fill.split(/^## (You|Caboose)\n\n/m);
  for (let i = 1; i + 1 < parts.length; i += 2) out.push({ role: parts[i] === 'You' ? 'user' : 'llm', content: parts[i + 1].replace(/\n+$/, '') });
  return out;
}

export interface CcColdResult {
  runs: number;
  nodeMs: number[];
  ours: { cold: number[]; warm: number[]; coldStall: number[]; warmStall: number[] };
  cc: { cold: number[]; warm: number[]; coldStall: number[]; warmStall: number[] };
}

async function runCold(fake: FakeOpenAI, dirs: { cc: string; plenary: string }, runs: number): Promise<CcColdResult> {
  const r: CcColdResult = { runs, nodeMs: [], ours: { cold: [], warm: [], coldStall: [], warmStall: [] }, cc: { cold: [], warm: [], coldStall: [], warmStall: [] } };
  nodeOnce(); // warm the page cache
  const ce = await coldEnv(fake);
  try {
    // codecompanion's first start too is not counted (page cache).
    await ccColdAndWarm(fake, dirs);
    for (let i = 0; i < runs; i++) {
      r.nodeMs.push(nodeOnce());
      // Interleaved, the order alternating from run to run.
      const pair = [
        async () => {
          const { cold, warm } = await coldAndWarm(fake, ce.env);
          r.ours.cold.push(cold.first_ms!);
          r.ours.warm.push(warm.first_ms!);
          r.ours.coldStall.push(cold.stall_first_ms!);
          r.ours.warmStall.push(warm.stall_first_ms!);
        },
        async () => {
          const { cold, warm } = await ccColdAndWarm(fake, dirs);
          r.cc.cold.push(cold.first_ms!);
          r.cc.warm.push(warm.first_ms!);
          r.cc.coldStall.push(cold.stall_first_ms!);
          r.cc.warmStall.push(warm.stall_first_ms!);
        },
      ];
      if (i % 2) pair.reverse();
      for (const f of pair) await f();
    }
  } finally {
    ce.dispose();
  }
  return r;
}

const emptyCase = (name: string, shape: StreamShape): StreamCase => ({ name, shape, chatChars: [], renderedMs: [], rawMs: [], firstMs: [], rawFirstMs: [], evalMs: [], stallMs: [], nvimCpuMs: [], hostCpuMs: [], rawCpuMs: [] });

/** One stream case (fresh or long chat), ours and codecompanion's runs interleaved in two live Neovims. */
async function runStream(fake: FakeOpenAI, dirs: { cc: string; plenary: string }, name: string, fill: string | null, runs: number): Promise<{ ours: StreamCase; cc: StreamCase }> {
  const text = streamText(BURST.chars);
  const ours = emptyCase(name, BURST);
  const cc = emptyCase(name, BURST);
  const a = await openNvim(fake);
  try {
    const b = await openCodecompanion(fake, dirs);
    try {
      const sockA = path.join(a.home, 'bench.sock');
      const sockB = path.join(b.home, 'bench.sock');
      await a.lua('return vim.fn.serverstart(...)', [sockA]);
      await b.lua('return vim.fn.serverstart(...)', [sockB]);
      // Warm-up: both plugins loaded and one request done before anything is timed.
      fake.script({ text: 'Ready.' });
      await a.cmd('Caboose hi');
      await cabooseTarget(a).idle('Ready.');
      fake.script({ text: 'Ready.' });
      await b.lua('caboose_bench.cc_open(...)', ['hi', 'Ready.', null]);
      await ccIdle(b, 'Ready.');
      const ta = cabooseTarget(a);
      const tb = ccTarget(b, fake, text);
      for (let i = 0; i < runs; i++) {
        const pair = [() => streamRun(a, ta, fake, text, BURST, fill, sockA, ours), () => streamRun(b, tb, fake, text, BURST, fill, sockB, cc)];
        if (i % 2) pair.reverse();
        for (const f of pair) await f();
      }
    } finally {
      await b.close();
    }
  } finally {
    await a.close();
  }
  return { ours, cc };
}

const f1 = (x: number) => x.toFixed(1);
const ok = (pass: boolean) => (pass ? ' ✓' : ' ✗');

export function formatColdTable(r: CcColdResult, version: string): string {
  const node = median(r.nodeMs);
  const row = (name: string, ours: number[], cc: number[], target?: number) => {
    const ratio = median(ours) / median(cc);
    return `| ${name} | ${f1(median(ours))} | ${f1(quantile(ours, 0.9))} | ${f1(median(cc))} | ${f1(quantile(cc, 0.9))} | ${ratio.toFixed(2)}×${target === undefined ? '' : ok(ratio <= target)} | ${(median(ours) / node).toFixed(2)}× / ${(median(cc) / node).toFixed(2)}× | ${target === undefined ? '—' : `≤ ${target.toFixed(1)}× codecompanion`} |`;
  };
  const stall = (name: string, ours: number[], cc: number[]) => `| ${name} | ${f1(median(ours))} | ${f1(Math.max(...ours))} (worst) | ${f1(median(cc))} | ${f1(Math.max(...cc))} (worst) | — | — | — |`;
  return [
    `codecompanion.nvim ${version} vs caboose, Neovim ${defaultNvim().version}${UI ? ' (UI attached)' : ''}, ${r.runs} runs each, interleaved (order alternating), each a fresh Neovim; \`node -e 0\` median ${f1(node)} ms (p90 ${f1(quantile(r.nodeMs, 0.9))}).`,
    '',
    '| first token in the chat buffer | caboose median (ms) | caboose p90 (ms) | codecompanion median (ms) | codecompanion p90 (ms) | caboose / codecompanion | ÷ `node -e 0` (caboose / codecompanion) | target |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    row('cold: `:Caboose hi` / `:CodeCompanionChat hi` in a fresh Neovim', r.ours.cold, r.cc.cold, 1.0),
    row('warm: second message, same Neovim and chat', r.ours.warm, r.cc.warm),
    stall('(information) longest in-Neovim stall, cold → first token', r.ours.coldStall, r.cc.coldStall),
    stall('(information) longest in-Neovim stall, warm → first token', r.ours.warmStall, r.cc.warmStall),
  ].join('\n');
}

export function formatStreamTable(cases: { ours: StreamCase; cc: StreamCase }[], version: string): string {
  const out = [
    `The ${BURST.chars.toLocaleString('en')}-character burst of bench/chat.ts (${Math.ceil(BURST.chars / BURST.chunkChars).toLocaleString('en')} chunks, no delay), codecompanion.nvim ${version} vs caboose, runs interleaved (order alternating) in two live Neovims, each plugin warm; raw: the same stream read by a plain Node client before each run. Eval: a second client's \`nvim_eval('1')\` every 10 ms, round trips overlapping [send, fully rendered], runs pooled. Stall: the longest main-loop gap seen inside Neovim (2 ms timer), worst run.`,
    '',
    '| reply streamed into | plugin | chat before (KB) | fully rendered (ms) | raw (ms) | caboose / codecompanion | eval p99 / max (ms) | eval samples | longest stall (ms) | Neovim CPU (ms) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { ours, cc } of cases) {
    const ratio = median(ours.renderedMs) / median(cc.renderedMs);
    for (const [name, c] of [['caboose', ours], ['codecompanion', cc]] as const) {
      out.push(
        `| ${c.name} | ${name} | ${Math.round(median(c.chatChars) / 1000)} | ${f1(median(c.renderedMs))} | ${f1(median(c.rawMs))} | ${name === 'caboose' ? `${ratio.toFixed(2)}×` : '—'} | ${f1(quantile(c.evalMs, 0.99))} / ${f1(Math.max(...c.evalMs))} | ${c.evalMs.length} | ${f1(Math.max(...c.stallMs))} | ${c.nvimCpuMs.length ? f1(median(c.nvimCpuMs)) : '—'} |`,
      );
    }
  }
  return out.join('\n');
}

/**
 * The edit of a clean 100,000-line buffer (bench/buffers.ts's big.ts, line 50,000's name flipped between
 * `value` and `VALUE`): caboose's `edit_file` timed as bench/buffers.ts does (the tool call from the
 * client until it returned, the buffer and the disk updated); codecompanion's insert_edit_into_file called
 * by the fake model, timed inside Neovim from its command function's entry to its FileEdited event (the
 * new text in the buffer and the file written). Neither Neovim has a UI here, as in bench/buffers.ts. Each
 * codecompanion run checks the line changed in the buffer and on disk.
 */
async function runEdit(fake: FakeOpenAI, dirs: { cc: string; plenary: string }, runs: number): Promise<{ ours: number[]; cc: number[] }> {
  const line = 50_000;
  const out = { ours: [] as number[], cc: [] as number[] };
  const a = await startNvim({ nvim: defaultNvim(), initLua: "require('caboose').setup({})" });
  try {
    fs.writeFileSync(path.join(a.cwd, 'big.ts'), bigText());
    await a.cmd('edit big.ts');
    const b = await openCodecompanion(fake, dirs, false);
    try {
      const file = path.join(b.cwd, 'big.ts');
      fs.writeFileSync(file, bigText());
      await b.cmd('edit big.ts');
      await b.lua('caboose_bench.cc_edit_hooks()');
      await b.lua('return caboose_bench.cc_new_chat(nil)');
      if (!(await b.lua<boolean>('return caboose_bench.cc_add_tool(...)', ['insert_edit_into_file']))) throw new Error('codecompanion has no insert_edit_into_file tool');
      // codecompanion matches whole lines (its exact_match strategy), so its oldText is line 50,000 whole.
      const lower = bigText().split('\n')[line - 1];
      const caps = lower.replace(`value${line} = `, `VALUE${line} = `);
      let upper = false;
      const ccEdit = async (i: number) => {
        const from = upper ? caps : lower;
        const to = upper ? lower : caps;
        upper = !upper;
        const tail = `Edit round ${i} done.`;
        fake.script(
          { toolCalls: [{ name: 'insert_edit_into_file', arguments: { filepath: file, edits: [{ oldText: from, newText: to, replaceAll: false }], mode: 'append', explanation: 'bench edit' } }] },
          { text: tail },
        );
        await b.lua('caboose_bench.cc_send(...)', [`edit round ${i}`, tail, null]);
        await ccIdle(b, tail);
        const ms = await b.lua<number[]>('return caboose_bench.edit_ms');
        if (ms.length !== i + 1) throw new Error(`codecompanion's edit ${i} did not run (${ms.length} edits timed); chat tail:\n${(await b.lua<string[]>('return caboose_bench.cc_lines()')).slice(-30).join('\n')}`);
        const inBuf = await b.lua<string>(`return vim.api.nvim_buf_get_lines(vim.fn.bufnr('big.ts'), ${line - 1}, ${line}, false)[1]`);
        const onDisk = fs.readFileSync(file, 'utf8').split('\n')[line - 1];
        if (inBuf !== to || onDisk !== to) throw new Error(`codecompanion's edit ${i} did not land (buffer: ${inBuf}; disk: ${onDisk})`);
        await sleep(Number(process.env.BENCH_BUFFER_GAP_MS ?? 100));
        return ms[i];
      };
      await ccEdit(0); // warm-up, not counted (caboose's measure() has its own)
      for (let i = 1; i <= runs; i++) {
        const pair = [async () => out.ours.push(...(await measure(a, 1, line))), async () => out.cc.push(await ccEdit(i))];
        if (i % 2) pair.reverse();
        for (const f of pair) await f();
      }
    } finally {
      await b.close();
    }
  } finally {
    await a.close();
  }
  return out;
}

export function formatEditTable(r: { ours: number[]; cc: number[] }, version: string): string {
  const ratio = median(r.ours) / median(r.cc);
  return [
    `Edit of a clean ${LINES.toLocaleString('en')}-line buffer (bench/buffers.ts's file), codecompanion.nvim ${version}'s insert_edit_into_file (driven by the fake model's tool call, its diff confirmation off, its file size limit raised from 2 to 8 MB) vs caboose's edit_file, ${r.ours.length} runs each, interleaved; no UI attached (as bench/buffers.ts).`,
    '',
    '| benchmark | caboose median (ms) | caboose p90 (ms) | codecompanion median (ms) | codecompanion p90 (ms) | caboose / codecompanion | target |',
    '|---|---:|---:|---:|---:|---:|---|',
    `| edit of a clean ${LINES.toLocaleString('en')}-line buffer (buffer + disk) | ${f1(median(r.ours))} | ${f1(quantile(r.ours, 0.9))} | ${f1(median(r.cc))} | ${f1(quantile(r.cc, 0.9))} | ${ratio.toFixed(2)}×${ok(ratio <= 0.1)} | ≤ 0.1× codecompanion |`,
  ].join('\n');
}

export async function runCodecompanionBenchmarks(write: (s: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dirs = codecompanionDirs(env);
  if ('skip' in dirs) {
    write(`codecompanion: skipped (${dirs.skip})\n`);
    return;
  }
  write('## Side by side with codecompanion.nvim (bench/codecompanion.ts)\n\n');
  const version = ccVersion(dirs.cc);
  const runs = Number(env.BENCH_CC_RUNS ?? 6);
  const only = env.BENCH_CC_CASES?.split(',');
  const want = (id: string) => !only || only.includes(id);
  const fake = await startFakeOpenAI();
  try {
    if (want('cold')) {
      const before = loadLine();
      const table = formatColdTable(await runCold(fake, dirs, runs), version);
      write(`${before}; after: ${loadLine()}.\n\n${table}\n\n`);
    }
    const cases: { ours: StreamCase; cc: StreamCase }[] = [];
    const before = loadLine();
    if (want('burst-fresh')) cases.push(await runStream(fake, dirs, 'fresh chat', null, runs));
    if (want('burst-long')) cases.push(await runStream(fake, dirs, 'chat holding ~100k tokens', fillText(), runs));
    if (cases.length) write(`${before}; after: ${loadLine()}.\n\n${formatStreamTable(cases, version)}\n\n`);
    if (want('edit')) {
      const before2 = loadLine();
      const table = formatEditTable(await runEdit(fake, dirs, runs), version);
      write(`${before2}; after: ${loadLine()}.\n\n${table}\n\n`);
    }
  } finally {
    await fake.close();
  }
}

if (require.main === module) {
  runCodecompanionBenchmarks((s) => process.stdout.write(s)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
