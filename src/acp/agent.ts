/**
 * An external agent (Claude Code, Codex, Gemini CLI, opencode…) in our chat, over the Agent Client
 * Protocol, through our hands: its file reads see the user's unsaved buffers, its writes go through our
 * write path (inline review, stale refusal, one undo step, trash/checkpoint/audit), its permission
 * requests through our approval float and mode, its terminals through our bash tool.
 *
 * The connection is the protocol's own SDK (`@agentclientprotocol/sdk`); nothing here frames JSON-RPC.
 * Never imports the Neovim client: the host passes `AcpHost`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { Readable, Writable } from 'node:stream';
import type * as acp from '@agentclientprotocol/sdk';
import type { AgentState, ApprovalDecision, ApprovalRequest, PermissionMode } from '../agent/loop';
import { permissionFor } from '../tools/permissions';
import { secretReason } from '../tools/secret-targets';
import type { ToolResult } from '../tools/tool';
import type { ReviewSelection } from '../workspace/review';
import { fileWorkspace, type FileWorkspace, type Workspace } from '../workspace/workspace';
import { decodeText } from '../workspace/encoding';
import { writeFileTool } from '../tools/write_file';
import type { AcpAgentConfig } from './config';
import { blockText, isFinished, kindPolicy, mergeToolCall, newToolCall, planTodos, shellQuote, toolDetails, toolStatus, type AcpToolCallState, type ToolLineStatus } from './render';

/* eslint-disable @typescript-eslint/no-require-imports */
// The SDK is an ES module: loaded when the first ACP agent starts (Node ≥ 20.19 requires it as CommonJS).
const sdk = (): typeof import('@agentclientprotocol/sdk') => {
  try {
    return require('@agentclientprotocol/sdk') as typeof import('@agentclientprotocol/sdk');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_REQUIRE_ESM') throw new Error(`ACP agents need Node 20.19 or newer (this is ${process.version})`);
    throw e;
  }
};

/** How much of the agent's stderr a crash report shows. */
const STDERR_TAIL_BYTES = 4096;
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** Time between SIGTERM and SIGKILL when the agent's process is ended. */
const KILL_GRACE_MS = 2000;

export interface AcpEvents {
  state(state: AgentState, previous: AgentState): void;
  /** A prompt turn starts (the user's message, as the chat shows it). */
  turnStart(m: { id: number; text: string }): void;
  text(delta: string): void;
  toolCall(c: { id: string; name: string; summary: string }): void;
  toolProgress(p: { id: string; summary: string }): void;
  toolResult(r: { id: string; name: string; ok: boolean; status: ToolLineStatus; summary: string; details: string[] }): void;
  todos(items: { id: string; content: string; status: 'pending' | 'in_progress' | 'completed' }[]): void;
  usage(u: { used: number; size: number }): void;
  turnEnd(info: { stopReason: string | null; text: string }): void;
  notice(text: string): void;
  error(message: string): void;
  /** A terminal command may have changed files behind Neovim's back. */
  diskChanged(): void;
  /** The agent's own session id (stored, for session/load). */
  sessionStarted(acpSessionId: string, canLoad: boolean): void;
}

export interface AcpHost {
  cwd: string;
  workspace: Workspace;
  sessionId: string;
  /** Our tools (read through read_file's view, write_file, bash), with their audit and checkpoints. */
  call(name: string, args: unknown, opts: { signal: AbortSignal; review?: ReviewSelection }): Promise<ToolResult>;
  requestApproval(req: ApprovalRequest): Promise<ApprovalDecision>;
  cancelApproval(id: string): void;
  events: AcpEvents;
  log: { info(m: string, ...a: unknown[]): void; warn(m: string, ...a: unknown[]): void; debug(m: string, ...a: unknown[]): void };
  mode: PermissionMode;
  /** Standing "always" grants, shared with the chat's status line. */
  grants: Set<string>;
  maxQueue: number;
  clientVersion: string;
  /** The agent's session to load (session/load) at the first start: a reopened chat. */
  resume?: string | null;
}

interface Terminal {
  ac: AbortController;
  done: Promise<{ output: string; truncated: boolean; exitCode: number | null; signal: string | null }>;
  result?: { output: string; truncated: boolean; exitCode: number | null; signal: string | null };
  toolLine?: string;
}

interface Queued {
  id: number;
  text: string;
  prompt: string;
}

/** A write refused or failed: the agent reads why (JSON-RPC error message and data). */
function refusal(message: string, data?: Record<string, unknown>): Error {
  return new (sdk().RequestError)(-32000, message, data);
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
  /** sha256 of what the agent last read of each file through us: the basis its writes are checked against. */
  private readonly seen = new Map<string, string>();
  private readonly tools = new Map<string, AcpToolCallState>();
  private readonly terminals = new Map<string, Terminal>();
  private readonly released = new Map<string, string>();
  /** Secret files (secret_globs) the user allowed the agent to read for this session with "always". */
  private readonly approvedSecrets = new Set<string>();
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
      .onRequest('fs/read_text_file', ({ params }) => this.onRead(params))
      .onRequest('fs/write_text_file', ({ params, signal }) => this.onWrite(params, signal))
      .onRequest('terminal/create', ({ params }) => this.onTerminalCreate(params))
      .onRequest('terminal/output', ({ params }) => this.onTerminalOutput(params))
      .onRequest('terminal/wait_for_exit', ({ params }) => this.onTerminalWait(params))
      .onRequest('terminal/kill', ({ params }) => {
        this.terminals.get(params.terminalId)?.ac.abort();
        return {};
      })
      .onRequest('terminal/release', ({ params }) => {
        const t = this.terminals.get(params.terminalId);
        t?.ac.abort();
        // Its output stays for the tool line that embeds it (until the turn ends).
        if (t?.result) this.released.set(params.terminalId, t.result.output);
        this.terminals.delete(params.terminalId);
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
    for (const t of this.terminals.values()) t.ac.abort();
    this.terminals.clear();
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
      this.released.clear();
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
    for (const t of this.terminals.values()) t.ac.abort();
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
    const details = toolDetails(c, (id) => this.terminals.get(id)?.result?.output ?? this.released.get(id));
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

  // fs/* -------------------------------------------------------------------------------------------------

  private async onRead(p: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const fw = fileWorkspace(this.host.workspace);
    try {
      const r = fw.resolve(p.path);
      await this.approveSecretRead(fw, r.rel);
      // The unsaved buffer when the file is loaded; what was seen is remembered for the write gate.
      const v = await fw.files.viewChecked(r.abs, r.rel, { remember: true });
      this.seen.set(r.abs, v.sha256);
      const text = decodeText(v.bytes).text;
      if (!p.line && !p.limit) return { content: text };
      const lines = text.split('\n');
      const start = Math.max(1, p.line ?? 1) - 1;
      const end = p.limit ? start + p.limit : lines.length;
      return { content: lines.slice(start, end).join('\n') };
    } catch (e) {
      if (e instanceof (sdk().RequestError)) throw e;
      throw refusal(e instanceof Error ? e.message : String(e), { path: p.path });
    }
  }

  /** A file that usually holds secrets (secret_globs) is read only after the user allows it, in every mode. */
  private async approveSecretRead(fw: FileWorkspace, rel: string): Promise<void> {
    if (!fw.isSecret(rel) || this.approvedSecrets.has(rel)) return;
    const id = randomUUID();
    const d = await this.ask({ id, toolCallId: id, tool: 'read_file', args: { path: rel }, reason: secretReason('read_file', [rel]), label: `${this.name} (ACP)` });
    if (d === 'cancelled') throw refusal(`The read of ${rel} was cancelled: the user stopped the turn.`, { path: rel, kind: 'cancelled' });
    if (d.decision === 'reject') throw refusal(`The user did not allow reading ${rel}, a file that usually holds secrets${d.reason ? `: ${d.reason}` : ''}.`, { path: rel, kind: 'rejected' });
    if (d.decision === 'always') this.approvedSecrets.add(rel);
  }

  private async onWrite(p: acp.WriteTextFileRequest, signal: AbortSignal): Promise<acp.WriteTextFileResponse> {
    const fw = fileWorkspace(this.host.workspace);
    let rel: string;
    let abs: string;
    try {
      ({ rel, abs } = fw.resolve(p.path));
    } catch (e) {
      throw refusal(e instanceof Error ? e.message : String(e), { path: p.path });
    }
    if (this.currentMode === 'plan') {
      this.host.events.notice(`plan mode: ${this.name}'s write to ${rel} was refused`);
      throw refusal(`The write to ${rel} was refused: the user's session is in plan mode, where nothing is written. Describe the change instead.`, { path: rel, kind: 'blocked_by_mode' });
    }
    let expected = this.seen.get(abs);
    if (expected === undefined) {
      const v = await fw.files.view(abs);
      if (v.kind === 'missing') expected = '';
      else if (v.source === 'buffer') {
        throw refusal(`${rel} is open in the editor with unsaved changes you have not seen: read it with fs/read_text_file first, then write.`, { path: rel, kind: 'stale_file' });
      } else expected = v.sha256 ?? ''; // never read through us: the user reviews the whole change against the disk
    }
    const args = { path: rel, content: p.content, expectedSha256: expected };
    const ac = new AbortController();
    const abort = () => ac.abort();
    signal.addEventListener('abort', abort, { once: true });
    try {
      let review: ReviewSelection | undefined;
      const perm = permissionFor(this.currentMode, 'edit');
      if (perm === 'ask' && !this.host.grants.has('write_file')) {
        let preview;
        try {
          preview = await writeFileTool.preview!(args, { signal: ac.signal, workspace: this.host.workspace, sessionId: this.host.sessionId });
        } catch (e) {
          throw refusal(`The write to ${rel} was refused: ${e instanceof Error ? e.message : String(e)}`, { path: rel });
        }
        const id = randomUUID();
        const d = await this.ask({ id, toolCallId: id, tool: 'write_file', args, preview, label: `${this.name} (ACP)` });
        if (d === 'cancelled') throw refusal(`The write to ${rel} was cancelled: the user stopped the turn.`, { path: rel, kind: 'cancelled' });
        if (d.decision === 'reject') throw refusal(`The user rejected the write to ${rel}${d.reason ? `: ${d.reason}` : ''}.`, { path: rel, kind: 'rejected' });
        if (d.decision === 'always') {
          this.host.grants.add('write_file');
          this.host.events.state(this.currentState, this.currentState);
        }
        review = d.review?.files.some((f) => f.rejected.length > 0) ? d.review : undefined;
      }
      const res = await this.host.call('write_file', args, { signal: ac.signal, ...(review ? { review } : {}) });
      if (!res.ok) {
        const why = res.error.message + (res.error.kind === 'stale_file' ? ' Read the file again with fs/read_text_file (it may be an unsaved buffer) and redo your change on what you read.' : '');
        this.host.events.notice(`${this.name}'s write to ${rel} was refused: ${res.error.message}`);
        throw refusal(why, { path: rel, kind: res.error.kind });
      }
      const data = res.data as { sha256?: string; review?: { rejected?: { hunk: number; reason?: string }[] } };
      if (data.sha256) this.seen.set(abs, data.sha256);
      return {};
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  // terminal/* -------------------------------------------------------------------------------------------

  private onTerminalCreate(p: acp.CreateTerminalRequest): acp.CreateTerminalResponse {
    if (this.currentMode === 'plan') throw refusal('Commands are refused: the user\'s session is in plan mode.', { kind: 'blocked_by_mode' });
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

  private onTerminalOutput(p: acp.TerminalOutputRequest): acp.TerminalOutputResponse {
    const t = this.terminals.get(p.terminalId);
    if (!t) throw refusal(`no terminal ${p.terminalId}`);
    const r = t.result;
    return r ? { output: r.output, truncated: r.truncated, exitStatus: { exitCode: r.exitCode, signal: r.signal } } : { output: '', truncated: false };
  }

  private async onTerminalWait(p: acp.WaitForTerminalExitRequest): Promise<acp.WaitForTerminalExitResponse> {
    const t = this.terminals.get(p.terminalId);
    if (!t) throw refusal(`no terminal ${p.terminalId}`);
    const r = await t.done;
    return { exitCode: r.exitCode, signal: r.signal };
  }
}
