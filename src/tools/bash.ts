import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import { capText, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from '../workspace/output';
import { commandDisplay } from './visible';
import type { ToolDefinition } from './tool';
import { confine } from '../workspace/paths';
import { RUN_TAG_VAR, descendantsSync, guardCommand, releaseCommand, signalPids, taggedPids, taggedPidsSync } from './process-sweep';
import type { Sandbox, Wrapped } from '../workspace/sandbox/sandbox';
import { explainBlocked } from '../workspace/sandbox/policy';

export const DEFAULT_BASH_TIMEOUT_MS = 120_000;
/** Time between SIGTERM and SIGKILL when the process group is killed. */
export const DEFAULT_KILL_GRACE_MS = 2_000;
/** Longest timeout the model may ask for. */
export const MAX_BASH_TIMEOUT_MS = 60 * 60_000;

export const bashParameters = z.object({
  command: z.string().min(1).describe('The shell command line to run (bash syntax; pipes, && and redirections work).'),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(MAX_BASH_TIMEOUT_MS)
    .optional()
    .describe('Kill the command after this many milliseconds (default 120000).'),
  cwd: z
    .string()
    .optional()
    .describe('Working directory, relative to the workspace root (default: the root). Must stay inside the workspace.'),
  escalate: z
    .boolean()
    .optional()
    .describe(
      'Run OUTSIDE the sandbox, with the user\'s full rights (network, files outside the workspace, .git). The user is always asked first. ' +
        'Only when the sandbox blocked the command and it really needs more; say why in your message.',
    ),
});

export interface BashResult {
  /** Exit code of the shell; null when it was ended by a signal. */
  exitCode: number | null;
  /** The signal that ended the shell (e.g. "SIGTERM" after a timeout). */
  signal?: string;
  /** stdout and stderr combined, in the order the chunks arrived, capped (see `truncated`). */
  output: string;
  /** True when the middle of the output was cut (the first and last lines are kept). */
  truncated: boolean;
  /** True when the command ran past its timeout and its process group was killed. */
  timedOut: boolean;
  durationMs: number;
  /** True when the command ran inside the OS sandbox. */
  sandboxed: boolean;
  /** What the sandbox most likely blocked (a failed sandboxed command whose output shows it). */
  sandboxBlocked?: string;
  /** Processes that left the command kept its output open; the call returned at its deadline anyway. */
  abandonedOutput?: boolean;
}

export interface BashToolOptions {
  /** Default timeout when the model gives none (default 120 s). */
  defaultTimeoutMs?: number;
  /** Grace period between SIGTERM and SIGKILL (default 2 s). */
  killGraceMs?: number;
  /** Shell binary run as `<shell> -c <command>` (default bash when present, else /bin/sh). */
  shell?: string;
  /** Secrets (the model API key): environment variables whose value contains one are left out of commands. */
  hideEnvValues?: string[];
  /** The workspace's sandbox; absent: commands run unsandboxed (as with sandbox.mode = "off"). */
  sandbox?: Sandbox | null;
}

/** The host's environment minus the variables holding a secret (shorter strings are not treated as secrets). */
function commandEnv(hide: readonly string[]): NodeJS.ProcessEnv {
  const secrets = hide.filter((s) => s.length >= 8);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !secrets.some((s) => v.includes(s))) env[k] = v;
  return env;
}

export const BASH_DESCRIPTION = [
  'Run a shell command in the workspace (bash -c) and return its exit code and combined stdout+stderr.',
  'The working directory is the workspace root unless `cwd` names a folder inside it. stdin is empty, so',
  'interactive programs cannot be answered: pass flags such as --yes or --no-pager. The command is killed',
  'after `timeoutMs` (default 120 s). Processes left running in the background are killed when the command',
  'ends. A non-zero exit code is reported in `exitCode`, not as an error. Long output keeps its first and',
  'last lines with a notice of what was omitted; redirect to a file and grep it when you need everything.',
  'Prefer the dedicated file tools for reading, searching and editing files.',
].join(' ');

/** What the model reads about the sandbox (appended to the description when one is in use). */
export const SANDBOX_DESCRIPTION = [
  'Commands run in a sandbox: they may create, edit and delete files in the workspace, but not in any .git folder;',
  'everything else is read-only, /tmp is private to the command, secrets (~/.ssh, ~/.aws, …) are hidden, other',
  'processes are invisible and the network is off unless the user allowed hosts (then HTTP(S) goes through the proxy',
  'in HTTPS_PROXY). When the sandbox blocks something the result says so in `sandboxBlocked`; if the command really',
  'needs more, call again with escalate: true (the user is asked; it then runs outside the sandbox).',
].join(' ');

// ---------------------------------------------------------------------------------------------------------
// Output collection: bounded memory, head + tail kept

/** Characters kept at the start and (rolling) at the end while a command runs; far above the output cap. */
const KEEP_CHARS = 256 * 1024;
/**
 * The kept output, notice included, fits the cap every tool result obeys (capToolResultJson: 2,000 text
 * lines, 50 KB of JSON), so that cap never cuts it a second time: the head's lines, the notice's line
 * and the tail's lines add up to at most 2,000, and the output's JSON-encoded size (escapes included) to
 * at most 50 KB.
 */
const HEAD_LINES = Math.floor(MAX_OUTPUT_LINES / 2);
const HEAD_BYTES = Math.floor(MAX_OUTPUT_BYTES / 2);
/** Room left for the truncation notice. */
const NOTICE_BYTES = 320;
/** One line goes to the notice. */
const TAIL_LINES = MAX_OUTPUT_LINES - HEAD_LINES - 1;
const TAIL_BYTES = MAX_OUTPUT_BYTES - HEAD_BYTES - NOTICE_BYTES;

/** Bytes of `s` as a JSON string body (what it weighs in a tool result: \n, quotes, control characters escaped). */
export function jsonBytes(s: string): number {
  return Buffer.byteLength(JSON.stringify(s), 'utf8') - 2;
}

function newlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** Keeps whole lines from the end within both caps; a single huge last line is cut to its last bytes. */
export function takeTail(text: string, maxLines: number, maxBytes: number): { text: string; lines: number } {
  const lines = text.split('\n');
  const endsWithNewline = lines.length > 1 && lines[lines.length - 1] === '';
  if (endsWithNewline) lines.pop();
  let bytes = 0;
  let start = lines.length;
  while (start > 0 && lines.length - start < maxLines) {
    const add = Buffer.byteLength(lines[start - 1], 'utf8') + 1;
    if (bytes + add > maxBytes) break;
    bytes += add;
    start--;
  }
  if (start === lines.length) {
    if (lines.length === 0) return { text: '', lines: 0 };
    const last = Buffer.from(lines[lines.length - 1], 'utf8');
    const cut = last.subarray(Math.max(0, last.length - maxBytes)).toString('utf8').replace(/^\uFFFD/, '');
    return { text: cut + (endsWithNewline ? '\n' : ''), lines: 1 };
  }
  const kept = lines.slice(start).join('\n') + (endsWithNewline ? '\n' : '');
  return { text: kept, lines: lines.length - start };
}

/**
 * Accumulates a command's output with bounded memory. When the whole output fits the shared cap
 * (2,000 lines / 50 KB) it is returned as is; otherwise the first ~1,000 lines / 25 KB and the last
 * ~1,000 lines / 25 KB are kept around a notice saying how much was omitted (errors tend to be at the end).
 */
export class OutputCollector {
  private head = '';
  private tail = '';
  private tailTrimmed = false;
  private bytes = 0;
  private newlines = 0;
  private lastChar = '';

  push(chunk: string): void {
    if (chunk === '') return;
    this.bytes += Buffer.byteLength(chunk, 'utf8');
    for (let i = chunk.indexOf('\n'); i !== -1; i = chunk.indexOf('\n', i + 1)) this.newlines++;
    this.lastChar = chunk[chunk.length - 1];
    let rest = chunk;
    if (this.tail === '' && this.head.length < KEEP_CHARS) {
      const room = KEEP_CHARS - this.head.length;
      this.head += rest.slice(0, room);
      rest = rest.slice(room);
    }
    if (rest !== '') {
      this.tail += rest;
      if (this.tail.length > 2 * KEEP_CHARS) {
        this.tail = this.tail.slice(-KEEP_CHARS);
        this.tailTrimmed = true;
      }
    }
  }

  get totalBytes(): number {
    return this.bytes;
  }

  get totalLines(): number {
    return this.newlines + (this.bytes > 0 && this.lastChar !== '\n' ? 1 : 0);
  }

  finish(): { output: string; truncated: boolean } {
    const totalLines = this.totalLines;
    if (totalLines <= MAX_OUTPUT_LINES && this.bytes <= MAX_OUTPUT_BYTES && !this.tailTrimmed) {
      const whole = this.head + this.tail;
      // Counted as the result cap counts: text lines (newlines) and JSON-encoded bytes.
      if (newlines(whole) <= MAX_OUTPUT_LINES && jsonBytes(whole) <= MAX_OUTPUT_BYTES) return { output: whole, truncated: false };
    }
    // Budgets in raw bytes, shrunk until the JSON-encoded output fits (escapes weigh more than their bytes).
    let headBytes = HEAD_BYTES;
    let tailBytes = TAIL_BYTES;
    let out = this.cut(totalLines, headBytes, tailBytes);
    for (let round = 0; round < 12 && jsonBytes(out) > MAX_OUTPUT_BYTES; round++) {
      const ratio = (MAX_OUTPUT_BYTES / jsonBytes(out)) * 0.97;
      headBytes = Math.max(64, Math.floor(headBytes * ratio));
      tailBytes = Math.max(64, Math.floor(tailBytes * ratio));
      out = this.cut(totalLines, headBytes, tailBytes);
    }
    return { output: out, truncated: true };
  }

  /** First lines, one notice line, last lines (the last line is always kept, cut to its end when huge). */
  private cut(totalLines: number, headBytes: number, tailBytes: number): string {
    const head = capText(this.head, HEAD_LINES, headBytes);
    const tail = takeTail(this.tailTrimmed ? this.tail : this.head + this.tail, TAIL_LINES, tailBytes);
    const omittedBytes = Math.max(0, this.bytes - Buffer.byteLength(head.text, 'utf8') - Buffer.byteLength(tail.text, 'utf8'));
    const headLines = head.keptLines > 0 ? head.keptLines : 1;
    const omittedLines = Math.max(0, totalLines - headLines - tail.lines);
    const notice =
      `[output truncated: ${omittedLines} of ${totalLines} lines (${omittedBytes} bytes) omitted from the middle; ` +
      `showing the first ${headLines} and the last ${tail.lines} lines. ` +
      'Re-run with the output redirected to a file and grep or read that file for the rest.]';
    const sep = head.text.endsWith('\n') || head.text === '' ? '' : '\n';
    return `${head.text}${sep}${notice}\n${tail.text}`;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Paths and processes

/** Resolves `cwd` against the workspace root; it must exist, be a directory and stay inside the root. */
export async function resolveCwd(root: string, cwd: string | undefined): Promise<string> {
  const realRoot = await fsp.realpath(root);
  if (cwd === undefined || cwd === '' || cwd === '.') return realRoot;
  // The file tools' confinement (no deny globs: the command can reach any file inside anyway).
  const { abs } = confine(realRoot, cwd);
  const st = await fsp.stat(abs).catch(() => null);
  if (!st) {
    throw new ToolError('not_found', `cwd "${cwd}" does not exist.`, {
      path: cwd,
      suggestedAction: 'Create the directory first or run from the workspace root.',
    });
  }
  if (!st.isDirectory()) {
    throw new ToolError('invalid_arguments', `cwd "${cwd}" is not a directory.`, { path: cwd });
  }
  return abs;
}

function defaultShell(): string {
  return existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
}

/** Sends `sig` to every process in the group led by `pgid`; false when the group no longer exists. */
function signalGroup(pgid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

/** A command whose processes may still exist: its process group and its environment tag. */
interface Started {
  pgid: number;
  tag: string;
}

/** Commands not yet swept with SIGKILL; whatever is left of them dies with the host. */
const live = new Set<Started>();
let exitHookInstalled = false;

function track(s: Started): void {
  live.add(s);
  guardCommand(s.pgid, s.tag);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // The host exits (Neovim quit, :CabooseStop then quit): no grace period will come, so SIGKILL now.
  process.on('exit', () => {
    for (const c of live) {
      signalGroup(c.pgid, 'SIGKILL');
      // A process in the middle of exec (or forked as the list was read) can be missed once: sweep
      // again while the last sweep still found some.
      for (let pass = 0; pass < 4 && signalPids(taggedPidsSync(c.tag), 'SIGKILL') > 0; pass++);
    }
  });
}

/**
 * SIGTERM to the command's process group and to every process that carries its tag (started in a
 * session of its own), now; SIGKILL to whatever is left after `graceMs`. The timer is unref'd so a
 * finished command does not keep the host (or a test) alive.
 */
function killCommand(s: Started, graceMs: number, o: { descendants: boolean }): void {
  // Found first: once the shell dies its children are re-parented and no longer traceable to it (so not
  // looked for when it is already gone, nor in the sandbox, whose PID namespace dies with bwrap).
  const descendants = o.descendants ? descendantsSync(s.pgid) : [];
  signalPids(descendants, 'SIGTERM');
  signalGroup(s.pgid, 'SIGTERM');
  void taggedPids(s.tag).then((pids) => signalPids(pids, 'SIGTERM'));
  const timer = setTimeout(() => {
    if (signalGroup(s.pgid, 0)) signalGroup(s.pgid, 'SIGKILL');
    signalPids(descendants, 'SIGKILL');
    void taggedPids(s.tag)
      .then((pids) => signalPids(pids, 'SIGKILL'))
      .finally(() => {
        live.delete(s);
        releaseCommand(s.pgid, s.tag);
      });
  }, graceMs);
  timer.unref();
}

// ---------------------------------------------------------------------------------------------------------
// The tool

export function createBashTool(opts: BashToolOptions = {}): ToolDefinition<typeof bashParameters, BashResult> {
  const defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_BASH_TIMEOUT_MS;
  const graceMs = opts.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const shell = opts.shell ?? defaultShell();
  const hide = opts.hideEnvValues ?? [];
  const sandbox = opts.sandbox ?? null;
  /** What the approval float says about where the command runs. */
  const where = (escalate: boolean | undefined): string => {
    const c = sandbox?.confinement(escalate) ?? 'unsandboxed';
    if (c === 'sandboxed') return `runs inside the ${sandbox?.describe() ?? 'sandbox'}`;
    if (c === 'escalated') return 'runs OUTSIDE the sandbox (escalate: true): full access to your files, secrets, processes and the network';
    if (c === 'unavailable') return `runs OUTSIDE any sandbox: ${sandbox?.describe() ?? 'no sandbox available'}`;
    return 'runs OUTSIDE any sandbox (sandbox.mode = "off"): full access to your files, secrets, processes and the network';
  };

  return {
    name: 'bash',
    // A getter: whether a sandbox runs is found out when the model is first told about the tool.
    get description() {
      return sandbox?.describedActive ? `${BASH_DESCRIPTION} ${SANDBOX_DESCRIPTION}` : BASH_DESCRIPTION;
    },
    parameters: bashParameters,
    policy: 'exec',
    confinement: (args) => {
      const escalate = typeof args === 'object' && args !== null && (args as { escalate?: unknown }).escalate === true;
      return sandbox?.confinement(escalate) ?? 'unsandboxed';
    },

    async preview(args, ctx) {
      const cwd = path.resolve(ctx.workspace.root, args.cwd ?? '.');
      const display = commandDisplay(args.command);
      return sandbox ? { kind: 'command', command: args.command, cwd, display, sandbox: where(args.escalate) } : { kind: 'command', command: args.command, cwd, display };
    },

    async execute(args, ctx) {
      const cancelled = (details?: unknown): ToolError =>
        new ToolError('cancelled', 'The command was cancelled; its process group was killed.', details === undefined ? {} : { details });
      if (ctx.signal.aborted) throw cancelled();
      const cwd = await resolveCwd(ctx.workspace.root, args.cwd);
      if (ctx.signal.aborted) throw cancelled();
      const timeoutMs = args.timeoutMs ?? defaultTimeoutMs;
      const started = performance.now();
      const tag = randomBytes(8).toString('hex');
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(commandEnv(hide))) if (v !== undefined) env[k] = v;
      Object.assign(env, { PAGER: 'cat', GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', [RUN_TAG_VAR]: tag });
      const sandboxed = sandbox?.confinement(args.escalate) === 'sandboxed';
      let wrapped: Wrapped | null = null;
      if (sandboxed && sandbox) {
        try {
          wrapped = await sandbox.wrap(shell, ['-c', args.command], cwd, env);
        } catch (e) {
          throw new ToolError('internal_error', `Could not prepare the sandbox: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      if (ctx.signal.aborted) {
        wrapped?.dispose();
        throw cancelled();
      }

      return new Promise<BashResult>((resolve, reject) => {
        const child = wrapped
          ? spawn(wrapped.command, wrapped.args, { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: wrapped.env })
          : spawn(shell, ['-c', args.command], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
        const self: Started | null = child.pid === undefined ? null : { pgid: child.pid, tag };
        if (self) track(self);
        const collected = new OutputCollector();
        let timedOut = false;
        let aborted = false;
        let killing = false;
        let settled = false;
        let forced: NodeJS.Timeout | null = null;
        let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;

        // The call returns at its deadline whatever the command's processes do: a process that left the
        // group and the sweep (`env -i setsid …`) may hold the output pipes open; after the kill and its
        // grace period the pipes are closed on our side and the call ends.
        const kill = (): void => {
          if (killing || !self) return;
          killing = true;
          killCommand(self, graceMs, { descendants: !sandboxed && exit === null });
          forced = setTimeout(() => finish(null, null, true), graceMs + 500);
          forced.unref();
        };
        const timer = setTimeout(() => {
          timedOut = true;
          kill();
        }, timeoutMs);
        const onAbort = (): void => {
          aborted = true;
          kill();
        };
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        const cleanup = (): void => {
          settled = true;
          clearTimeout(timer);
          if (forced) clearTimeout(forced);
          ctx.signal.removeEventListener('abort', onAbort);
          wrapped?.dispose();
          if (sandboxed) sandbox?.rescan();
        };

        const take = (text: string): void => {
          if (text === '') return;
          collected.push(text);
          ctx.progress?.(text);
        };
        const decoders = [new StringDecoder('utf8'), new StringDecoder('utf8')] as const;
        child.stdout?.on('data', (buf: Buffer) => take(decoders[0].write(buf)));
        child.stderr?.on('data', (buf: Buffer) => take(decoders[1].write(buf)));

        const finish = (code: number | null, signal: NodeJS.Signals | null, abandoned = false): void => {
          if (settled) return;
          cleanup();
          if (abandoned) {
            child.stdout?.destroy();
            child.stderr?.destroy();
            ({ code, signal } = exit ?? { code: null, signal: 'SIGKILL' });
          }
          take(decoders[0].end());
          take(decoders[1].end());
          const { output, truncated } = collected.finish();
          const durationMs = Math.round(performance.now() - started);
          if (aborted) {
            reject(cancelled({ output, truncated, durationMs }));
            return;
          }
          const result: BashResult = { exitCode: code, output, truncated, timedOut, durationMs, sandboxed };
          if (signal) result.signal = signal;
          if (abandoned) result.abandonedOutput = true;
          if (sandboxed && sandbox && code !== 0) {
            const blocked = explainBlocked(output, { mode: sandbox.mode === 'read-only' ? 'read-only' : 'workspace-write', network: sandbox.network });
            if (blocked) result.sandboxBlocked = blocked;
          }
          resolve(result);
        };

        child.on('error', (err) => {
          if (settled) return;
          cleanup();
          reject(new ToolError('internal_error', `Could not run the command: ${err.message}`));
        });
        // The shell is done: the timeout no longer applies, and anything it left in the background goes
        // with its group (SIGKILL after the grace period ends even processes that ignore SIGTERM).
        child.on('exit', (code, signal) => {
          exit = { code, signal };
          clearTimeout(timer);
          kill();
        });
        child.on('close', (code, signal) => finish(code, signal));
      });
    },
  };
}
