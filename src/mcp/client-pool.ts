/**
 * The host's MCP servers: one connection per configured server, shared by every session of the host
 * process. Servers start on first use (all at once, each bounded by the start timeout); one that fails to
 * start or dies is `failed` with a reason, and the others keep working. A server that died after running
 * is started again at its next use (a few times at most); `restart()` always tries.
 *
 * The SDK is loaded by `./connect` when the first server starts, never by this module.
 */
import { DEFAULT_MCP_CALL_TIMEOUT_MS, DEFAULT_MCP_START_TIMEOUT_MS, describeTarget, isStdioServer, type McpConfig, type McpServerConfig } from './config';
import type { CallFailure, ConnectOptions, McpClientHooks, McpConnection, McpPromptInfo, McpResourceInfo, McpResourceTemplateInfo, McpToolInfo } from './connect';
import type { McpCallResult } from './results';

export type McpServerState = 'not_started' | 'starting' | 'running' | 'failed' | 'disabled';

export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  /** `stdio: cmd args…` or `http: url`. */
  target: string;
  state: McpServerState;
  /** Why it failed. */
  reason?: string;
  tools: McpToolInfo[];
  allow: boolean | string[];
  /** The server's own name and version (from its initialize answer). */
  serverInfo?: { name: string; version: string };
}

/** A server changed state (or its tool list changed: same state, `toolsChanged`). */
export interface McpChange {
  server: string;
  state: McpServerState;
  previous: McpServerState;
  reason?: string;
  /** A start that follows a crash (automatic) or a restart() (by the user). */
  restart?: 'auto' | 'user';
  toolsChanged?: boolean;
}

export type McpCallOutcome = { ok: true; result: McpCallResult } | { ok: false; failure: CallFailure | { kind: 'unavailable'; message: string } };

export interface McpPoolLogger {
  debug(msg: string, ...args: unknown[]): void;
  info(msg: string, ...args: unknown[]): void;
  warn(msg: string, ...args: unknown[]): void;
  error(msg: string, ...args: unknown[]): void;
}

export type Connector = (cfg: McpServerConfig, o: ConnectOptions) => Promise<McpConnection>;

export interface McpPoolOptions {
  /** Where stdio servers run unless their config says otherwise. */
  cwd: string;
  log: McpPoolLogger;
  clientVersion: string;
  /** Tests inject their own; by default the SDK connector (loaded on first start). */
  connect?: Connector;
  /** Roots, elicitation, sampling, resource updates (declared to the servers as client capabilities). */
  client?: McpClientHooks;
  /** The sandbox for stdio servers that opt in (`sandbox = true`). */
  sandbox?: import('../workspace/sandbox/sandbox').Sandbox | null;
}

/** Automatic restarts of a server that keeps dying; after them it stays failed until restart(). */
export const MAX_AUTO_RESTARTS = 3;
const STDERR_TAIL = 5;

interface Entry {
  name: string;
  config: McpServerConfig;
  state: McpServerState;
  reason?: string;
  conn?: McpConnection;
  tools: McpToolInfo[];
  /** The tools it had when it last ran (a call to one of them after a crash gets a clear error). */
  lastTools: McpToolInfo[];
  starting?: Promise<void>;
  /** Bumped at every start and stop: callbacks of an older connection are ignored. */
  generation: number;
  /** It died after running: the next use starts it again. */
  died: boolean;
  autoRestarts: number;
  stderrTail: string[];
}

export class McpPool {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<(c: McpChange) => void>();
  /** How long a server may take to start (config start_timeout_ms). */
  readonly startTimeoutMs: number;
  private disposed = false;
  /** Bumped at every change: the tool definitions built from the pool are rebuilt when it moves. */
  version = 0;
  /**
   * Attached resources (`server\0uri`) whose change was announced: a server that sends an update every few
   * seconds is announced once, until the user attaches the resource again.
   */
  private readonly announcedChanges = new Set<string>();

  constructor(
    config: McpConfig,
    private readonly o: McpPoolOptions,
  ) {
    this.startTimeoutMs = config.start_timeout_ms ?? DEFAULT_MCP_START_TIMEOUT_MS;
    for (const [name, c] of Object.entries(config.servers ?? {})) {
      this.entries.set(name, { name, config: c, state: c.disabled ? 'disabled' : 'not_started', tools: [], lastTools: [], generation: 0, died: false, autoRestarts: 0, stderrTail: [] });
    }
  }

  get size(): number {
    return this.entries.size;
  }

  onChange(fn: (c: McpChange) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Starts the servers not started yet (with `restartDied`, also those that died since their last use)
   * and waits until every start under way has settled: running or failed, each within the start timeout.
   */
  async ensureStarted(o: { restartDied: boolean }): Promise<void> {
    if (this.disposed) return;
    for (const e of this.entries.values()) {
      if (e.state === 'not_started') this.start(e);
      else if (o.restartDied && e.state === 'failed' && e.died && e.autoRestarts < MAX_AUTO_RESTARTS) {
        e.autoRestarts++;
        this.start(e, 'auto');
      }
    }
    const pending = [...this.entries.values()].map((e) => e.starting).filter((p): p is Promise<void> => p !== undefined);
    if (pending.length === 0) return;
    // Each start has its own timeout; this bound only guards against a connector that ignores it.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending), new Promise((r) => (timer = setTimeout(r, this.startTimeoutMs + 1000)))]);
    clearTimeout(timer);
  }

  /** Stops the server (if running) and starts it again, even after repeated crashes or a disabled state. */
  async restart(name: string): Promise<McpServerStatus> {
    const e = this.entries.get(name);
    if (!e) throw new Error(`no MCP server named "${name}" (configured: ${[...this.entries.keys()].join(', ') || 'none'})`);
    await this.stop(e);
    e.autoRestarts = 0;
    await this.start(e, 'user');
    return this.statusOf(e);
  }

  status(): McpServerStatus[] {
    return [...this.entries.values()].map((e) => this.statusOf(e));
  }

  /** The running servers with their tools and a way to validate their arguments. */
  running(): { server: string; config: McpServerConfig; tools: McpToolInfo[]; conn: McpConnection }[] {
    const out = [];
    for (const e of this.entries.values()) if (e.state === 'running' && e.conn) out.push({ server: e.name, config: e.config, tools: e.tools, conn: e.conn });
    return out;
  }

  /** Servers not running that had tools when they last ran. */
  stopped(): { server: string; config: McpServerConfig; tools: McpToolInfo[] }[] {
    const out = [];
    for (const e of this.entries.values()) if (e.state !== 'running' && e.lastTools.length > 0) out.push({ server: e.name, config: e.config, tools: e.lastTools });
    return out;
  }

  isRunning(server: string): boolean {
    return this.entries.get(server)?.state === 'running';
  }

  /** Why a server is not running, in words for the model. */
  unavailableMessage(server: string): string {
    const e = this.entries.get(server);
    const why = !e ? 'it is not configured' : e.state === 'failed' ? `it ${e.died ? 'stopped' : 'failed to start'}: ${e.reason ?? 'unknown reason'}` : `it is ${e.state.replace('_', ' ')}`;
    return `MCP server '${server}' is not running (${why}).`;
  }

  /** Calls a tool. Never throws: a dead server, a timeout or the server's own error come back as a failure. */
  async callTool(
    server: string,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    onProgress?: (p: { progress: number; total?: number; message?: string }) => void,
  ): Promise<McpCallOutcome> {
    const e = this.entries.get(server);
    if (!e || e.state !== 'running' || !e.conn) return { ok: false, failure: { kind: 'unavailable', message: this.unavailableMessage(server) } };
    const conn = e.conn;
    const gen = e.generation;
    try {
      const result = await conn.callTool(tool, args, { signal, timeoutMs: e.config.timeout_ms ?? DEFAULT_MCP_CALL_TIMEOUT_MS, ...(onProgress ? { onProgress } : {}) });
      return { ok: true, result };
    } catch (err) {
      const failure = conn.classify(err, signal);
      if (failure.kind === 'connection') this.lost(e, gen, failure.message);
      return { ok: false, failure };
    }
  }

  /** A running server's connection (resources, prompts); throws with the reason when it is not running. */
  connection(server: string): { conn: McpConnection; timeoutMs: number } {
    const e = this.entries.get(server);
    if (!e || e.state !== 'running' || !e.conn) throw new Error(this.unavailableMessage(server));
    return { conn: e.conn, timeoutMs: e.config.timeout_ms ?? DEFAULT_MCP_CALL_TIMEOUT_MS };
  }

  /**
   * Subscribes to an attached resource's updates (where the server offers it); its next change is announced
   * again, once.
   */
  watchResource(server: string, uri: string): void {
    this.announcedChanges.delete(`${server}\0${uri}`);
    const e = this.entries.get(server);
    if (e?.state === 'running' && e.conn) void e.conn.subscribe(uri, e.config.timeout_ms ?? DEFAULT_MCP_CALL_TIMEOUT_MS).catch(() => false);
  }

  private resourceUpdated(server: string, uri: string): void {
    const key = `${server}\0${uri}`;
    if (this.announcedChanges.has(key)) return;
    this.announcedChanges.add(key);
    this.o.client?.resourceUpdated?.(server, uri);
  }

  /** Every running server's resources and templates (a server that fails to list them is left out). */
  async resources(): Promise<{ server: string; resources: McpResourceInfo[]; templates: McpResourceTemplateInfo[] }[]> {
    const all = await Promise.all(
      this.running().map(async (s) => {
        try {
          return { server: s.server, ...(await s.conn.listResources(s.config.timeout_ms ?? DEFAULT_MCP_CALL_TIMEOUT_MS)) };
        } catch (err) {
          this.o.log.warn('mcp %s: resources/list failed: %s', s.server, err instanceof Error ? err.message : String(err));
          return { server: s.server, resources: [], templates: [] };
        }
      }),
    );
    return all.filter((x) => x.resources.length + x.templates.length > 0);
  }

  /** The workspace root changed (a new chat in another folder): running servers are told. */
  rootsChanged(): void {
    for (const s of this.running()) s.conn.rootsChanged().catch((err: unknown) => this.o.log.debug('mcp %s: roots/list_changed: %s', s.server, String(err)));
  }

  /** Every running server's prompts. */
  async prompts(): Promise<{ server: string; prompts: McpPromptInfo[] }[]> {
    const all = await Promise.all(
      this.running().map(async (s) => {
        try {
          return { server: s.server, prompts: await s.conn.listPrompts(s.config.timeout_ms ?? DEFAULT_MCP_CALL_TIMEOUT_MS) };
        } catch (err) {
          this.o.log.warn('mcp %s: prompts/list failed: %s', s.server, err instanceof Error ? err.message : String(err));
          return { server: s.server, prompts: [] };
        }
      }),
    );
    return all.filter((x) => x.prompts.length > 0);
  }

  /** Closes every connection; stdio servers' processes are signalled at once (the host may exit next). */
  dispose(): void {
    this.disposed = true;
    for (const e of this.entries.values()) {
      e.generation++;
      const conn = e.conn;
      e.conn = undefined;
      if (!conn) continue;
      conn.kill();
      void conn.close().catch(() => undefined);
    }
  }

  /* ---------------------------------------------------------------------------------------------- */

  private statusOf(e: Entry): McpServerStatus {
    return {
      name: e.name,
      transport: isStdioServer(e.config) ? 'stdio' : 'http',
      target: describeTarget(e.config),
      state: e.state,
      ...(e.reason ? { reason: e.reason } : {}),
      tools: e.tools,
      allow: e.config.allow ?? false,
      ...(e.conn?.serverInfo ? { serverInfo: e.conn.serverInfo } : {}),
    };
  }

  private start(e: Entry, restart?: 'auto' | 'user'): Promise<void> {
    if (e.starting) return e.starting;
    const gen = ++e.generation;
    e.stderrTail = [];
    this.set(e, 'starting', undefined, restart ? { restart } : {});
    const p = this.connect(e, gen, restart);
    e.starting = p;
    void p.finally(() => {
      if (e.starting === p) e.starting = undefined;
    });
    return p;
  }

  private async connect(e: Entry, gen: number, restart: 'auto' | 'user' | undefined): Promise<void> {
    const log = this.o.log;
    const t0 = Date.now();
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const connect = this.o.connect ?? (require('./connect') as typeof import('./connect')).connectMcpServer;
      const conn = await connect(e.config, {
        server: e.name,
        ...(this.o.client ? { client: { ...this.o.client, resourceUpdated: (server: string, uri: string) => this.resourceUpdated(server, uri) } } : {}),
        cwd: this.o.cwd,
        sandbox: this.o.sandbox ?? null,
        timeoutMs: this.startTimeoutMs,
        clientVersion: this.o.clientVersion,
        onStderr: (line) => {
          log.info('mcp %s stderr: %s', e.name, line);
          e.stderrTail.push(line.length > 300 ? `${line.slice(0, 300)}…` : line);
          if (e.stderrTail.length > STDERR_TAIL) e.stderrTail.shift();
        },
        onClosed: () => this.lost(e, gen, isStdioServer(e.config) ? 'the process exited' : 'the connection closed'),
        onError: (err) => log.debug('mcp %s: %s', e.name, err.message),
        onToolsChanged: (tools) => {
          if (gen !== e.generation || e.state !== 'running') return;
          e.tools = tools;
          e.lastTools = tools;
          log.info('mcp %s: tool list changed (%d tools)', e.name, tools.length);
          this.set(e, 'running', undefined, { toolsChanged: true });
        },
      });
      if (gen !== e.generation || this.disposed) {
        conn.kill();
        void conn.close().catch(() => undefined);
        return;
      }
      e.conn = conn;
      e.tools = conn.tools;
      e.lastTools = conn.tools;
      e.died = false;
      log.info('mcp %s: running (%s, %d tools, %d ms)', e.name, describeTarget(e.config), conn.tools.length, Date.now() - t0);
      this.set(e, 'running', undefined, restart ? { restart } : {});
    } catch (err) {
      if (gen !== e.generation) return;
      const reason = this.withStderr(e, err instanceof Error ? err.message : String(err));
      log.warn('mcp %s: failed to start: %s', e.name, reason);
      e.conn = undefined;
      e.tools = [];
      // A restart after a crash that fails again is a crash too (counted against the automatic restarts).
      e.died = restart === 'auto';
      this.set(e, 'failed', reason, restart ? { restart } : {});
    }
  }

  /** The connection of generation `gen` is gone (process exit, network failure). */
  private lost(e: Entry, gen: number, why: string): void {
    if (gen !== e.generation || e.state !== 'running') return;
    e.generation++;
    const conn = e.conn;
    e.conn = undefined;
    e.tools = [];
    e.died = true;
    if (conn) void conn.close().catch(() => undefined);
    const reason = this.withStderr(e, why);
    this.o.log.warn('mcp %s: stopped: %s', e.name, reason);
    this.set(e, 'failed', reason);
  }

  /** The reason, with the last line the server wrote to stderr (often the real cause). */
  private withStderr(e: Entry, reason: string): string {
    const last = e.stderrTail.at(-1);
    return last && !reason.includes(last) ? `${reason} (stderr: ${last})` : reason;
  }

  private set(e: Entry, state: McpServerState, reason: string | undefined, extra: Partial<McpChange> = {}): void {
    const previous = e.state;
    e.state = state;
    e.reason = reason;
    this.version++;
    const change: McpChange = { server: e.name, state, previous, ...(reason ? { reason } : {}), ...extra };
    for (const fn of this.listeners) {
      try {
        fn(change);
      } catch (err) {
        this.o.log.error('mcp change listener threw: %s', err instanceof Error ? (err.stack ?? err.message) : String(err));
      }
    }
  }

  private async stop(e: Entry): Promise<void> {
    e.generation++;
    const conn = e.conn;
    e.conn = undefined;
    e.tools = [];
    e.starting = undefined;
    if (conn) await conn.close().catch(() => undefined);
  }
}
