/**
 * An external agent (Claude Code, Codex, Gemini CLI, opencode…) in our chat, over the Agent Client
 * Protocol, through our hands: its file reads see the user's unsaved buffers, its writes go through our
 * write path (inline review, stale refusal, one undo step, trash/checkpoint/audit), its permission
 * requests through our approval float and mode, its terminals through our bash tool.
 *
 * The connection is the protocol's own SDK (`@agentclientprotocol/sdk`); nothing here frames JSON-RPC.
 * Never imports the Neovim client: the host passes `AcpHost` (types.ts).
 *
 * This file is the agent's process, its session and turns, its updates and permission requests; its
 * file requests are files.ts, its terminals terminals.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import type * as acp from '@agentclientprotocol/sdk';
import type { AgentState, ApprovalDecision, ApprovalRequest, PermissionMode } from '../agent/loop';
import { permissionFor } from '../tools/permissions';
import type { AcpAgentConfig } from './config';
import { blockText, isFinished, kindPolicy, mergeToolCall, newToolCall, planTodos, toolDetails, toolStatus, type AcpToolCallState } from './render';
import { sdk } from './sdk';
import { AcpFiles } from './files';
import { AcpTerminals } from './terminals';
import type { AcpHost } from './types';

export type { AcpEvents, AcpHost } from './types';

/** How much of the agent's stderr a crash report shows. */
const STDERR_TAIL_BYTES = 4096;
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** Time between SIGTERM and SIGKILL when the agent's process is ended. */
const KILL_GRACE_MS = 2000;

interface Queued {
  id: number;
  text: string;
  prompt: string;
}

export class AcpAgent {
  private child: ChildProcess | null = null;
  private conn: acp.ClientConnection | null = null;
  private acpSessionId: string | null = null;
  private canLoad = false;
  private stderrTail = '';
  private currentState: AgentState = 'idle';
  private currentMode: PermissionMode;
  private disposed = false;
  private starting: Promise<void> | null = null;
  private readonly queue: Queued[] = [];
  private turn: { cancelled: boolean; text: string } | null = null;
  /** Updates the agent replays during session/load are not drawn again (the chat has the transcript). */
  private replaying = false;
  private readonly tools = new Map<string, AcpToolCallState>();
  private readonly files: AcpFiles;
  private readonly terminals: AcpTerminals;
  private readonly permissions = new Map<string, (outcome: acp.RequestPermissionResponse) => void>();
  private thought: { id: string; text: string } | null = null;
  private thoughts = 0;
  private readonly onHostExit = () => this.kill('SIGKILL');

  constructor(
    readonly name: string,
    private readonly config: AcpAgentConfig,
    private readonly host: AcpHost,
  ) {
    this.currentMode = host.mode;
    this.files = new AcpFiles(name, host, { mode: () => this.currentMode, state: () => this.currentState, ask: (req) => this.ask(req) });
    this.terminals = new AcpTerminals(host, () => this.currentMode);
  }

  get mode(): PermissionMode {
    return this.currentMode;
  }
  get state(): AgentState {
    return this.currentState;
  }
  get alwaysAllowedTools(): string[] {
    return [...this.host.grants];
  }
  revoke(tool?: string): string[] {
    const revoked = tool === undefined ? [...this.host.grants] : this.host.grants.has(tool) ? [tool] : [];
    for (const t of revoked) this.host.grants.delete(t);
    return revoked;
  }
  setMode(mode: PermissionMode): void {
    this.currentMode = mode;
  }
  /** The agent's process id while it runs (tests, :checkhealth). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  private setState(s: AgentState): void {
    const prev = this.currentState;
    if (prev === s) return;
    this.currentState = s;
    this.host.events.state(s, prev);
  }

  /** Starts the agent's process, initializes, and opens (or, with `resume` and agent support, loads) a session. */
  start(): Promise<void> {
    const resume = this.host.resume ?? null;
    this.host.resume = null; // a restart after a crash opens a new session
    this.starting ??= this.doStart(resume).catch((e: unknown) => {
      this.starting = null;
      this.kill('SIGTERM');
      throw e;
    });
    return this.starting;
  }

  private async doStart(resume: string | null): Promise<void> {
    const { client, ndJsonStream, PROTOCOL_VERSION } = sdk();
    this.stderrTail = '';
    const child = spawn(this.config.command, this.config.args ?? [], {
      cwd: this.host.cwd,
      env: { ...process.env, ...(this.config.env ?? {}) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    process.once('exit', this.onHostExit);
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (e) => reject(new Error(`agent '${this.name}' did not start (${this.config.command}): ${e.message}`)));
    });
    // Writing to an agent that just died fails with EPIPE: its exit is reported, the host must not crash.
    child.stdin!.on('error', (e) => this.host.log.debug('acp %s stdin: %s', this.name, e.message));
    child.stdout!.on('error', (e) => this.host.log.debug('acp %s stdout: %s', this.name, e.message));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-STDERR_TAIL_BYTES);
    });
    const exited = new Promise<never>((_, reject) => {
      // 'close': after the exit and the end of its output (the stderr tail is complete).
      child.once('close', (code, signal) => {
        reject(new Error(this.exitMessage(code, signal)));
        this.onExit(child, code, signal);
      });
    });
    exited.catch(() => undefined);
    await spawned;
    const stream = ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
    const app = client({ name: 'caboose.nvim' })
      .onNotification('session/update', ({ params }) => this.onUpdate(params))
      .onRequest('session/request_permission', ({ params }) => this.onPermission(params))
      .onRequest('fs/read_text_file', ({ params }) => this.files.read(params))
      .onRequest('fs/write_text_file', ({ params, signal }) => this.files.write(params, signal))
      .onRequest('terminal/create', ({ params }) => this.terminals.create(params))
      .onRequest('terminal/output', ({ params }) => this.terminals.output(params))
      .onRequest('terminal/wait_for_exit', ({ params }) => this.terminals.wait(params))
      .onRequest('terminal/kill', ({ params }) => {
        this.terminals.kill(params.terminalId);
        return {};
      })
      .onRequest('terminal/release', ({ params }) => {
        this.terminals.release(params.terminalId);
        return {};
      });
    const conn = app.connect(stream);
    this.conn = conn;
    const timeout = this.config.start_timeout_ms ?? DEFAULT_START_TIMEOUT_MS;
    const within = <T>(p: Promise<T>, what: string): Promise<T> =>
      Promise.race([
        p,
        exited,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`agent '${this.name}': ${what} took longer than ${timeout} ms`)), timeout).unref()),
      ]);
    const init = await within(
      conn.agent.request('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
        clientInfo: { name: 'caboose.nvim', version: this.host.clientVersion },
      }),
      'initialize',
    );
    this.canLoad = init.agentCapabilities?.loadSession === true;
    if (resume && this.canLoad) {
      this.replaying = true;
      try {
        await within(conn.agent.request('session/load', { sessionId: resume, cwd: this.host.cwd, mcpServers: [] }), 'session/load');
        this.acpSessionId = resume;
      } catch (e) {
        this.host.events.notice(`agent '${this.name}' could not resume its session (${e instanceof Error ? e.message : String(e)}); a new one starts`);
      } finally {
        this.replaying = false;
      }
    } else if (resume) {
      this.host.events.notice(`agent '${this.name}' cannot reload a session (no session/load): it starts a new one; the transcript above is ours only`);
    }
    if (!this.acpSessionId) {
      const s = await within(conn.agent.request('session/new', { cwd: this.host.cwd, mcpServers: [] }), 'session/new');
      this.acpSessionId = s.sessionId;
    }
    this.host.events.sessionStarted(this.acpSessionId, this.canLoad);
    this.host.log.info('acp agent %s started (pid %d, session %s)', this.name, child.pid ?? -1, this.acpSessionId);
  }

  private exitMessage(code: number | null, signal: NodeJS.Signals | null): string {
    const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
    const tail = this.stderrTail.trim();
    return `agent '${this.name}' ${how}` + (tail ? `; its last output:\n${tail.split('\n').slice(-15).join('\n')}` : '');
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) return;
    // A process that never started was reported by start() ("did not start").
    const ran = child.pid !== undefined;
    process.removeListener('exit', this.onHostExit);
    this.child = null;
    this.conn = null;
    this.acpSessionId = null;
    this.starting = null;
    this.terminals.abortAll(true);
    this.cancelPermissions();
    if (this.disposed || !ran) return;
    // A crash: reported with what the agent said last; the next message starts it again.
    this.host.events.error(`${this.exitMessage(code, signal)}\nThe next message restarts it (or :CabooseAgent picks another).`);
    if (this.turn) this.turn.cancelled = true;
  }

  /** Sends a message: a new turn, or queued behind the running one. */
  send(text: string, prompt: string, id: number): { status: 'started' } | { status: 'queued'; position: number } | { status: 'rejected'; reason: string } {
    if (this.turn || this.queue.length > 0) {
      if (this.queue.length >= this.host.maxQueue) return { status: 'rejected', reason: 'queue_full' };
      this.queue.push({ id, text, prompt });
      return { status: 'queued', position: this.queue.length };
    }
    void this.runTurn({ id, text, prompt });
    return { status: 'started' };
  }

  private async runTurn(m: Queued): Promise<void> {
    const turn = { cancelled: false, text: '' };
    this.turn = turn;
    this.host.events.turnStart({ id: m.id, text: m.text });
    this.setState('streaming');
    let stopReason: string | null = null;
    try {
      await this.start();
      if (turn.cancelled) throw new Error('cancelled');
      const res = await this.conn!.agent.request('session/prompt', { sessionId: this.acpSessionId!, prompt: [{ type: 'text', text: m.prompt }] });
      stopReason = res.stopReason;
    } catch (e) {
      // A closed connection is the agent's process ending: its exit is reported with its stderr tail.
      const closed = e instanceof Error && /connection closed/i.test(e.message);
      if (!turn.cancelled && !closed) this.host.events.error(e instanceof Error ? e.message : String(e));
      stopReason = turn.cancelled ? 'cancelled' : null;
    } finally {
      this.closeThought();
      for (const c of this.tools.values()) if (!isFinished(c)) this.finishTool({ ...c, status: 'failed' }, true);
      this.tools.clear();
      this.terminals.turnEnded();
      this.turn = null;
      this.host.events.turnEnd({ stopReason, text: turn.text });
      this.setState('idle');
    }
    const next = this.queue.shift();
    if (next) void this.runTurn(next);
  }

  /** :CabooseStop: session/cancel, pending permission requests answered as cancelled, terminals killed. */
  stop(): Queued[] {
    const dropped = this.queue.splice(0);
    if (!this.turn) return dropped;
    this.turn.cancelled = true;
    this.cancelPermissions();
    this.terminals.abortAll();
    if (this.conn && this.acpSessionId) {
      this.conn.agent.notify('session/cancel', { sessionId: this.acpSessionId }).catch((e: unknown) => this.host.log.warn('session/cancel: %s', String(e)));
    }
    return dropped;
  }

  private cancelPermissions(): void {
    for (const [id, resolve] of this.permissions) {
      this.host.cancelApproval(id);
      resolve({ outcome: { outcome: 'cancelled' } });
    }
    this.permissions.clear();
  }

  private kill(sig: NodeJS.Signals): void {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    child.kill(sig);
    if (sig !== 'SIGKILL') setTimeout(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'), KILL_GRACE_MS).unref();
  }

  dispose(): void {
    this.disposed = true;
    this.stop();
    process.removeListener('exit', this.onHostExit);
    this.conn?.close();
    this.child?.stdin?.end();
    this.kill('SIGTERM');
  }

  // session/update ------------------------------------------------------------------------------------

  private onUpdate(n: acp.SessionNotification): void {
    if (n.sessionId !== this.acpSessionId || this.replaying) return;
    const u = n.update;
    const ev = this.host.events;
    switch (u.sessionUpdate) {
      case 'agent_message_chunk': {
        this.closeThought();
        const t = blockText(u.content);
        if (t === '') return;
        if (this.turn) this.turn.text += t;
        ev.text(t);
        return;
      }
      case 'agent_thought_chunk': {
        const t = blockText(u.content);
        if (!this.thought) {
          this.thought = { id: `thought-${++this.thoughts}`, text: '' };
          ev.toolCall({ id: this.thought.id, name: 'thinking', summary: 'thinking' });
        }
        this.thought.text += t;
        return;
      }
      case 'tool_call': {
        this.closeThought();
        const c = newToolCall(u);
        const known = this.tools.has(c.id);
        this.tools.set(c.id, c);
        if (!known) ev.toolCall({ id: c.id, name: c.kind, summary: c.title });
        if (isFinished(c)) this.finishTool(c, false);
        return;
      }
      case 'tool_call_update': {
        const prev = this.tools.get(u.toolCallId);
        const c = mergeToolCall(prev, u);
        this.tools.set(c.id, c);
        if (!prev) ev.toolCall({ id: c.id, name: c.kind, summary: c.title });
        if (isFinished(c)) this.finishTool(c, false);
        else if (u.title) ev.toolProgress({ id: c.id, summary: '' });
        return;
      }
      case 'plan':
        ev.todos(planTodos(u));
        return;
      case 'usage_update':
        ev.usage({ used: u.used, size: u.size });
        return;
      default:
        this.host.log.debug('acp %s: %s', this.name, u.sessionUpdate);
    }
  }

  private finishTool(c: AcpToolCallState, cancelled: boolean): void {
    const status = toolStatus(c, cancelled || (this.turn?.cancelled ?? false));
    const details = toolDetails(c, (id) => this.terminals.outputOf(id));
    this.tools.delete(c.id);
    this.host.events.toolResult({ id: c.id, name: c.kind, ok: status === 'ok', status, summary: '', details });
    if (c.kind === 'execute' || c.kind === 'delete' || c.kind === 'move') this.host.events.diskChanged();
  }

  /** A thought is folded like a tool's details, under one "thinking" line. */
  private closeThought(): void {
    const t = this.thought;
    if (!t) return;
    this.thought = null;
    const lines = t.text.trim().split('\n');
    this.host.events.toolResult({ id: t.id, name: 'thinking', ok: true, status: 'ok', summary: '', details: lines });
  }

  // session/request_permission ------------------------------------------------------------------------

  private async onPermission(p: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse> {
    const pick = (...kinds: acp.PermissionOptionKind[]): acp.RequestPermissionResponse | null => {
      for (const k of kinds) {
        const o = p.options.find((x) => x.kind === k);
        if (o) return { outcome: { outcome: 'selected', optionId: o.optionId } };
      }
      return null;
    };
    if (!this.turn || this.turn.cancelled) return { outcome: { outcome: 'cancelled' } };
    const kind = p.toolCall.kind ?? this.tools.get(p.toolCall.toolCallId)?.kind ?? 'other';
    const title = p.toolCall.title ?? this.tools.get(p.toolCall.toolCallId)?.title ?? kind;
    const policy = kindPolicy(kind);
    const grant = `${this.name}:${kind}`;
    const perm = permissionFor(this.currentMode, policy);
    if (perm === 'block') {
      this.host.events.notice(`plan mode: ${this.name}'s "${title}" (${kind}) was refused`);
      return pick('reject_once', 'reject_always') ?? { outcome: { outcome: 'cancelled' } };
    }
    if (perm === 'run' || this.host.grants.has(grant)) {
      const allowed = pick('allow_once', 'allow_always');
      if (allowed) return allowed;
    }
    const id = randomUUID();
    const options = p.options.map((o) => `${o.name} (${o.kind.replace('_', ' ')})`).join(' · ');
    const input = p.toolCall.rawInput ?? this.tools.get(p.toolCall.toolCallId)?.rawInput;
    const text = [title, ...(input !== undefined ? ['', JSON.stringify(input, null, 2)] : []), '', `the agent's options: ${options}`].join('\n');
    const d = await this.ask({ id, toolCallId: p.toolCall.toolCallId, tool: grant, args: {}, preview: { kind: 'text', text, showsArguments: true }, label: `${this.name} (ACP)` });
    // A stop arrived while the float was open: the agent hears "cancelled", not a rejection.
    if (d === 'cancelled') return { outcome: { outcome: 'cancelled' } };
    if (d.decision === 'always') {
      this.host.grants.add(grant);
      this.host.events.state(this.currentState, this.currentState);
      return pick('allow_always', 'allow_once') ?? { outcome: { outcome: 'cancelled' } };
    }
    if (d.decision === 'once') return pick('allow_once', 'allow_always') ?? { outcome: { outcome: 'cancelled' } };
    if (d.reason) this.host.events.notice(`rejected ${this.name}'s "${title}": ${d.reason}`);
    return pick('reject_once', 'reject_always') ?? { outcome: { outcome: 'cancelled' } };
  }

  /** Asks the user through our float; 'cancelled' when the turn stopped (or the agent's session was cancelled) meanwhile. */
  private async ask(req: ApprovalRequest): Promise<ApprovalDecision | 'cancelled'> {
    const answer = new Promise<acp.RequestPermissionResponse>((resolve) => this.permissions.set(req.id, resolve));
    const prev = this.currentState;
    this.setState('pending_approval');
    const out = await Promise.race([answer, this.host.requestApproval(req).then((d) => ({ d }))]);
    this.permissions.delete(req.id);
    if (this.turn) this.setState(prev === 'pending_approval' ? 'streaming' : prev);
    if ('outcome' in out || !this.turn || this.turn.cancelled) return 'cancelled';
    return out.d;
  }
}
