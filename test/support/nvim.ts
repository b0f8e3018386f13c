/**
 * Starts a real headless Neovim (`--embed --headless`) with caboose on the runtimepath and isolated
 * XDG folders, attached with the node-client. Each test gets a fresh one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { attach, type NeovimClient } from 'neovim';
import { nvimBinaries, type NvimBinary } from './nvim-path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

export interface StartOptions {
  nvim: NvimBinary;
  /** Extra environment (e.g. OPENAI_BASE_URL). OPENAI_* and CABOOSE_* of the runner are not inherited. */
  env?: Record<string, string>;
  /** Working directory (the workspace root); a fresh temp dir by default. */
  cwd?: string;
  /** Lua run at the end of init (e.g. a setup() call). */
  initLua?: string;
  /** Do not put the plugin on the runtimepath (classic remote-plugin tests add it themselves). */
  extraArgs?: string[];
  /** Reuse a home (XDG folders) from an earlier instance; it is then not deleted on close. */
  home?: string;
  /** The plugin folder put on the runtimepath (default: this checkout); null puts none there. */
  pluginRoot?: string | null;
}

export interface TestNvim {
  nvim: NeovimClient;
  proc: ChildProcess;
  cwd: string;
  home: string;
  dataDir: string;
  logFile: string;
  lua<T = unknown>(code: string, args?: unknown[]): Promise<T>;
  cmd(command: string): Promise<void>;
  /** Polls `probe` until it returns a truthy value; rejects with `what` after timeoutMs. */
  waitFor<T>(probe: () => Promise<T | null | undefined | false>, what: string, timeoutMs?: number): Promise<T>;
  chatLines(): Promise<string[]>;
  /** CabooseStateChanged payloads seen so far. */
  stateEvents(): Promise<{ state: string; previous: string }[]>;
  notifications(): Promise<{ msg: string; level: number }[]>;
  close(): Promise<void>;
}

const INIT_LUA = (repo: string | null, extra: string) => `
${repo === null ? '' : `vim.opt.runtimepath:prepend(${JSON.stringify(repo)})`}
vim.o.swapfile = false
vim.o.more = false
_G.caboose_test = { events = {}, notify = {} }
vim.api.nvim_create_autocmd('User', {
  pattern = 'CabooseStateChanged',
  callback = function(ev) table.insert(_G.caboose_test.events, ev.data) end,
})
local orig_notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(_G.caboose_test.notify, { msg = msg, level = level or 2 })
end
${extra}
`;

export function defaultNvim(): NvimBinary {
  return nvimBinaries()[0];
}

export async function startNvim(opts: StartOptions): Promise<TestNvim> {
  const home = opts.home ?? fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-nvim-'));
  const cwd = opts.cwd ?? fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-ws-'));
  const xdg = (n: string) => {
    const d = path.join(home, n);
    fs.mkdirSync(d, { recursive: true });
    return d;
  };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('OPENAI_') || k.startsWith('CABOOSE_') || k.startsWith('NVIM')) continue;
    env[k] = v;
  }
  Object.assign(env, {
    XDG_CONFIG_HOME: xdg('config'),
    XDG_DATA_HOME: xdg('data'),
    XDG_STATE_HOME: xdg('state'),
    XDG_CACHE_HOME: xdg('cache'),
    HOME: home,
    OPENAI_API_KEY: 'test-key',
    ...(opts.env ?? {}),
  });
  const init = path.join(home, 'init.lua');
  fs.writeFileSync(init, INIT_LUA(opts.pluginRoot === undefined ? REPO_ROOT : opts.pluginRoot, opts.initLua ?? ''));
  const proc = spawn(opts.nvim.path, ['--embed', '--headless', '-u', init, '-i', 'NONE', '-n', ...(opts.extraArgs ?? [])], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const nvim = attach({ proc, options: { logger: silentLogger as never } });
  // Fail fast if nvim died at start.
  await Promise.race([
    nvim.apiInfo,
    new Promise((_, reject) => proc.once('exit', (code) => reject(new Error(`nvim exited ${code}: ${stderr}`)))),
  ]);
  // A request to a Neovim that has exited never settles: fail it instead, so a test whose Neovim quit
  // fails at once rather than at the runner's timeout.
  const exited = new Promise<never>((_, reject) =>
    proc.once('exit', (code, signal) => reject(new Error(`nvim exited (${signal ?? code})${stderr ? `: ${stderr}` : ''}`))),
  );
  exited.catch(() => undefined);
  const live = <T>(p: Promise<T>): Promise<T> => Promise.race([p, exited]);
  const lua = <T>(code: string, args: unknown[] = []) => live(nvim.lua(code, args as never[]) as Promise<T>);
  const t: TestNvim = {
    nvim,
    proc,
    cwd,
    home,
    dataDir: path.join(home, 'data', 'nvim', 'caboose'),
    logFile: path.join(home, 'state', 'nvim', 'caboose.log'),
    lua,
    cmd: (c) => live(nvim.command(c)),
    async waitFor(probe, what, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      let last: unknown;
      for (;;) {
        try {
          const v = await probe();
          if (v) return v as never;
          last = v;
        } catch (err) {
          last = err;
        }
        if (Date.now() > deadline) {
          const chat = await t.chatLines().catch(() => [] as string[]);
          throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})\n--- chat tail ---\n${chat.slice(-15).join('\n')}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    chatLines: () => lua<string[]>("return require('caboose.chat').lines()"),
    stateEvents: () => lua("return _G.caboose_test.events"),
    notifications: () => lua("return _G.caboose_test.notify"),
    async close() {
      try {
        nvim.quit();
      } catch {
        /* already gone */
      }
      await new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        const timer = setTimeout(() => {
          proc.kill('SIGKILL');
          resolve();
        }, 2000);
        proc.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (!opts.home) fs.rmSync(home, { recursive: true, force: true });
      if (!opts.cwd) fs.rmSync(cwd, { recursive: true, force: true });
    },
  };
  return t;
}

const noop = () => undefined;
const silentLogger = { level: 'error', debug: noop, info: noop, warn: noop, error: noop };

/** Runs `fn` once per available Neovim version (0.12 and 0.10 in CI). */
export function forEachNvim(fn: (bin: NvimBinary) => void): void {
  for (const bin of nvimBinaries()) fn(bin);
}

/** Lines of the loaded buffer with filetype `ft` (null while there is none): a listing float, say. */
export function filetypeLines(t: TestNvim, ft: string): Promise<string[] | null> {
  return t.lua<string[] | null>(
    `for _, b in ipairs(vim.api.nvim_list_bufs()) do
       if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].filetype == ... then return vim.api.nvim_buf_get_lines(b, 0, -1, false) end
     end
     return nil`,
    [ft],
  );
}
