/**
 * The host's RPC router: one `switch` over the methods Lua calls (src/host/protocol-names.ts), each case
 * a few lines that validate the parameters and hand over to the chat's runtime, the model catalogue, the
 * store or the MCP servers (mcp-setup.ts). It stays one file on purpose: the method table reads in one
 * place; the work behind each method lives in the modules it calls.
 */
import { traceEnd, traceMark, traceStart } from '../workspace/trace';
import type { z } from 'zod';
import type { HostConfig } from './protocol';
import { CALL_NOTIFICATION, EVENTS, METHODS } from './protocol-names';
import type { Logger } from './logger';
import type { LuaUi, ShownEvent } from './lua-ui';
import type { PrefetchedReply } from '../agent/prefetched';
import type { RulesSnapshot } from '../workspace/rules';
import type { SessionRuntime } from './runtime';
import type { McpPool } from '../mcp/client-pool';
import { createMcpPool, mcpView } from './mcp-setup';
import { ModelChoice } from './model-choice';

// Start-up time matters (the user's first command waits for it): zod, the agent, the tools and SQLite
// load on the first request that needs them, not when the host starts.
/* eslint-disable @typescript-eslint/no-require-imports */
const protocol = () => require('./protocol') as typeof import('./protocol');

export { HOST_VERSION } from './protocol-names';
import { HOST_VERSION } from './protocol-names';
/** How long reopening or deleting a session the chat just left waits for it to wind down, at most. */
const LEFT_WAIT_MS = 5000;
/** Rows :CabooseAudit shows without a count. */
export const DEFAULT_AUDIT_LIMIT = 50;

/** An error whose message is meant for the user (sent back as the RPC error). */
export class HostError extends Error {}

export function errorMessage(err: unknown): string {
  if (err instanceof HostError) return err.message;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** What the first-request path hands over (see HostServer.adoptFirst). */
export interface FirstStart {
  sessionId: string;
  /** The events the chat was sent for it, in order (the session's own emissions of them are dropped). */
  shown: ShownEvent[];
  reply: PrefetchedReply;
  /** The project rules the request was built with (null: rules off). */
  rules: RulesSnapshot | null;
  /** The session could not be started: the chat is told the reply stopped (the error itself goes as now). */
  failed(err: unknown): void;
}

interface InitState {
  config: HostConfig;
  cwd: string;
  dataDir: string;
  nvimVersion?: string;
  /** The external (ACP) agent new chats run, by its `acp.agents` name; null: the built-in agent. */
  agent?: string | null;
}

/**
 * Routes Lua's requests to the session. One server per Neovim instance.
 * Heavy modules (agent, tools, SQLite) load on the first message, not at start-up.
 */
export class HostServer {
  private init: InitState | null = null;
  private runtime: SessionRuntime | null = null;
  private starting: Promise<SessionRuntime> | null = null;
  /**
   * The tag of the chat's view (Lua numbers a new one each time it leaves a session, rpc.lua leave_scope):
   * the UI scope of the runtimes started for it. Lua drops events tagged lower (a session it left).
   */
  private scopeTag = 0;
  /** The current runtime's UI scope (retagged when a switch keeps it). */
  private runtimeUi: LuaUi | null = null;
  /** The MCP servers, shared by the sessions; created on first need when any is configured. */
  private mcp: McpPool | null | undefined;
  /** The model chosen with :CabooseModel: kept for the sessions that follow (:CabooseNew, reopening). */
  private readonly models = new ModelChoice(() => this.requireInit().config, userError);
  /**
   * The order in which requests reach the chat's session: each takes the runtime, or replaces it, after
   * the requests that arrived before it (see inOrder). A message sent right after :CabooseNew goes to the
   * session it opens, one sent just before it to the session it leaves; a replaced runtime is handed nothing.
   */
  private order: Promise<unknown> = Promise.resolve();
  /** Replaced runtimes still winding down, by session id: settles when that one's store is closed. */
  private readonly leaving = new Map<string, Promise<void>>();
  /** The first message's request, sent before this server existed (first-request.ts): for the first session. */
  private first: FirstStart | null = null;

  constructor(
    private readonly ui: LuaUi,
    private readonly log: Logger,
  ) {}

  async handle(method: string, rawParams: unknown): Promise<unknown> {
    // Lua encodes an empty table as an empty array.
    const params = Array.isArray(rawParams) && rawParams.length === 0 ? {} : (rawParams ?? {});
    this.log.debug('request %s', method);
    switch (method) {
      case METHODS.ping:
        return { version: HOST_VERSION, pid: process.pid, node: process.version };
      case METHODS.init:
        return this.onInit(parse(protocol().InitParams, params, method));
      case METHODS.send: {
        // When the message arrived (monotonic): the project rules read after it need not be read again.
        const arrivedAt = performance.now();
        const { text, context } = parse(protocol().SendParams, params, method);
        // A message sent right after :CabooseNew or :CabooseAgent goes to the chat it opens, not the one it
        // closes; one sent just before it, to the one it closes.
        return this.withRuntime((rt) =>
          rt.send(
          text,
          (context ?? []).map((c) => ({
            kind: c.kind,
            path: c.path,
            ...(c.abs ? { abs: c.abs } : {}),
            name: c.name ?? undefined,
            url: c.url ?? undefined,
            filetype: c.filetype ?? undefined,
            text: c.text ?? undefined,
            startLine: c.start_line ?? undefined,
            endLine: c.end_line ?? undefined,
            modified: c.modified ?? undefined,
          })),
          arrivedAt,
        ));
      }
      case METHODS.stop: {
        // A stop that arrives while the session is still starting applies once it has started (no session
        // is started for it).
        const rt = await this.inOrder(async () => this.runtime ?? (this.starting ? await this.starting.catch(() => null) : null));
        // Messages sent before the stop are in the queue when it is cleared (and reported as discarded).
        await rt?.hold(async () => {
          await rt.sent();
          rt.session.stop();
        });
        return { ok: true };
      }
      case METHODS.reset: {
        // A new conversation works in Neovim's current directory (it may have changed with :cd).
        const { cwd, scope } = parse(protocol().ResetParams, params, method);
        return this.switchStep(scope, async () => {
          if (cwd && this.init && cwd !== this.init.cwd) {
            this.init.cwd = cwd;
            this.mcp?.rootsChanged();
          }
          const rt = await this.replaceRuntime();
          // Lua learns the new session (its id, no standing grants) at once, not at the first turn.
          rt.session.emitState(rt.session.agent.state, rt.session.agent.state);
          return { session: rt.session.id };
        });
      }
      case METHODS.sessionList: {
        const { query } = parse(protocol().SessionListParams, params, method);
        return this.withRuntime((rt) => this.listSessions(rt, query ?? undefined));
      }
      case METHODS.sessionOpen: {
        const { id, scope } = parse(protocol().SessionOpenParams, params, method);
        // After the requests before it; the ones after it reach the reopened session.
        return this.switchStep(scope, () => this.openSession(id));
      }
      case METHODS.mcpItems: {
        const pool = this.mcpPool();
        if (!pool) return { items: [] };
        const { mcpCompletionItems } = require('./mcp-message') as typeof import('./mcp-message');
        return { items: await mcpCompletionItems(pool) };
      }
      case METHODS.agentList: {
        const init = this.requireInit();
        return { agents: Object.keys(init.config.acp?.agents ?? {}).sort(), current: this.runtime?.acp?.name ?? init.agent ?? null };
      }
      case METHODS.agentSelect: {
        const p = parse(protocol().AgentSelectParams, params, method);
        return this.switchStep(p.scope, () => this.selectAgent(p));
      }
      case METHODS.sessionExport: {
        // The chat as Markdown (:CabooseExport): what the session store holds, after the messages sent before.
        return this.withRuntime(async (rt) => {
          await rt.sent();
          const { transcriptItems } = require('./session-history') as typeof import('./session-history');
          const { exportMarkdown } = require('./export') as typeof import('./export');
          const info = rt.info();
          return { title: info.title, messages: info.messages, markdown: exportMarkdown(info.title, transcriptItems(rt.sessions.displayRows(rt.session.id))) };
        });
      }
      case METHODS.sessionCompact: {
        // After the messages sent before it (they are in the history it summarizes).
        return this.withRuntime(async (rt) => {
          await rt.sent();
          return rt.compact();
        });
      }
      case METHODS.sessionRename: {
        const { title } = parse(protocol().SessionRenameParams, params, method);
        return this.withRuntime((rt) => rt.rename(title));
      }
      case METHODS.sessionDelete: {
        const { id, scope } = parse(protocol().SessionDeleteParams, params, method);
        return this.switchStep(scope, async () => {
          const rt = await this.ensureRuntime();
          // A session left a moment ago is deleted once it has stopped writing to it.
          await this.left(id);
          if (id !== rt.session.id) return { deleted: rt.sessions.delete(id), current: rt.session.id };
          // Deleting the open session: the chat starts a new one.
          const next = await this.replaceRuntime();
          await this.left(id);
          const deleted = next.sessions.delete(id);
          next.session.emitState(next.session.agent.state, next.session.agent.state);
          return { deleted, current: next.session.id };
        });
      }
      case METHODS.sessionDebug: {
        // :CabooseDebug: after the messages sent before it (the request they started is the last one).
        return this.withRuntime(async (rt) => {
          await rt.sent();
          if (!rt.debug) return { request: null, external: rt.acp?.name ?? true };
          return rt.debug();
        });
      }
      case METHODS.sessionInfo:
        return this.withRuntime((rt) => rt.info());
      case METHODS.setMode: {
        const { mode } = parse(protocol().SetModeParams, params, method);
        return this.withRuntime((rt) => {
          rt.session.setMode(mode);
          // A later :CabooseNew keeps the mode the user chose.
          this.requireInit().config.mode = mode;
          return { mode };
        });
      }
      case METHODS.approvalResolve: {
        const p = parse(protocol().ApprovalResolveParams, params, method);
        const review = p.review
          ? {
              files: p.review.files.map((f) => ({
                path: f.path,
                beforeSha256: f.before_sha256 ?? null,
                rejected: f.rejected.map((r) => ({ hunk: r.hunk, ...(r.reason ? { reason: r.reason } : {}) })),
              })),
            }
          : undefined;
        const found = this.runtime?.session.resolveApproval(p.id, { decision: p.decision, reason: p.reason ?? undefined, review }) ?? false;
        return { ok: found };
      }
      case METHODS.askResolve: {
        const p = parse(protocol().AskResolveParams, params, method);
        return { ok: this.runtime?.session.resolveAsk(p.id, p.answer ?? null) ?? false };
      }
      case METHODS.grantsRevoke: {
        const p = parse(protocol().GrantsRevokeParams, params, method);
        // No session, no grants: nothing to start for this.
        const session = this.runtime?.session;
        if (!session) return { revoked: [], grants: [] };
        const revoked = session.revoke(p.tool ?? undefined);
        return { revoked, grants: session.agent.alwaysAllowedTools };
      }
      case METHODS.health: {
        const { cwd } = parse(protocol().HealthParams, params, method);
        const init = this.requireInit();
        const { checkHealth } = require('./health') as typeof import('./health');
        return checkHealth(init.config, init.dataDir, cwd ?? init.cwd, this.mcpPool());
      }
      case METHODS.modelList: {
        const { refresh } = parse(protocol().ModelListParams, params, method);
        return this.models.list(this.runtime, refresh ?? false);
      }
      case METHODS.modelSet: {
        const p = parse(protocol().ModelSetParams, params, method);
        return this.withRuntime(async (rt) => {
          const m = await this.models.resolve(rt, p.model, p.provider ?? undefined);
          this.models.apply(rt, m);
          const { resolved, label } = m;
          return { provider: resolved.name, model: resolved.model, label, base_url: resolved.baseURL };
        });
      }
      case METHODS.sessionRetry: {
        // Regenerate (:CabooseRetry [model]): after the messages sent before it; refused while a turn runs.
        const p = parse(protocol().SessionRetryParams, params, method);
        return this.withRuntime(async (rt) => {
          await rt.sent();
          if (!rt.conversation) throw new HostError('regenerate is not available in an external agent’s chat');
          // An unknown model is refused before anything is dropped; the switch happens just before the cut.
          const model = p.model ? await this.models.resolve(rt, p.model) : null;
          const r = await rt.conversation
            .retry({ files: p.files ?? 'ask', force: p.force ?? false, model: model?.label, beforeCut: model ? () => this.models.apply(rt, model) : undefined })
            .catch(userError);
          return { ...r, ...(model && r.status !== 'ask' && r.status !== 'conflict' ? { model: model.label } : {}) };
        });
      }
      case METHODS.sessionFork: {
        // Edit-and-resend: a new session (branch) with the history before the edited message; the chat
        // switches to it and sends the edited text next (Lua). The earlier branch stays stored as it was.
        const p = parse(protocol().SessionForkParams, params, method);
        return this.inOrder(async () => {
          const rt = await this.ensureRuntime();
          await rt.sent();
          if (!rt.conversation) throw new HostError('edit-and-resend is not available in an external agent’s chat');
          const { randomUUID } = require('node:crypto') as typeof import('node:crypto');
          const r = await rt.conversation.fork({ index: p.index, text: p.text, files: p.files ?? 'ask', force: p.force ?? false, newId: randomUUID() }).catch(userError);
          if (r.status !== 'forked') return r;
          const fromTitle = rt.sessions.get(r.from)?.title ?? '(untitled)';
          rt.sessions.append(r.session, { kind: 'notice', text: `⑂ forked from "${fromTitle}" before the message "${oneLine(r.message)}" (that branch stays in :CabooseSessions)`, inContext: false });
          const { transcriptItems } = require('./session-history') as typeof import('./session-history');
          const itemsJson = JSON.stringify(transcriptItems(rt.sessions.displayRows(r.session)));
          const title = rt.sessions.get(r.session)?.title ?? null;
          const next = await this.replaceRuntime(r.session, () => {
            this.ui.emit(EVENTS.transcript, { session: r.session, title, items_json: Buffer.from(itemsJson) });
          });
          next.session.emitState(next.session.agent.state, next.session.agent.state);
          return { ...r, forked_from_title: fromTitle, ...next.info() };
        });
      }
      case METHODS.modelCheck:
        return this.models.check(this.runtime);
      case METHODS.mcpList: {
        const p = parse(protocol().McpListParams, params, method);
        const pool = this.mcpPool();
        if (pool && p.start) await pool.ensureStarted({ restartDied: false });
        return this.mcpView(pool);
      }
      case METHODS.mcpRestart: {
        const p = parse(protocol().McpRestartParams, params, method);
        const pool = this.mcpPool();
        if (!pool) throw new HostError('no MCP server is configured (setup({ mcp = { servers = { … } } }))');
        await pool.restart(p.name).catch(userError);
        return this.mcpView(pool);
      }
      case METHODS.auditList: {
        // Straight from the database: no session is started for it.
        const p = parse(protocol().AuditListParams, params, method);
        const init = this.requireInit();
        const { listAuditEntries } = require('./audit') as typeof import('./audit');
        return listAuditEntries(init.dataDir, p.cwd ?? init.cwd, p.limit ?? DEFAULT_AUDIT_LIMIT);
      }
      case METHODS.auditDiff: {
        const p = parse(protocol().AuditDiffParams, params, method);
        const { auditDiff } = require('./audit') as typeof import('./audit');
        return auditDiff(this.requireInit().dataDir, p.id);
      }
      case METHODS.trashList:
        return this.withRuntime((rt) => rt.listTrash());
      case METHODS.trashRestore: {
        const p = parse(protocol().TrashRestoreParams, params, method);
        return this.withRuntime((rt) => rt.restore(p.trash_id, p.target_path ?? undefined));
      }
      case METHODS.selectionEdit: {
        const p = parse(protocol().SelectionEditParams, params, method);
        return this.withRuntime((rt) => rt.selectionEdit(p));
      }
      case METHODS.selectionEditCancel: {
        const p = parse(protocol().SelectionEditCancelParams, params, method);
        return { cancelled: this.runtime?.cancelSelectionEdit(p.id) ?? false };
      }
      case METHODS.toolCall: {
        // The user (or a test) runs a tool directly: no model, no approval.
        traceStart();
        const p = parse(protocol().ToolCallParams, params, method);
        return this.withRuntime(async (rt) => {
          traceMark('host: request parsed');
          const r = await rt.callTool(p.name, p.args ?? {});
          traceEnd();
          return r;
        });
      }
      case METHODS.checkpointList:
        return this.withRuntime((rt) => ({ checkpoints: rt.checkpoints.list() }));
      case METHODS.checkpointDiff: {
        const p = parse(protocol().CheckpointDiffParams, params, method);
        return this.withRuntime((rt) => rt.checkpoints.preview(p.id).catch(userError));
      }
      case METHODS.checkpointRewind: {
        const p = parse(protocol().CheckpointRewindParams, params, method);
        return this.withRuntime((rt) => rt.checkpoints.rewind({ id: p.id ?? undefined, force: p.force ?? false }).catch(userError));
      }
      default:
        throw new HostError(`unknown method ${method}`);
    }
  }

  /**
   * Lua's asynchronous call (the `caboose.call` notification): the result or the error goes back as the
   * `reply` event, so Neovim never waits on the host.
   */
  call(raw: unknown): void {
    const c = (raw ?? {}) as { id?: unknown; method?: unknown; params?: unknown };
    if (typeof c.id !== 'number' || typeof c.method !== 'string') {
      this.log.warn('%s without id or method', CALL_NOTIFICATION);
      return;
    }
    const id = c.id;
    this.handle(c.method, c.params).then(
      (result) => this.ui.emit(EVENTS.reply, { id, ok: true, result: result ?? null }),
      (err: unknown) => {
        this.log.warn('call %s failed: %s', c.method, err instanceof Error ? err.stack : String(err));
        this.ui.emit(EVENTS.reply, { id, ok: false, error: errorMessage(err) });
      },
    );
  }

  /**
   * The host's first-request path (first-request.ts) already sent the first message's model request and
   * showed the chat what `first.shown` lists: the session started next (the first, a new one) takes that
   * request's reply over, with that session id and those project rules, and does not show those events again.
   */
  adoptFirst(first: FirstStart): void {
    this.first = first;
  }

  /** The host exits: the session's store is closed now (its work in flight ends with the process). */
  dispose(): void {
    void this.runtime?.dispose(true);
    this.runtime = null;
    this.mcp?.dispose();
  }

  /** The MCP pool (null without configured servers), created on first need (mcp-setup.ts). */
  private mcpPool(): McpPool | null {
    if (this.mcp !== undefined) return this.mcp;
    this.mcp = createMcpPool(this.requireInit(), { log: this.log, ui: this.ui, clientVersion: HOST_VERSION, chat: () => this.runtime?.mcpClient });
    return this.mcp;
  }

  private mcpView(pool: McpPool | null) {
    const session = this.runtime?.session;
    const mode = session?.agent.mode ?? this.requireInit().config.mode ?? 'create';
    const grants = new Set(session?.agent.alwaysAllowedTools ?? []);
    return mcpView(pool, mode, grants);
  }

  private onInit(p: z.infer<ReturnType<typeof protocol>['InitParams']>) {
    if (p.log_file) this.log.setFile(p.log_file);
    if (p.log_level) this.log.setLevel(p.log_level);
    this.init = { config: p.config, cwd: p.cwd, dataDir: p.data_dir, nvimVersion: p.nvim_version };
    if (p.env_api_key) (require('./provider-config') as typeof import('./provider-config')).setEditorApiKey(p.env_api_key);
    this.log.info('init cwd=%s data=%s nvim=%s', p.cwd, p.data_dir, p.nvim_version ?? '?');
    // The next start loads the first-request bundle first, or the host at once (first-eligibility.ts).
    const { configBlocker, rememberFirstOff } = require('./first-eligibility') as typeof import('./first-eligibility');
    rememberFirstOff(configBlocker(p.config));
    // The sandbox's trial run (a child process: 10–50 ms of fork, exec and namespaces) starts now, beside the
    // session's loading; the first request's tool definitions wait for its answer (runtime.ts).
    // With an answer remembered from an earlier host (sandbox.ts, TRIAL_FILE) the trial waits until the first
    // request has left (runtime.ts): it then confirms or corrects that answer, off the request's path.
    if ((p.config.sandbox?.mode ?? 'workspace-write') !== 'off') {
      const sb = require('../workspace/sandbox/sandbox') as typeof import('../workspace/sandbox/sandbox');
      if (sb.trialNeeded(p.data_dir)) void sb.detectSandboxAsync();
    }
    // Get the session ready while the user is still typing: the first message then streams at once. Loading
    // happens in this process, so Neovim never waits for it; a failure surfaces again at the first message.
    setImmediate(() => {
      this.withRuntime((rt) => rt.prepare()).catch((err: unknown) => this.log.info('warm-up: %s', errorMessage(err)));
    });
    return { version: HOST_VERSION, pid: process.pid };
  }

  private requireInit(): InitState {
    if (!this.init) throw new HostError('host not initialised (host.init was not called)');
    return this.init;
  }

  /** :CabooseSessions: the stored sessions (of this folder), or those matching `query`. */
  private listSessions(rt: SessionRuntime, query: string | undefined) {
    const repo = rt.sessions;
    const cwd = this.requireInit().cwd;
    const current = rt.session.id;
    const view = (s: import('../store/sessions').SessionInfo & { snippet?: string }) => ({
      id: s.id,
      title: s.title ?? '(untitled)',
      cwd: s.cwd,
      here: s.cwd === cwd,
      current: s.id === current,
      updated_at: s.updatedAt,
      message_count: s.messageCount,
      // Edit-and-resend's branches: the session this one was forked from (its title then).
      ...(s.forkedFrom ? { forked_from: { id: s.forkedFrom, title: repo.get(s.forkedFrom)?.title ?? '(deleted session)' } } : {}),
      ...(s.snippet ? { snippet: s.snippet } : {}),
    });
    const found = query && query.trim() !== '' ? repo.search(query, { cwd }) : repo.list({ cwd });
    return { sessions: found.map(view) };
  }

  /** Reopens stored session `id` in the chat (a step of inOrder: it replaces the runtime). */
  private async openSession(id: string) {
    const rt = await this.ensureRuntime();
    // A session left a moment ago is read once its stopped turn has written its last words.
    await this.left(id);
    const stored = rt.sessions.get(id);
    if (!stored) throw new HostError(`no stored session ${id}`);
    if (id === rt.session.id) return rt.info();
    // The conversation continues in the folder it was about (when it still exists).
    const init = this.requireInit();
    const fs = require('node:fs') as typeof import('node:fs');
    if (fs.existsSync(stored.cwd) && stored.cwd !== init.cwd) {
      init.cwd = stored.cwd;
      this.mcp?.rootsChanged();
    }
    // An external agent's chat reopens with that agent (when it is still configured).
    const { parseAcpModelTag } = require('./acp-runtime') as typeof import('./acp-runtime');
    const acpTag = parseAcpModelTag(stored.model);
    init.agent = acpTag && init.config.acp?.agents?.[acpTag.agent] ? acpTag.agent : null;
    // The transcript first, read through the current store: Neovim renders it while the new runtime
    // (workspace, tools, agent) is built.
    const { transcriptItems } = require('./session-history') as typeof import('./session-history');
    const t0 = performance.now();
    const items = transcriptItems(rt.sessions.displayRows(id));
    const itemsJson = JSON.stringify(items);
    const t1 = performance.now();
    const next = await this.replaceRuntime(id, () => {
      // As bytes: msgpack copies them, where a 1 MB string is encoded character by character.
      this.ui.emit(EVENTS.transcript, { session: id, title: stored.title ?? null, items_json: Buffer.from(itemsJson) });
      this.log.info('reopened session %s: %d chat entries (read %d ms, sent %d ms)', id, items.length, Math.round(t1 - t0), Math.round(performance.now() - t1));
    });
    this.log.info('session.open: new runtime in %d ms', Math.round(performance.now() - t0));
    next.session.emitState(next.session.agent.state, next.session.agent.state);
    return next.info();
  }

  /**
   * Runs `step` once the steps of the requests that arrived before it have run (not their whole work: a
   * message's step ends when the message is in its session's queue). Steps that replace the runtime run
   * whole in it, so what arrives after them reaches the new session. A step must not wait for a later one.
   */
  private inOrder<T>(step: () => Promise<T>): Promise<T> {
    const run = this.order.then(step);
    this.order = run.catch(() => undefined);
    return run;
  }

  /**
   * A step of inOrder that may replace the runtime for the chat's view `scope` (Lua's number, absent from
   * other callers): the session it opens is tagged with it; one it keeps (nothing to replace) is retagged.
   */
  private switchStep<T>(scope: number | null | undefined, fn: () => Promise<T>): Promise<T> {
    return this.inOrder(async () => {
      if (typeof scope === 'number') this.scopeTag = scope;
      const r = await fn();
      if (typeof scope === 'number') this.runtimeUi?.retag(scope);
      return r;
    });
  }

  /**
   * `fn` with the chat's runtime, taken in arrival order (inOrder); it runs as that runtime's work, so a
   * replacement that comes after it lets it finish before that runtime's store is closed.
   */
  private async withRuntime<T>(fn: (rt: SessionRuntime) => Promise<T> | T): Promise<T> {
    const { done } = await this.inOrder(async () => {
      const rt = await this.ensureRuntime();
      return { done: rt.hold(() => fn(rt)) };
    });
    return done;
  }

  /**
   * Ends the current session (it stays stored) and starts another: a new one, or `resumeId` reopened. A
   * step of inOrder: the old runtime was handed everything that arrived before, and is handed nothing more.
   */
  private async replaceRuntime(resumeId?: string, afterDispose?: () => void): Promise<SessionRuntime> {
    const old = this.runtime ?? (this.starting ? await this.starting.catch(() => null) : null);
    this.runtime = null;
    this.starting = null;
    if (old) {
      // Stopped now; its store closes once its work in flight has settled (runtime.ts dispose).
      const id = old.session.id;
      const closed = old.dispose().finally(() => {
        if (this.leaving.get(id) === closed) this.leaving.delete(id);
      });
      this.leaving.set(id, closed);
      // Reopening it: its stopped turn has written its last words first.
      if (resumeId === id) await this.left(id);
    }
    afterDispose?.();
    return this.ensureRuntime(resumeId);
  }

  /**
   * Resolves once the runtime of session `id` that the chat left has closed its store (at once when none
   * is winding down). Bounded: work that never settles delays the request at most LEFT_WAIT_MS.
   */
  private left(id: string): Promise<void> {
    const closing = this.leaving.get(id);
    if (!closing) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.log.warn('session %s still winding down after %d ms; going on', id, LEFT_WAIT_MS);
        resolve();
      }, LEFT_WAIT_MS);
      void closing.finally(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** :CabooseAgent: the chat's agent (see METHODS.agentSelect). */
  private async selectAgent(p: { name: string; new_chat?: boolean | null }) {
    const init = this.requireInit();
    const { BUILTIN_AGENT } = require('../acp/config') as typeof import('../acp/config');
    const name = p.name === BUILTIN_AGENT ? null : p.name;
    if (name !== null && !init.config.acp?.agents?.[name]) {
      const known = Object.keys(init.config.acp?.agents ?? {});
      throw new HostError(`no ACP agent '${p.name}' is configured (setup({ acp = { agents = { ${p.name} = { command = { … } } } } }))${known.length ? `; configured: ${known.join(', ')}` : ''}`);
    }
    const rt = await this.ensureRuntime();
    const same = (rt.acp?.name ?? null) === name;
    init.agent = name;
    if (same && !p.new_chat) return { ...rt.info(), new_chat: false };
    // The current chat changes agent while it is empty; a conversation keeps its agent (a new chat starts).
    const fresh = p.new_chat || rt.info().messages > 0;
    const next = await this.replaceRuntime(fresh ? undefined : rt.session.id);
    next.session.emitState(next.session.agent.state, next.session.agent.state);
    // The agent starts while the user types (a failure is reported in the chat and retried at the first message).
    next.hold(() => next.prepare()).catch((err: unknown) => this.log.info('agent warm-up: %s', errorMessage(err)));
    return { ...next.info(), new_chat: fresh };
  }

  private ensureRuntime(resumeId?: string): Promise<SessionRuntime> {
    if (this.runtime) return Promise.resolve(this.runtime);
    if (!this.starting) {
      const init = this.requireInit();
      this.starting = (async () => {
        const { ChatSession } = require('./session') as typeof import('./session');
        const acpAgent = init.agent ? init.config.acp?.agents?.[init.agent] : undefined;
        if (init.agent && acpAgent) {
          const { createAcpRuntime } = require('./acp-runtime') as typeof import('./acp-runtime');
          const ui = (this.runtimeUi = this.ui.scope(this.scopeTag));
          const session = new ChatSession(ui, this.log, resumeId);
          const rt = await createAcpRuntime({
            config: init.config,
            cwd: init.cwd,
            dataDir: init.dataDir,
            session,
            ui,
            log: this.log,
            agentName: init.agent,
            agent: acpAgent,
            resume: resumeId !== undefined,
            clientVersion: HOST_VERSION,
          });
          this.runtime = rt;
          return rt;
        }
        const { createSessionRuntime } = require('./runtime') as typeof import('./runtime');
        const { modelLabel } = require('./provider-config') as typeof import('./provider-config');
        // The first-request path's request belongs to the first session only (a new one, built-in agent).
        const first = resumeId === undefined ? this.first : null;
        this.first = null;
        try {
          const provider = await this.models.forNewSession();
          // The session's own view of the UI: closed when it is replaced (see LuaUi.scope).
          const ui = (this.runtimeUi = this.ui.scope(this.scopeTag));
          if (first) ui.skipShown(first.shown);
          const session = new ChatSession(ui, this.log, resumeId ?? first?.sessionId);
          const rt = await createSessionRuntime({
            ...init,
            provider,
            modelLabel: modelLabel(init.config, provider),
            session,
            ui,
            log: this.log,
            resume: resumeId !== undefined,
            mcp: this.mcpPool(),
            ...(first ? { first: { reply: first.reply, rules: first.rules } } : {}),
          });
          this.runtime = rt;
          return rt;
        } catch (err) {
          // No session to take the request over: it is cut, and the chat learns the error as without it.
          first?.reply.abort();
          first?.failed(err);
          throw err;
        }
      })();
      this.starting.catch(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }
}

function oneLine(s: string, max = 60): string {
  const l = [...s.replace(/\s+/g, ' ').trim()];
  return l.length > max ? `${l.slice(0, max - 1).join('')}…` : l.join('');
}

/** Refusals and tool errors of a user command reach the user as their message alone. */
function userError(err: unknown): never {
  throw new HostError(err instanceof Error ? err.message : String(err));
}

function parse<S extends z.ZodType>(schema: S, params: unknown, method: string): z.infer<S> {
  const r = schema.safeParse(params);
  if (!r.success) {
    const detail = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new HostError(`invalid params for ${method}: ${detail}`);
  }
  return r.data;
}

