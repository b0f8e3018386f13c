/**
 * Session benchmarks (issue 10), each figure beside a baseline from the same run.
 *
 * 1. Reopen: a stored 10,000-message session (2,500 turns: question, tool call, tool result, answer) is
 *    reopened in a headless Neovim 0.12 with a UI attached and a warm host: `require('caboose.ui.sessions')
 *    .open(id)` until the transcript is in the chat buffer and drawn (timed inside Neovim). Baseline: the
 *    same transcript text opened as a markdown file with `:edit` (what Neovim alone takes for that text).
 *    Target: ≤ 250 ms.
 * 2. Prompt size: a scripted 200-turn session through the real agent loop, workspace and session store
 *    (each turn reads a ~3 KB file and answers). Tokens sent (≈ characters / 4, summary requests
 *    included) vs sending the whole history at every request. Target: ≤ 40 %.
 * 3. A streaming reply's row (issue 24): the recorder's partial-row writes of a 20,000- and a
 *    100,000-character reply (one write per 800 characters, as a paced reply of ≈ 1,000 tokens a second
 *    flushes every FLUSH_MS), in a database file (WAL) in a temp folder; this process's CPU
 *    (process.cpuUsage) for all the writes and the finish, median of BENCH_PARTIAL_RUNS (default 7).
 *    Baseline in the same run: the same writes into a database of the previous schema (migration 9: the
 *    search index's trigger re-indexes the whole reply at every write). Also: rows the statements changed
 *    (total_changes(), the index's included) per write.
 *
 *   npm run build && node --import tsx bench/sessions.ts [reopen|prompt|partial]
 *
 * Env: BENCH_REOPEN_RUNS (default 7).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, openStore } from '../src/store';
import { openWorkspace } from '../src/index';
import { Agent } from '../src/agent/loop';
import { SUMMARIZE_INSTRUCTION } from '../src/agent/context';
import type { ChatMessage, ModelClient, ModelEvent, ModelRequest } from '../src/agent/provider';
import { SessionRecorder } from '../src/host/session-recorder';
import { createRecallTool } from '../src/tools/recall';
import { defaultNvim, startNvim } from '../test/support/nvim';
import { median, quantile } from './chat';

/* ------------------------------------------------------------------------------------------------
 * 1. Reopening a 10,000-message session
 * ---------------------------------------------------------------------------------------------- */

const TURNS = 2500;

export function seedSession(dataDir: string, cwd: string): { id: string; markdown: string } {
  const store = openStore(dataDir);
  const id = 'bench-10k';
  const rec = new SessionRecorder(store.sessions, id, { cwd, model: 'fake-model' });
  const md: string[] = [];
  store.db.transaction(() => {
    for (let i = 0; i < TURNS; i++) {
      const q = `Question ${i}: what does function f${i} in src/module${i % 50}.ts do, and is it tested?`;
      rec.turnStart({ text: q });
      rec.messageAdded({ role: 'user', content: q });
      const args = JSON.stringify({ path: `src/module${i % 50}.ts` });
      rec.messageAdded({ role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read_file', arguments: args } }] });
      const body = Array.from({ length: 40 }, (_, k) => `export function f${i}_${k}(x: number): number { return x * ${k}; }`).join('\n');
      rec.messageAdded({ role: 'tool', tool_call_id: `c${i}`, content: JSON.stringify({ ok: true, data: { path: `src/module${i % 50}.ts`, content: body, sha256: 'a'.repeat(64), totalLines: 40 } }) });
      const a = `\`f${i}\` multiplies its argument by a constant.\n\n- It is pure.\n- It is covered by \`test/module${i % 50}.test.ts\`.\n\n\`\`\`ts\nf${i}(2) // → ${i * 2}\n\`\`\``;
      rec.messageAdded({ role: 'assistant', content: a });
      md.push(`## You\n\n${q}\n\n## Caboose\n\n✓ read_file src/module${i % 50}.ts 40 lines\n\n${a}`);
    }
  })();
  store.close();
  return { id, markdown: md.join('\n\n') + '\n' };
}

export interface ReopenResult {
  messages: number;
  lines: number;
  runs: number[];
  baseline: number[];
}

export async function runReopenBenchmark(runs = Number(process.env.BENCH_REOPEN_RUNS ?? 7)): Promise<ReopenResult> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-home-'));
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-ws-'));
  const dataDir = path.join(home, 'data', 'nvim', 'caboose');
  const { id, markdown } = seedSession(dataDir, cwd);
  const mdFile = path.join(cwd, 'transcript.md');
  fs.writeFileSync(mdFile, markdown);
  const t = await startNvim({ nvim: defaultNvim(), home, cwd, env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', CABOOSE_MODEL: 'fake-model' } });
  const result: ReopenResult = { messages: TURNS * 4, lines: 0, runs: [], baseline: [] };
  try {
    await t.nvim.uiAttach(200, 50, { ext_linegrid: true, rgb: true });
    // A warm host and chat: what is measured is the reopening, not the host's start.
    await t.lua("require('caboose').open_chat(); require('caboose').prestart()");
    await t.waitFor(() => t.lua<boolean>("return require('caboose.rpc').is_running()"), 'host', 20_000);
    await t.lua(`
      _G.bench = {}
      local chat = require('caboose.chat')
      local load = chat.load
      chat.load = function(items)
        _G.bench.ev = vim.uv.hrtime()
        load(items)
        _G.bench.loaded = vim.uv.hrtime()
      end
      vim.api.nvim_create_autocmd('User', { pattern = 'CabooseSessionOpened', callback = function()
        vim.cmd('redraw')
        _G.bench.t1 = vim.uv.hrtime()
      end })
    `);
    for (let i = 0; i < runs + 1; i++) {
      // Baseline: the same text as a file.
      const b = await t.lua<number>(
        `local t0 = vim.uv.hrtime(); vim.cmd('tabnew ' .. vim.fn.fnameescape(...)); vim.cmd('redraw'); local d = (vim.uv.hrtime() - t0) / 1e6; vim.cmd('bwipeout!'); return d`,
        [mdFile],
      );
      // Reopen (from another session, so the chat really changes).
      await t.lua("require('caboose').new_session()");
      await new Promise((r) => setTimeout(r, 300));
      await t.lua(`_G.bench.t1 = nil; _G.bench.t0 = vim.uv.hrtime(); require('caboose.ui.sessions').open(...)`, [id]);
      const ms = await t.waitFor(() => t.lua<number | null>('return _G.bench.t1 and (_G.bench.t1 - _G.bench.t0) / 1e6 or nil'), 'reopened', 30_000);
      if (process.env.BENCH_REOPEN_DEBUG) process.stderr.write(JSON.stringify(await t.lua('return { arrive = (_G.bench.ev - _G.bench.t0) / 1e6, load = (_G.bench.loaded - _G.bench.ev) / 1e6, after = (_G.bench.t1 - _G.bench.loaded) / 1e6 }')) + '\n');
      if (i === 0) continue; // warm-up
      result.runs.push(ms);
      result.baseline.push(b);
    }
    result.lines = await t.lua<number>("return vim.api.nvim_buf_line_count(require('caboose.chat').buf())");
  } finally {
    if (process.env.BENCH_REOPEN_DEBUG) {
      const log = fs.existsSync(t.logFile) ? fs.readFileSync(t.logFile, 'utf8') : '';
      process.stderr.write(log.split('\n').filter((l) => /reopened|session.open/.test(l)).join('\n') + '\n');
    }
    await t.close();
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(cwd, { recursive: true, force: true });
  }
  return result;
}

export function formatReopenTable(r: ReopenResult): string {
  const m = median(r.runs);
  const b = median(r.baseline);
  return [
    `A ${r.messages.toLocaleString('en')}-message session (${r.lines.toLocaleString('en')} chat lines), ${r.runs.length} runs after a warm-up.`,
    '',
    '| measure | median (ms) | p90 (ms) | baseline: `:edit` of the same text (ms) | ratio | target |',
    '|---|---:|---:|---:|---:|---:|',
    `| reopen → transcript rendered | ${m.toFixed(0)} | ${quantile(r.runs, 0.9).toFixed(0)} | ${b.toFixed(0)} | ${(m / b).toFixed(2)}× | ≤ 250 ms ${m <= 250 ? '✓' : '✗'} |`,
  ].join('\n');
}

/* ------------------------------------------------------------------------------------------------
 * 2. Prompt tokens over a 200-turn session
 * ---------------------------------------------------------------------------------------------- */

const tokens = (messages: readonly ChatMessage[]): number => Math.ceil(JSON.stringify(messages).length / 4);

/** Each turn: read_file of a module, then a short answer; a summary when asked to compact. */
class ScriptedModel implements ModelClient {
  readonly model = 'bench-model';
  sent = 0;
  summaries = 0;
  private turn = 0;
  async *stream(req: ModelRequest): AsyncGenerator<ModelEvent> {
    this.sent += tokens(req.messages);
    const last = req.messages[req.messages.length - 1];
    if (last.role === 'user' && last.content === SUMMARIZE_INSTRUCTION) {
      this.summaries++;
      const text = `## Intent\nExplain the modules one by one.\n## Files touched\n${'src/module.ts (read) '.repeat(30)}\n## Decisions\nnone\n## Progress\nExplained ${this.turn} modules.\n## Next steps\nContinue.`;
      yield { type: 'done', finishReason: 'stop', text, toolCalls: [] };
      return;
    }
    if (last.role === 'user') {
      this.turn++;
      const args = JSON.stringify({ path: `src/module${this.turn % 20}.ts` });
      yield { type: 'done', finishReason: 'tool_calls', text: '', toolCalls: [{ id: `c${this.turn}`, name: 'read_file', arguments: args }] };
      return;
    }
    const text = `Module ${this.turn % 20} exports ${this.turn} helpers; each multiplies its input. ${'They are small and pure. '.repeat(12)}`;
    yield { type: 'done', finishReason: 'stop', text, toolCalls: [] };
  }
}

export interface PromptResult {
  turns: number;
  sentTokens: number;
  wholeHistoryTokens: number;
  summaries: number;
  contextWindow: number;
}

export async function runPromptBenchmark(turns = 200, contextWindow = 32_000): Promise<PromptResult> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-ws-'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-data-'));
  fs.mkdirSync(path.join(root, 'src'));
  for (let i = 0; i < 20; i++) {
    fs.writeFileSync(path.join(root, 'src', `module${i}.ts`), Array.from({ length: 60 }, (_, k) => `export const v${k} = (x: number) => x * ${k}; // helper ${k} of module ${i}`).join('\n') + '\n');
  }
  const ws = openWorkspace({ root, dataDir, sessionId: 'bench' });
  const model = new ScriptedModel();
  const rec = new SessionRecorder(ws.workspace.store.sessions, 'bench', { cwd: root, model: model.model });
  ws.registry.add(createRecallTool({ get: (id) => ws.workspace.store.sessions.row('bench', id), archivedBy: (id) => ws.workspace.store.sessions.archivedBy('bench', id) }));
  const full: ChatMessage[] = [];
  let whole = 0;
  const system = 'You are Caboose.';
  const agent = new Agent({
    provider: {
      model: model.model,
      stream: (req: ModelRequest) => {
        const last = req.messages[req.messages.length - 1];
        // Whole-history baseline: every request of the turn carries everything said so far.
        if (!(last.role === 'user' && last.content === SUMMARIZE_INSTRUCTION)) whole += tokens([{ role: 'system', content: system }, ...full]) + 0;
        return model.stream(req);
      },
    },
    registry: ws.registry,
    systemPrompt: system,
    mode: 'chug',
    contextWindow,
    storedRef: rec.storedId,
    archive: rec.archive,
    makeContext: (signal) => ({ signal, workspace: ws.workspace, sessionId: 'bench' }),
    requestApproval: async () => ({ decision: 'once' }),
    events: {
      messageAdded: (m) => {
        full.push(m);
        rec.messageAdded(m);
      },
      compacted: (c) => rec.compacted(c.added, c.archivedAs),
    },
  });
  for (let i = 0; i < turns; i++) {
    agent.send(`Explain module ${i % 20} (turn ${i}).`);
    await agent.idle();
  }
  ws.close();
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
  return { turns, sentTokens: model.sent, wholeHistoryTokens: whole, summaries: model.summaries, contextWindow };
}

export function formatPromptTable(r: PromptResult): string {
  const ratio = r.sentTokens / r.wholeHistoryTokens;
  return [
    `${r.turns} turns (each: read_file of a ~3.4 KB module, then a ~400-character answer), context window ${r.contextWindow.toLocaleString('en')} tokens; ${r.summaries} compaction${r.summaries === 1 ? '' : 's'} (their requests counted).`,
    '',
    '| measure | tokens sent (≈ chars / 4) | baseline: whole history every request | ratio | target |',
    '|---|---:|---:|---:|---:|',
    `| prompt tokens over the session | ${r.sentTokens.toLocaleString('en')} | ${r.wholeHistoryTokens.toLocaleString('en')} | ${(ratio * 100).toFixed(1)} % | ≤ 40 % ${ratio <= 0.4 ? '✓' : '✗'} |`,
  ].join('\n');
}

/* ------------------------------------------------------------------------------------------------
 * 3. A streaming reply's partial-row writes
 * ---------------------------------------------------------------------------------------------- */

export interface PartialResult {
  chars: number;
  writes: number;
  /** Median CPU (ms) of the writes and the finish: current schema, previous schema (baseline). */
  cpuMs: number;
  baselineCpuMs: number;
  /** Rows changed per partial write (total_changes(), the FTS index's included). */
  changesPerWrite: number;
  baselineChangesPerWrite: number;
}

const PARTIAL_STEP = 800;

function streamedReply(chars: number): string {
  const words = ['the', 'parser', 'splits', 'tokens', 'into', 'nodes', 'and', 'keeps', 'their', 'offsets', 'for', 'highlighting'];
  let s = '';
  for (let i = 0; s.length < chars; i++) s += `${words[i % words.length]}${i % 17 === 16 ? '.\n\n' : ' '}`;
  return s.slice(0, chars);
}

/** One reply written as the recorder writes it; `previous`: a schema-9 database and that version's statements. */
function partialWrites(dir: string, text: string, previous: boolean): { cpuMs: number; changesPerWrite: number; writes: number } {
  const file = path.join(dir, `${previous ? 'prev' : 'cur'}-${Math.random().toString(36).slice(2)}.sqlite`);
  let db: Database.Database;
  let write: (rowId: number, t: string) => void;
  let insert: (t: string) => number;
  let finish: (rowId: number, t: string) => void;
  if (previous) {
    db = new Database(file);
    db.pragma('synchronous = NORMAL');
    db.pragma('journal_mode = WAL');
    for (const m of MIGRATIONS.filter((x) => x.version <= 9)) db.exec(m.sql);
    const ins = db.prepare("INSERT INTO session_messages (session_id, kind, role, message_json, text, partial, created_at) VALUES ('s', 'message', 'assistant', ?, ?, 1, 0)");
    const upd = db.prepare('UPDATE session_messages SET message_json = ?, text = ? WHERE id = ? AND partial = 1');
    const fin = db.prepare('UPDATE session_messages SET message_json = ?, display_json = ?, text = ?, partial = 0 WHERE id = ?');
    insert = (t) => Number(ins.run(JSON.stringify({ role: 'assistant', content: t }), t).lastInsertRowid);
    write = (id, t) => void upd.run(JSON.stringify({ role: 'assistant', content: t }), t, id);
    finish = (id, t) => void fin.run(JSON.stringify({ role: 'assistant', content: t }), JSON.stringify({ text: t }), t, id);
  } else {
    const store = openStore(file);
    db = store.db;
    insert = (t) => store.sessions.append('s', { kind: 'message', role: 'assistant', message: { role: 'assistant', content: t }, text: t, partial: true });
    write = (id, t) => store.sessions.updatePartial(id, { role: 'assistant', content: t }, t);
    finish = (id, t) => store.sessions.finish(id, { message: { role: 'assistant', content: t }, display: { text: t }, text: t });
  }
  db.prepare("INSERT OR IGNORE INTO sessions (id, cwd, created_at, updated_at) VALUES ('s', '/w', 0, 0)").run();
  const changes = () => (db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
  const c0 = process.cpuUsage();
  const id = insert(text.slice(0, PARTIAL_STEP));
  let writes = 0;
  let changed = 0;
  for (let end = 2 * PARTIAL_STEP; end < text.length + PARTIAL_STEP; end += PARTIAL_STEP) {
    const before = changes();
    write(id, text.slice(0, end));
    changed += changes() - before;
    writes++;
  }
  finish(id, text);
  const c = process.cpuUsage(c0);
  db.close();
  return { cpuMs: (c.user + c.system) / 1000, changesPerWrite: changed / writes, writes };
}

export function runPartialBenchmark(runs = Number(process.env.BENCH_PARTIAL_RUNS ?? 7)): PartialResult[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-partial-'));
  try {
    return [20_000, 100_000].map((chars) => {
      const text = streamedReply(chars);
      const cur: number[] = [];
      const prev: number[] = [];
      // Warm-up (statements, pages), then alternated, so both meet the same machine.
      let c = partialWrites(dir, text, false);
      let p = partialWrites(dir, text, true);
      for (let i = 0; i < runs; i++) {
        c = partialWrites(dir, text, false);
        cur.push(c.cpuMs);
        p = partialWrites(dir, text, true);
        prev.push(p.cpuMs);
      }
      return { chars, writes: c.writes, cpuMs: median(cur), baselineCpuMs: median(prev), changesPerWrite: c.changesPerWrite, baselineChangesPerWrite: p.changesPerWrite };
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function formatPartialTable(rs: PartialResult[]): string {
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  return [
    `A streaming reply's row: its partial writes (one per ${PARTIAL_STEP} characters, as a paced reply flushes every 200 ms) and its finish, in a WAL database file; this process's CPU, median of ${process.env.BENCH_PARTIAL_RUNS ?? 7} alternated runs. Baseline: the same writes into a database of the previous schema (migration 9, whose search-index trigger re-indexed the whole reply at every write). Machine load (/proc/loadavg) ${load} on ${os.cpus().length} CPUs.`,
    '',
    '| reply | writes | CPU (ms) | baseline CPU (ms) | ratio | rows changed per write (index included) | baseline |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rs.map((r) => `| ${r.chars.toLocaleString('en')} chars | ${r.writes} | ${r.cpuMs.toFixed(2)} | ${r.baselineCpuMs.toFixed(2)} | ${(r.cpuMs / r.baselineCpuMs).toFixed(2)}× | ${r.changesPerWrite.toFixed(1)} | ${r.baselineChangesPerWrite.toFixed(1)} |`),
  ].join('\n');
}

export async function runSessionBenchmarks(which: string | undefined, write: (s: string) => void): Promise<void> {
  if (!which || which === 'reopen') {
    write('## Reopening a long session (bench/sessions.ts)\n\n');
    write(formatReopenTable(await runReopenBenchmark()) + '\n\n');
  }
  if (!which || which === 'prompt') {
    write('## Prompt size over a long session (bench/sessions.ts)\n\n');
    write(formatPromptTable(await runPromptBenchmark()) + '\n\n');
  }
  if (!which || which === 'partial') {
    write("## A streaming reply's row writes (bench/sessions.ts)\n\n");
    write(formatPartialTable(runPartialBenchmark()) + '\n\n');
  }
}

if (require.main === module) {
  runSessionBenchmarks(process.argv[2], (s) => process.stdout.write(s)).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
