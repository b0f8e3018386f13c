import * as path from 'node:path';
import { Agent } from '../agent/loop';
import { createAgentTool, createExploreTool, type SubagentProgress, type SubagentTranscript } from '../agent/subagent';
import { isOffered } from '../tools/offered';
import { createExecTools } from '../tools/exec-tools';
import { TodoList } from '../tools/todo-list';
import { openWorkspace } from '../index';
import { recoveryNotice } from '../workspace/commit-journal';
import { configuredProviders, type ResolvedProvider } from './provider-config';
import type { HostConfig } from './protocol';
import { EVENTS } from './protocol';
import type { ChatSession } from './session';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';
import { describeSubagentProgress, describeToolResult, summarizeToolCall } from './summaries';
import { composeMessage, type ContextItem } from './message-context';
import { NvimBufferBridge } from './nvim-buffers';
import { NvimDiagnostics } from './nvim-diagnostics';
import { createModelClient, type ModelClient, type ModelEvent, type ModelRequest, type Usage } from '../agent/provider';
import { requestSelectionEdit } from '../agent/selection-edit';
import { computeHunks, type ReviewHunk } from '../workspace/review';
import { createRecallTool } from '../tools/recall';
import { DEFAULT_CONTEXT_WINDOW, knownContextWindow } from '../agent/context';
import { SessionRecorder } from './session-recorder';
import type { SessionRepository } from '../store/sessions';
import { restoreConversation } from './session-history';
import { requestTitle } from './session-title';
import { resolveContextWindow } from './model-list';
import { checkpointApi, type CheckpointApi } from './checkpoints';
import { ConversationRules, rulesOptions } from './project-rules';
import type { McpPool } from '../mcp/client-pool';
import { Sandbox } from '../workspace/sandbox/sandbox';

type SelectionEditParamsT = {
  id: number;
  instruction: string;
  path?: string | null;
  filetype?: string | null;
  start_line: number;
  end_line: number;
  text: string;
  before?: string | null;
  after?: string | null;
};

export interface SessionRuntime {
  session: ChatSession;
  /** Every stored session of this data folder (list, search, delete). */
  sessions: SessionRepository;
  /** Starts a turn or queues the message; context items are read and attached first. */
  send(text: string, context?: ContextItem[]): Promise<{ id: number; status: string; position?: number }>;
  /** Loads what the first reply needs (model client, HTTP stack). */
  prepare(): Promise<void>;
  /** Resolves once every message sent so far reached the agent (started or queued). */
  sent(): Promise<unknown>;
  listTrash(): unknown;
  restore(trashId: string, targetPath?: string): Promise<unknown>;
  /** Runs one tool as the user (no approval); the result is the tool's `{ ok, data | error }`. */
  callTool(name: string, args: unknown): Promise<unknown>;
  /** A visual-selection edit request: the replacement lines and their hunks (nothing is written). */
  selectionEdit(p: SelectionEditParamsT): Promise<{ cancelled: true } | { lines: string[]; hunks: ReviewHunk[] }>;
  cancelSelectionEdit(id: number): boolean;
  /** The model the next request uses (provider resolved); null when an ACP agent runs the chat (it picks its own). */
  model(): ResolvedProvider | null;
  /** :CabooseModel: the next request (of this chat, its subagents, titles, selection edits) uses this model. */
  setModel(p: ResolvedProvider, label: string): void;
  /** Renames this session (the user's title wins over the model's). */
  rename(title: string): { title: string };
  /** Summarizes the conversation now (the chat's /compact), between turns. */
  compact(): Promise<{ compacted: boolean }>;
  /** Which session the chat shows, its title and whether it holds messages. */
  info(): { session: string; title: string | null; cwd: string; messages: number; agent?: string };
  /** :CabooseUndo / :CabooseCheckpoints: the file changes of each user message, rewindable. */
  checkpoints: CheckpointApi;
  dispose(): void;
  /** An external agent's chat (src/acp): its agent. */
  acp?: import('../acp/agent').AcpAgent;
  /** MCP servers' elicitation and sampling, answered in this chat. */
  mcpClient?: import('./mcp-client').McpSessionClient;
}

export interface RuntimeOptions {
  config: HostConfig;
  cwd: string;
  dataDir: string;
  provider: ResolvedProvider;
  session: ChatSession;
  ui: LuaUi;
  log: Logger;
  /** Reopen this stored session: its conversation continues (the chat was sent its transcript already). */
  resume?: boolean;
  /** The host's MCP servers (shared by its sessions); their tools join this session's. */
  mcp?: McpPool | null;
  /** What the winbar calls the model (`provider/model` with named providers). Default: the model. */
  modelLabel?: string;
}

/** The model client of a chat: swapped by :CabooseModel, so the next request goes to the new model. */
class SwitchableModel implements ModelClient {
  constructor(private current: ModelClient) {}
  get model(): string {
    return this.current.model;
  }
  set(client: ModelClient): void {
    this.current = client;
  }
  stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    return this.current.stream(req);
  }
  prepare(): Promise<void> {
    return this.current.prepare?.() ?? Promise.resolve();
  }
}

/** Builds the workspace, the tool set and the agent for one chat session. */
export async function createSessionRuntime(o: RuntimeOptions): Promise<SessionRuntime> {
  const { config, session, ui, log } = o;
  let provider: ResolvedProvider = o.provider;
  let label = o.modelLabel ?? o.provider.model;
  // Keys the bash tool keeps out of commands' environment: the current provider's, and every configured
  // provider's literal or environment key (a key from api_key_cmd joins once that provider is chosen).
  const secrets: string[] = [o.provider.apiKey];
  for (const p of configuredProviders(config).values()) {
    if (p.api_key) secrets.push(p.api_key);
    if (p.api_key_env && process.env[p.api_key_env]) secrets.push(process.env[p.api_key_env] as string);
  }
  const model = new SwitchableModel(createModelClient(provider));
  const ws = openWorkspace({
    root: o.cwd,
    dataDir: path.resolve(o.dataDir),
    sessionId: session.id,
    denyGlobs: config.deny_globs,
    secretGlobs: config.secret_globs,
    trashRetentionDays: config.trash_retention_days,
    // The file tools see and edit live buffers (issue 4).
    bridge: new NvimBufferBridge(ui),
    unsavedBuffers: config.unsaved_buffers,
    allowReadonlyWrites: config.allow_readonly_writes,
    hardLinks: config.hard_links,
    // The diagnostics tool, and what the agent's edits report of the language servers (issue 12).
    diagnostics: new NvimDiagnostics(ui),
    postEditDiagnostics:
      config.diagnostics?.enabled === false
        ? null
        : {
            waitMs: config.diagnostics?.wait_ms ?? 2000,
            settleMs: config.diagnostics?.settle_ms ?? 300,
            onError: (err) => log.warn('post-edit diagnostics: %s', err instanceof Error ? err.message : String(err)),
          },
  });
  // One checkpoint per user message (its turn's writes); a failure to record one is reported, not fatal.
  ws.workspace.checkpoints.onRecordError = (err) => {
    log.warn('checkpoint not recorded: %s', err instanceof Error ? err.stack : String(err));
    ui.emit(EVENTS.notice, { text: `checkpoint not recorded (:CabooseUndo cannot undo this change): ${err instanceof Error ? err.message : String(err)}` });
  };
  const todos = new TodoList();
  const maxQueue = config.max_queue ?? 3;
  // What the chat shows of a message (its words and context labels), carried through the agent's queue.
  interface MessageMeta {
    id: number;
    display: string;
    labels: string[];
  }
  let messageCount = 0;
  let sending: Promise<unknown> = Promise.resolve();
  const callArgs = new Map<string, unknown>();
  // The winbar's ↑ ↓ are the main agent's last request; Σ is the session's, subagents included.
  // Σ is stored with the session: a reopened one continues from its total.
  const storedUsage = o.resume ? ws.workspace.store.sessions.get(session.id)?.usage : undefined;
  const usage = { prompt: storedUsage?.prompt ?? 0, completion: storedUsage?.completion ?? 0, lastPrompt: 0, lastCompletion: 0, lastCached: 0, lastReasoning: 0 };
  const countUsage = (u: Usage, main: boolean): void => {
    usage.prompt += u.promptTokens;
    usage.completion += u.completionTokens;
    try {
      ws.workspace.store.sessions.addUsage(session.id, u.promptTokens, u.completionTokens);
    } catch (e) {
      log.error('session store: usage not stored: %s', e instanceof Error ? e.message : String(e));
    }
    if (main) [usage.lastPrompt, usage.lastCompletion, usage.lastCached, usage.lastReasoning] = [u.promptTokens, u.completionTokens, u.cachedTokens ?? 0, u.reasoningTokens ?? 0];
    ui.emit(EVENTS.usage, {
      prompt: usage.lastPrompt,
      completion: usage.lastCompletion,
      session_prompt: usage.prompt,
      session_completion: usage.completion,
      // Details only when the server reported them above zero (a 0 is often a placeholder).
      ...(usage.lastCached > 0 ? { cached: usage.lastCached } : {}),
      ...(usage.lastReasoning > 0 ? { reasoning: usage.lastReasoning } : {}),
    });
  };
  const metaOf = (m: { text: string; meta?: unknown }): MessageMeta => (m.meta as MessageMeta | undefined) ?? { id: 0, display: m.text, labels: [] };
  todos.onChange((items) => ui.emit(EVENTS.todos, { items }));
  // The file tools' registry audits refused write attempts; the other tools join it.
  const registry = ws.registry;
  // bash (and MCP servers that opt in) run inside the OS sandbox (issue 19).
  const sandbox = new Sandbox({ root: o.cwd, dataDir: o.dataDir, config: config.sandbox ?? null });
  let sandboxNoticed = false;
  for (const def of createExecTools({
    sandbox,
    todos,
    webSearch: config.web_search ? { searxngUrl: config.web_search.searxng_url } : null,
    bashTimeoutMs: config.bash_timeout_ms,
    fetchAllowHosts: config.fetch_allow_hosts,
    // Every provider's key (this list grows when :CabooseModel resolves another one).
    hideEnvValues: secrets,
  })) {
    registry.add(def);
  }
  const sessions = ws.workspace.store.sessions;
  // What a rewind tells the model waits with the session: a host restart or a reopen does not lose it.
  ws.workspace.checkpoints.noteStore = {
    add: (text) => {
      sessions.ensure({ id: session.id, cwd: o.cwd, model: o.provider.model });
      sessions.append(session.id, { kind: 'note', display: { text }, text: '', inContext: false });
    },
    take: () => sessions.takeNotes(session.id),
  };
  const onTitle = (title: string): void => ui.emit(EVENTS.sessionInfo, { session: session.id, title });
  const recorder = new SessionRecorder(sessions, session.id, { cwd: o.cwd, model: o.provider.model, onTitle }, (e) =>
    log.error('session store: %s', e instanceof Error ? (e.stack ?? e.message) : String(e)),
  );
  registry.add(createRecallTool({ get: (id) => sessions.row(session.id, id), archivedBy: (id) => sessions.archivedBy(session.id, id) }));
  // AGENTS.md and the like: fixed at the first message (a reopened session keeps the ones it started with).
  const rules = new ConversationRules({
    options: rulesOptions(config),
    cwd: o.cwd,
    ui,
    log,
    stored: o.resume ? sessions.latest(session.id, 'rules')?.message : undefined,
    record: (snap, lines) => recorder.rules(snap, lines),
  });
  const projectRules = () => rules.prompt();
  // Subagents: `agent` children run in the session's mode and share its approvals and "always" grants.
  const grants = new Set<string>();
  const transcripts = new Map<string, SubagentTranscript>(); // until the call's line shows the child's steps
  const subagent = {
    provider: model,
    registry,
    log,
    offered: isOffered,
    projectRules,
    onProgress: (p: SubagentProgress) => ui.emit(EVENTS.toolProgress, { id: p.toolCallId, summary: describeSubagentProgress(p) }),
    onUsage: (u: Usage) => countUsage(u, false),
    onTranscript: (t: SubagentTranscript) => {
      // Stored with the session whatever happened to the call (a stopped child reports after its result).
      recorder.subagent(t);
      if (t.status !== 'running' && callArgs.has(t.toolCallId)) transcripts.set(t.toolCallId, t);
    },
  };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mcp = o.mcp
    ? (require('../mcp/session') as typeof import('../mcp/session')).attachMcp(o.mcp, registry, log, (text) => notice(text), (id, summary) => ui.emit(EVENTS.toolProgress, { id, summary }))
    : null;
  registry.add(createExploreTool(subagent));
  registry.add(createAgentTool({ ...subagent, grants, mode: () => agent.mode, requestApproval: session.requestApproval, approvalCancelled: (r) => session.cancelApproval(r.id) }));
  const agent = new Agent({
    provider: model,
    registry,
    mode: config.mode ?? 'create',
    stepLimit: config.step_limit ?? 50,
    maxQueue,
    cwd: o.cwd,
    systemPrompt: config.system_prompt ?? undefined,
    projectRules,
    toolFilter: isOffered,
    grants,
    ...(o.provider.media ? { acceptsMedia: o.provider.media } : {}),
    ...(mcp ? { prepareTools: mcp.prepare } : {}),
    // Compaction is always on: the configured window, else a well-known model's, else (asked only when the
    // conversation gets long) the server's model list, else a conservative default.
    contextWindow: o.provider.contextWindow ?? knownContextWindow(o.provider.model) ?? DEFAULT_CONTEXT_WINDOW,
    contextWindowLookup:
      o.provider.contextWindow || knownContextWindow(o.provider.model)
        ? undefined
        : async () => {
            const w = await resolveContextWindow(provider);
            log.info('context window %d tokens (%s)', w.tokens, w.source);
            return w.tokens;
          },
    storedRef: recorder.storedId,
    archive: recorder.archive,
    makeContext: (signal) => ({
      signal,
      workspace: ws.workspace,
      sessionId: session.id,
      ask: session.ask,
      reportDiagnostics: true,
      log: (level, msg, meta) => log[level]('%s %j', msg, meta ?? {}),
    }),
    requestApproval: session.requestApproval,
    events: {
      state: (state, previous) => session.emitState(state, previous),
      assistantStart: () => ui.emit(EVENTS.assistantStart, {}),
      text: (delta) => {
        recorder.text(delta);
        ui.emit(EVENTS.assistantDelta, { text: delta });
      },
      reasoning: (delta) => ui.emit(EVENTS.reasoningDelta, { text: delta }),
      messageAdded: (m) => recorder.messageAdded(m),
      assistantEnd: (info) => ui.emit(EVENTS.assistantEnd, { interrupted: info.interrupted }),
      turnStart: (m) => {
        mcp?.turnStarted();
        const meta = metaOf(m);
        ws.workspace.checkpoints.begin({ sessionId: session.id, messageId: meta.id, text: meta.display });
        recorder.turnStart({ text: meta.display, ...(meta.labels.length > 0 ? { labels: meta.labels } : {}) });
        ui.emit(EVENTS.userMessage, { id: meta.id, text: meta.display, context: meta.labels });
      },
      turnEnd: () => {
        ws.workspace.checkpoints.end();
        recorder.flush();
        nameSession();
      },
      queueDiscarded: (ms) => ui.emit(EVENTS.queueDiscarded, { messages: ms.map((m) => ({ id: metaOf(m).id, text: metaOf(m).display })) }),
      retry: (r) => ui.emit(EVENTS.retry, { attempt: r.attempt, delay_ms: r.delayMs, message: r.message }),
      usage: (u) => countUsage(u, true),
      toolCall: (c) => {
        callArgs.set(c.id, c.args);
        ui.emit(EVENTS.toolCall, { id: c.id, name: c.name, summary: summarizeToolCall(c.name, c.args) });
        if (c.name === 'bash' && sandbox.unavailable && !sandboxNoticed) {
          sandboxNoticed = true;
          notice(`commands are not sandboxed: ${sandbox.support.available ? '' : sandbox.support.reason}; every command asks (fix: ${sandbox.support.available ? '' : sandbox.support.fix}; see :checkhealth caboose)`);
        }
      },
      toolResult: (r) => {
        const view = describeToolResult(r.name, callArgs.get(r.id), r.result, transcripts.get(r.id));
        callArgs.delete(r.id);
        recorder.toolView(r.id, view);
        transcripts.delete(r.id);
        ui.emit(EVENTS.toolResult, { id: r.id, name: r.name, ok: r.result.ok, status: view.status, summary: view.summary, details: view.details });
        // A shell command may have changed files behind Neovim's back: clean buffers re-read them.
        if (r.name === 'bash') ui.emit(EVENTS.diskChanged, {});
      },
      error: (e) => {
        recorder.chatLine('error', e.message);
        ui.emit(EVENTS.error, { kind: e.kind, message: e.message });
      },
      notice: (text) => notice(text),
      approvalCancelled: (req) => session.cancelApproval(req.id),
      compacted: (c) => recorder.compacted(c.added, c.archivedAs),
    },
    log: {
      debug: (m: string, ...a: unknown[]) => log.debug(m, ...a),
      info: (m: string, ...a: unknown[]) => log.info(m, ...a),
      warn: (m: string, ...a: unknown[]) => log.warn(m, ...a),
      error: (m: string, ...a: unknown[]) => log.error(m, ...a),
    },
  });
  function notice(text: string): void {
    recorder.chatLine('notice', text);
    ui.emit(EVENTS.notice, { text });
  }
  // What opening the workspace undid of a commit a crash interrupted (issue 18).
  const recoveredText = recoveryNotice(ws.workspace.recovered, ws.workspace.root);
  if (recoveredText) notice(recoveredText);
  session.bind(agent);
  session.notice = notice;
  // The conversation the model continues from is read when the first message needs it (parsing every
  // stored tool output of a long session must not delay its transcript).
  let restore = o.resume;
  const ensureRestored = (): void => {
    if (!restore) return;
    restore = false;
    const restored = restoreConversation(sessions.contextRows(session.id));
    agent.loadMessages(restored.map((r) => r.message));
    recorder.adopt(restored);
  };
  ui.emit(EVENTS.sessionInfo, { session: session.id, model: label, cwd: o.cwd, title: sessions.get(session.id)?.title ?? null });
  if (storedUsage && storedUsage.prompt + storedUsage.completion > 0) {
    // No request of this sitting yet: only Σ is known.
    ui.emit(EVENTS.usage, { session_prompt: storedUsage.prompt, session_completion: storedUsage.completion });
  }
  rules.start();
  // Once, after the first reply: a 3–6 word title from the model (the first words stand in until then).
  let naming = false;
  const titleAbort = new AbortController();
  function nameSession(): void {
    const info = sessions.get(session.id);
    if (naming || !info || info.titleSource === 'model' || info.titleSource === 'user') return;
    const msgs = agent.messages;
    const first = msgs.find((m) => m.role === 'user');
    const reply = [...msgs].reverse().find((m) => m.role === 'assistant' && typeof m.content === 'string' && m.content !== '');
    if (!first || typeof first.content !== 'string') return;
    naming = true;
    const firstText = info.title ?? first.content;
    requestTitle(createModelClient(provider), firstText, typeof reply?.content === 'string' ? reply.content : '', titleAbort.signal)
      .then((title) => {
        const now = sessions.get(session.id);
        if (!title || !now || now.titleSource === 'user') return;
        sessions.rename(session.id, title, 'model');
        onTitle(title);
      })
      .catch((e: unknown) => log.info('session title: %s', e instanceof Error ? e.message : String(e)));
  }
  const sendNow = async (text: string, context: ContextItem[]) => {
    ensureRestored();
    await rules.freeze();
    const id = ++messageCount;
    // `/server:prompt …` and `#mcp:server:uri` (MCP prompts and resources) are expanded first.
    const expanded = o.mcp && /(^\s*\/[\w-]+:\S)|#mcp:/.test(text) ? await mcpMessage().expandMcpMessage(text, o.mcp, session.askOutsideTurn, titleAbort.signal) : null;
    const composed = await composeMessage(expanded?.text ?? text, context, (p) => ws.call('read_file', { path: p }), (url) => agent.callAsUser('fetch', { url }));
    if (expanded) composed.labels.unshift(...expanded.labels);
    // After a rewind the model learns which of its edits are gone.
    const note = ws.workspace.checkpoints.takeNotes();
    const r = agent.send(note ? `${note}\n\n${composed.text}` : composed.text, { id, display: text, labels: composed.labels } satisfies MessageMeta);
    if (r.status === 'queued') ui.emit(EVENTS.queued, { id, text, context: composed.labels, position: r.position });
    if (r.status === 'rejected') {
      if (note) ws.workspace.checkpoints.addNote(note);
      ui.emit(EVENTS.error, {
        kind: 'queue_full',
        message: `The agent is busy and ${maxQueue} message${maxQueue === 1 ? ' is' : 's are'} already queued; wait or :CabooseStop.`,
      });
    }
    return { id, ...r };
  };
  const mcpMessage = () => require('./mcp-message') as typeof import('./mcp-message');
  const selectionEdits = new Map<number, AbortController>();
  return {
    session,
    sessions,
    async selectionEdit(p) {
      const ac = new AbortController();
      selectionEdits.set(p.id, ac);
      try {
        const replacement = await requestSelectionEdit(
          createModelClient(provider),
          { instruction: p.instruction, path: p.path ?? null, filetype: p.filetype ?? '', startLine: p.start_line, endLine: p.end_line, text: p.text, before: p.before ?? '', after: p.after ?? '' },
          ac.signal,
        );
        return { lines: replacement === '' ? [] : replacement.split('\n'), hunks: computeHunks(p.text === '' ? '' : p.text + '\n', replacement === '' ? '' : replacement + '\n') };
      } catch (e) {
        if (ac.signal.aborted) return { cancelled: true as const };
        throw e;
      } finally {
        selectionEdits.delete(p.id);
      }
    },
    cancelSelectionEdit(id) {
      const ac = selectionEdits.get(id);
      ac?.abort();
      return !!ac;
    },
    send(text, context = []) {
      // One after another, so a message whose context takes a moment to read keeps its place.
      const next = sending.then(() => sendNow(text, context));
      sending = next.catch(() => undefined);
      return next;
    },
    sent: () => sending,
    prepare: () => {
      // MCP servers start while the user types the first message (they report their own failures).
      void mcp?.prepare(new AbortController().signal);
      return agent.prepare();
    },
    model: () => provider,
    setModel(p, newLabel) {
      provider = p;
      label = newLabel;
      if (p.apiKey && !secrets.includes(p.apiKey)) secrets.push(p.apiKey);
      model.set(createModelClient(p));
      agent.setContextWindow(p.contextWindow ?? knownContextWindow(p.model) ?? DEFAULT_CONTEXT_WINDOW);
      ui.emit(EVENTS.sessionInfo, { session: session.id, model: label, cwd: o.cwd, title: sessions.get(session.id)?.title ?? null });
    },
    async compact() {
      ensureRestored();
      return { compacted: await agent.compactNow() };
    },
    rename(title) {
      const t = title.replace(/\s+/g, ' ').trim().slice(0, 120);
      if (t === '') throw new Error('a session title cannot be empty');
      sessions.ensure({ id: session.id, cwd: o.cwd, model: o.provider.model });
      sessions.rename(session.id, t, 'user');
      onTitle(t);
      return { title: t };
    },
    info() {
      const s = sessions.get(session.id);
      return { session: session.id, title: s?.title ?? null, cwd: o.cwd, messages: s?.messageCount ?? 0 };
    },
    listTrash: () => ws.workspace.trash.list(),
    restore: (trashId, targetPath) => ws.call('restore_file', { trashId, targetPath }),
    callTool: (name, args) => ws.call(name, args),
    checkpoints: checkpointApi(ws.workspace, () => session.id, () => agent.state !== 'idle', notice),
    mcpClient: (require('./mcp-client') as typeof import('./mcp-client')).mcpSessionClient({ session, provider: o.provider, servers: config.mcp?.servers ?? {}, notice }),
    dispose() {
      // Nothing this session emits while it winds down reaches the chat that replaces it.
      ui.close();
      for (const ac of selectionEdits.values()) ac.abort();
      titleAbort.abort();
      mcp?.detach();
      session.stop();
      recorder.dispose();
      void sandbox.dispose();
      ws.close();
    },
  };
}

