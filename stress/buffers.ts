/**
 * Unsaved buffers: the agent edits, writes, deletes, moves and patches a file whose Neovim buffer has
 * unsaved changes, while the user types — between the agent's read and its write, and (through the
 * agent loop) during the call itself. The user's text is never lost (an applied change is one undo
 * step away from it, and nothing typed after the read is overwritten) and never written to disk
 * without them. Run after `npm run build`: `node --import tsx stress/buffers.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startFakeOpenAI, type FakeRequest } from '../test/support/fake-openai';
import { lastToolResults } from '../test/support/chat-requests';
import { toolCall, type ToolCallResult } from '../test/support/buffers';
import type { TestNvim } from '../test/support/nvim';
import { Checks, mainIfDirect, scaled, type SuiteReport } from './lib';
import { chatText, nvimVersion, startSession, waitIdle } from './nvim-session';

const DISK = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

type Op = 'edit_file' | 'write_file' | 'apply_patch (sha map)' | 'apply_patch (no sha)' | 'delete_file' | 'move_file';
const OPS: Op[] = ['edit_file', 'write_file', 'apply_patch (sha map)', 'apply_patch (no sha)', 'delete_file', 'move_file'];

function opArgs(op: Op, sha: string): [string, Record<string, unknown>] {
  const patch = '*** Begin Patch\n*** Update File: f.txt\n@@\n line 2\n-line 3\n+LINE THREE (agent)\n line 4\n*** End Patch\n';
  switch (op) {
    case 'edit_file':
      return ['edit_file', { path: 'f.txt', expectedSha256: sha, edits: [{ oldText: 'line 3\n', newText: 'LINE THREE (agent)\n' }] }];
    case 'write_file':
      return ['write_file', { path: 'f.txt', content: 'the agent rewrote everything\n', expectedSha256: sha }];
    case 'apply_patch (sha map)':
      return ['apply_patch', { patch, expectedSha256ByPath: { 'f.txt': sha } }];
    case 'apply_patch (no sha)':
      return ['apply_patch', { patch }];
    case 'delete_file':
      return ['delete_file', { path: 'f.txt', expectedSha256: sha }];
    case 'move_file':
      return ['move_file', { from: 'f.txt', to: 'moved.txt', expectedSha256: sha }];
  }
}

const bufLines = (t: TestNvim) => t.lua<string[]>("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('f.txt'), 0, -1, false)");
const modified = (t: TestNvim) => t.lua<boolean>("return vim.bo[vim.fn.bufnr('f.txt')].modified");

/** Types a line at the end of the buffer, as keys (Go…<Esc>), and waits until Neovim has processed them. */
async function type(t: TestNvim, text: string): Promise<void> {
  await t.nvim.input(`Go${text}<Esc>`);
  await t.waitFor(async () => (await bufLines(t)).includes(text), `"${text}" typed`);
}

async function reset(t: TestNvim): Promise<void> {
  await t.cmd('silent! %bwipeout!');
  for (const n of fs.readdirSync(t.cwd)) fs.rmSync(path.join(t.cwd, n), { recursive: true, force: true });
  fs.writeFileSync(path.join(t.cwd, 'f.txt'), DISK);
  await t.cmd('edit f.txt');
  await t.cmd('messages clear');
}

/** What the disk and the buffer may hold after `op`; a problem description or null. */
function expectOutcome(op: Op, typedBetween: boolean, r: ToolCallResult): string | null {
  const refused = op === 'delete_file' || op === 'move_file' ? 'unsaved_buffer' : typedBetween && op !== 'apply_patch (no sha)' ? 'stale_file' : null;
  if (refused) return !r.ok && r.error?.kind === refused ? null : `expected ${refused}, got ${r.ok ? 'ok' : `${r.error?.kind}: ${r.error?.message}`}`;
  if (!r.ok) return `expected the change in the buffer, got ${r.error?.kind}: ${r.error?.message}`;
  const saved = JSON.stringify(r.data).match(/"savedToDisk":(true|false)/g) ?? [];
  return saved.length > 0 && saved.every((s) => s.endsWith('false')) ? null : `not reported as unsaved: ${JSON.stringify(r.data).slice(0, 200)}`;
}

async function direct(t: TestNvim, checks: Checks, rounds: number): Promise<void> {
  for (let k = 0; k < rounds; k++) {
    for (const op of OPS) {
      for (const typedBetween of [true, false]) {
        await reset(t);
        const mine1 = `user typed first ${k}`;
        await type(t, mine1);
        const read = await toolCall(t, 'read_file', { path: 'f.txt' });
        if (!read.ok) throw new Error(`read_file: ${JSON.stringify(read.error)}`);
        const mine2 = `user typed between read and write ${k}`;
        if (typedBetween) await type(t, mine2);
        const before = await bufLines(t);
        const [tool, args] = opArgs(op, read.data!.sha256 as string);
        const r = await toolCall(t, tool, args);
        const after = await bufLines(t);
        const label = `${op}${typedBetween ? ', typed between' : ''}`;
        checks.record('the right outcome (stale_file / unsaved_buffer / into the buffer, not saved)', expectOutcome(op, typedBetween, r) && `${label}: ${expectOutcome(op, typedBetween, r)}`);
        const typed = [mine1, ...(typedBetween ? [mine2] : [])];
        const kept = r.ok && op === 'write_file' ? after.includes('the agent rewrote everything') : typed.every((l) => after.includes(l));
        checks.record("the user's text is kept in the buffer (a whole-file write after reading it: one undo away)", kept ? null : `${label}: buffer ${JSON.stringify(after)}`);
        if (r.ok) {
          await t.cmd('undo');
          const undone = await bufLines(t);
          checks.record('an applied change is exactly one undo step', JSON.stringify(undone) === JSON.stringify(before) ? null : `${label}: after undo ${JSON.stringify(undone)}`);
        }
        const disk = fs.existsSync(path.join(t.cwd, 'f.txt')) ? fs.readFileSync(path.join(t.cwd, 'f.txt'), 'utf8') : null;
        checks.record('the disk never gets the unsaved text (f.txt unchanged, nothing moved)', disk === DISK && !fs.existsSync(path.join(t.cwd, 'moved.txt')) ? null : `${label}: disk ${JSON.stringify(disk)}`);
        checks.record('the buffer stays modified (not written behind the user)', (await modified(t)) ? null : `${label}: buffer not modified`);
        const msgs = await t.lua<string>("return vim.fn.execute('messages')");
        checks.record('no Neovim error or prompt', /E\d+:|W1[0-9]/.test(msgs) ? `${label}: ${msgs.trim().slice(0, 200)}` : null);
      }
    }
  }
}

/**
 * Through the agent loop (asynchronous, so Neovim keeps running): a timer appends a line every 2 ms
 * while the model reads f.txt and then changes it with the sha it read.
 */
async function throughAgent(checks: Checks, rounds: number): Promise<void> {
  const outcomes = new Map<string, number>();
  const fake = await startFakeOpenAI();
  const t = await startSession(fake.url, "require('caboose').setup({ mode = 'chug' })");
  try {
    for (let k = 0; k < rounds; k++) {
      for (const op of OPS) {
        await reset(t);
        await type(t, `before the turn ${k}`);
        const change = (req: FakeRequest) => {
          const read = [...lastToolResults(req).values()][0];
          const [name, args] = opArgs(op, String(read?.data?.sha256 ?? ''));
          return { toolCalls: [{ name, arguments: args }] };
        };
        fake.script({ toolCalls: [{ name: 'read_file', arguments: { path: 'f.txt' } }] }, change, { text: `turn ${k} ${op} done` });
        await t.lua(`
          local buf = vim.fn.bufnr('f.txt')
          _G.typed = 0
          _G.typing = vim.uv.new_timer()
          _G.typing:start(0, 2, vim.schedule_wrap(function()
            if _G.typed >= 400 then return end
            _G.typed = _G.typed + 1
            vim.api.nvim_buf_set_lines(buf, -1, -1, false, { 'typing ' .. _G.typed })
          end))`);
        await t.cmd(`Caboose do it ${k}`);
        let problem: string | null = null;
        try {
          await t.waitFor(async () => (await chatText(t)).includes(`turn ${k} ${op} done`), 'the turn', 30_000);
          await waitIdle(t);
        } catch (err) {
          problem = (err as Error).message.split('\n')[0];
        }
        const n = await t.lua<number>('_G.typing:stop(); _G.typing:close(); return _G.typed');
        const lines = await bufLines(t);
        const typed = Array.from({ length: n }, (_, i) => `typing ${i + 1}`);
        const missing = typed.filter((l) => !lines.includes(l));
        const result = fake.chatRequests.at(-1) ? [...lastToolResults(fake.chatRequests.at(-1)!).values()][0] : undefined;
        checks.record('agent loop: the turn completes while the user types', problem && `${op}: ${problem}`);
        checks.record("agent loop: every line typed during the call is kept", missing.length && !(result?.ok && op === 'write_file') ? `${op}: lost ${missing.length} of ${n} (${missing.slice(0, 3).join(', ')})` : null);
        const disk = fs.existsSync(path.join(t.cwd, 'f.txt')) ? fs.readFileSync(path.join(t.cwd, 'f.txt'), 'utf8') : null;
        checks.record('agent loop: the disk never gets the unsaved text', disk === DISK ? null : `${op}: disk ${JSON.stringify(disk?.slice(0, 200))}`);
        const outcome = `${op} → ${result ? (result.ok ? 'ok' : result.error?.kind) : 'none'}`;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    }
  } finally {
    await t.close();
    await fake.close();
  }
  checks.figures.push(`Agent loop outcomes (the call the model made while the user typed): ${[...outcomes].map(([k, n]) => `${k} ×${n}`).join('; ')}.`);
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks();
  const fake = await startFakeOpenAI();
  const t = await startSession(fake.url, "require('caboose').setup({})");
  try {
    await direct(t, checks, scaled(8));
  } finally {
    await t.close();
    await fake.close();
  }
  await throughAgent(checks, scaled(3));
  checks.figures.push(`Neovim ${nvimVersion()}; direct tool calls (require('caboose').tool_call, no model): ${OPS.join(', ')}, each with and without typing between read and write.`);
  checks.figures.push('Agent loop (chug mode): the model reads, then changes f.txt with the sha it read, while a timer appends a line every 2 ms.');
  return checks.report('buffers', 'Unsaved buffers while the user types', started);
}

mainIfDirect(module, run);
