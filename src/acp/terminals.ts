/**
 * An external agent's terminals (ACP terminal/*): each runs one command through our bash tool (its
 * sandbox, audit and cancellation), refused in plan mode; its output stays readable after release until
 * the turn ends, for the tool line that embeds it.
 */
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import type * as acp from '@agentclientprotocol/sdk';
import type { PermissionMode } from '../agent/loop';
import { shellQuote } from './render';
import { refusal } from './sdk';
import type { AcpHost } from './types';

interface Terminal {
  ac: AbortController;
  done: Promise<{ output: string; truncated: boolean; exitCode: number | null; signal: string | null }>;
  result?: { output: string; truncated: boolean; exitCode: number | null; signal: string | null };
  toolLine?: string;
}

export class AcpTerminals {
  private readonly terminals = new Map<string, Terminal>();
  /** Output of released terminals, for the tool lines that embed it (until the turn ends). */
  private readonly released = new Map<string, string>();

  constructor(
    private readonly host: AcpHost,
    private readonly mode: () => PermissionMode,
  ) {}

  /** A terminal's output, running, done or released. */
  outputOf(id: string): string | undefined {
    return this.terminals.get(id)?.result?.output ?? this.released.get(id);
  }

  /** terminal/kill. */
  kill(id: string): void {
    this.terminals.get(id)?.ac.abort();
  }

  /** terminal/release. */
  release(id: string): void {
    const t = this.terminals.get(id);
    t?.ac.abort();
    // Its output stays for the tool line that embeds it (until the turn ends).
    if (t?.result) this.released.set(id, t.result.output);
    this.terminals.delete(id);
  }

  /** Stops every running command (a stop); `forget` also drops them (the agent's process ended). */
  abortAll(forget = false): void {
    for (const t of this.terminals.values()) t.ac.abort();
    if (forget) this.terminals.clear();
  }

  /** The turn ended: released terminals' output is no longer needed. */
  turnEnded(): void {
    this.released.clear();
  }

  /** terminal/create. */
  create(p: acp.CreateTerminalRequest): acp.CreateTerminalResponse {
    if (this.mode() === 'plan') throw refusal('Commands are refused: the user\'s session is in plan mode.', { kind: 'blocked_by_mode' });
    const env = (p.env ?? []).map((e) => `${e.name}=${shellQuote(e.value)}`);
    const command = [...(env.length > 0 ? ['env', ...env] : []), shellQuote(p.command), ...(p.args ?? []).map(shellQuote)].join(' ');
    const cwd = p.cwd ? path.relative(this.host.cwd, path.resolve(this.host.cwd, p.cwd)) || undefined : undefined;
    const id = `term-${randomUUID()}`;
    const ac = new AbortController();
    const limit = p.outputByteLimit ?? null;
    const term: Terminal = {
      ac,
      done: this.host.call('bash', { command, ...(cwd ? { cwd } : {}) }, { signal: ac.signal }).then((r) => {
        let result: NonNullable<Terminal['result']>;
        if (r.ok) {
          const d = r.data as { output: string; truncated: boolean; exitCode: number | null; signal?: string };
          let output = d.output;
          let truncated = d.truncated;
          if (limit !== null && Buffer.byteLength(output) > limit) {
            output = Buffer.from(output).subarray(-limit).toString('utf8').replace(/^\uFFFD+/, '');
            truncated = true;
          }
          result = { output, truncated, exitCode: d.exitCode, signal: d.signal ?? null };
        } else {
          result = { output: r.error.message, truncated: false, exitCode: null, signal: r.error.kind === 'cancelled' ? 'SIGTERM' : null };
        }
        term.result = result;
        this.host.events.diskChanged();
        return result;
      }),
    };
    this.terminals.set(id, term);
    return { terminalId: id };
  }

  /** terminal/output. */
  output(p: acp.TerminalOutputRequest): acp.TerminalOutputResponse {
    const t = this.terminals.get(p.terminalId);
    if (!t) throw refusal(`no terminal ${p.terminalId}`);
    const r = t.result;
    return r ? { output: r.output, truncated: r.truncated, exitStatus: { exitCode: r.exitCode, signal: r.signal } } : { output: '', truncated: false };
  }

  /** terminal/wait_for_exit. */
  async wait(p: acp.WaitForTerminalExitRequest): Promise<acp.WaitForTerminalExitResponse> {
    const t = this.terminals.get(p.terminalId);
    if (!t) throw refusal(`no terminal ${p.terminalId}`);
    const r = await t.done;
    return { exitCode: r.exitCode, signal: r.signal };
  }
}
