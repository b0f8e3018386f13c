import { Agent } from '../agent/loop';
import type { SubagentProgress, SubagentTranscript } from '../agent/subagent';
import type { Usage } from '../agent/provider';
import { DEFAULT_CONTEXT_WINDOW, knownContextWindow } from '../agent/context';
import type { McpPool } from '../mcp/client-pool';
import { isOffered } from '../tools/offered';
import { TodoList } from '../tools/todo-list';
import { Sandbox } from '../workspace/sandbox/sandbox';
import type { SessionRepository } from '../store/sessions';
import type { ResolvedProvider } from './provider-config';
import { EVENTS, type HostConfig } from './protocol';
import type { ChatSession } from './session';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';
import { describeSubagentProgress } from './summaries';
import { composeMessage, type ContextItem } from './message-context';
import { SessionRecorder } from './session-recorder';
import { restoreConversation } from './session-history';
import { resolveContextWindow } from './model-list';
import { checkpointApi, type CheckpointApi } from './checkpoints';
import { ConversationRules, rulesOptions } from './project-rules';
import { chatEvents } from './session-parts/agent-events';
import { ChatModel } from './session-parts/chat-model';
import { attachSessionMcp } from './session-parts/mcp-attachment';
import { MessageQueue, queueFullMessage, type MessageMeta } from './session-parts/message-queue';
import { SelectionEdits, type SelectionEditParams, type SelectionEditResult } from './session-parts/selection-edits';
import { SessionNamer } from './session-parts/session-namer';
import { openSessionWorkspace } from './session-parts/session-workspace';
import { ToolLines } from './session-parts/tool-lines';
import { addSessionTools } from './session-parts/tool-set';
import { UsageMeter } from './session-parts/usage-meter';

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
  selectionEdit(p: SelectionEditParams): Promise<SelectionEditResult>;
  cancelSelectionEdit(id: number): boolean;
  /** The model the next request uses (provider resolved); null when an ACP agent runs the chat (it picks its own). */
  model(): ResolvedProvider | null;
  /** :CabooseModel: the next request (of this chat, its subagents, titles, selection edits) uses this model. */
  setModel(p: ResolvedProvider, label: string): void;
  /** Renames this session (the user's title wins over the model's). */
  rename(title: string): { title: string };
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

/**
 * Builds one chat session from its parts (src/host/session-parts/): the workspace, the model, the tool set,
 * the agent and what the chat sees of it, the session's record, its title, the message queue and MCP.
 */
export async function createSessionRuntime(o: RuntimeOptions): Promise<SessionRuntime> {
  const { config, session, ui, log } = o;
  const chat = new ChatModel(config, o.provider, o.modelLabel ?? o.provider.model);
  const ws = openSessionWorkspace({ config, cwd: o.cwd, dataDir: o.dataDir, sessionId: session.id, model: o.provider.model, ui, log });
  const sessions = ws.workspace.store.sessions;
  const closing = new AbortController();
  const usage = new UsageMeter(ui);
  const todos = new TodoList();
  todos.onChange((items) => ui.emit(EVENTS.todos, { items }));
  // bash (and MCP servers that opt in) run inside the OS sandbox (issue 19).
  const sandbox = new Sandbox({ root: o.cwd, dataDir: o.dataDir, config: config.sandbox ?? null });
  const onTitle = (title: string): void => ui.emit(EVENTS.sessionInfo, { session: session.id, title });
  const recorder = new SessionRecorder(sessions, session.id, { cwd: o.cwd, model: o.provider.model, onTitle }, (e) =>
    log.error('session store: %s', e instanceof Error ? (e.stack ?? e.message) : String(e)),
  );
  const notice = (text: string): void => {
    recorder.chatLine('notice', text);
    ui.emit(EVENTS.notice, { text });
  };
  const progress = (id: string, summary: string): void => ui.emit(EVENTS.toolProgress, { id, summary });
  const toolLines = new ToolLines({ ui, sandbox, recordView: (id, view) => recorder.toolView(id, view), notice });
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
  const registry = ws.registry;
  const mcp = attachSessionMcp({ pool: o.mcp, registry, log, notice, progress, session, provider: o.provider, servers: config.mcp?.servers ?? {} });
  addSessionTools(registry, {
    config,
    sandbox,
    todos,
    secrets: chat.secrets,
    recall: { get: (id) => sessions.row(session.id, id), archivedBy: (id) => sessions.archivedBy(session.id, id) },
    subagent: {
      provider: chat.client,
      registry,
      log,
      offered: isOffered,
      projectRules,
      onProgress: (p: SubagentProgress) => progress(p.toolCallId, describeSubagentProgress(p)),
      onUsage: (u: Usage) => usage.count(u, false),
      // Stored with the session whatever happened to the call (a stopped child reports after its result).
      onTranscript: (t: SubagentTranscript) => {
        recorder.subagent(t);
        toolLines.transcript(t);
      },
    },
    agent: { grants, mode: () => agent.mode, requestApproval: session.requestApproval, approvalCancelled: (r) => session.cancelApproval(r.id) },
  });
  const namer = new SessionNamer({ sessions, sessionId: session.id, client: () => chat.fresh(), onTitle, log, signal: closing.signal });
  const agent = new Agent({
    provider: chat.client,
    registry,
    mode: config.mode ?? 'create',
    stepLimit: config.step_limit ?? 50,
    maxQueue: config.max_queue ?? 3,
    cwd: o.cwd,
    systemPrompt: config.system_prompt ?? undefined,
    projectRules,
    toolFilter: isOffered,
    grants,
    ...(o.provider.media ? { acceptsMedia: o.provider.media } : {}),
    ...(mcp.hooks ? { prepareTools: mcp.hooks.prepare } : {}),
    ...contextWindowOptions(o.provider, () => chat.provider, log),
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
    events: chatEvents({
      session, ui, recorder, checkpoints: ws.workspace.checkpoints, mcp: mcp.hooks, toolLines, notice,
      usage: (u) => usage.count(u, true),
      turnEnded: () => namer.nameAfterTurn(agent.messages),
    }),
    log: {
      debug: (m: string, ...a: unknown[]) => log.debug(m, ...a),
      info: (m: string, ...a: unknown[]) => log.info(m, ...a),
      warn: (m: string, ...a: unknown[]) => log.warn(m, ...a),
      error: (m: string, ...a: unknown[]) => log.error(m, ...a),
    },
  });
  session.bind(agent);
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
  const sessionInfo = () => ui.emit(EVENTS.sessionInfo, { session: session.id, model: chat.label, cwd: o.cwd, title: sessions.get(session.id)?.title ?? null });
  sessionInfo();
  rules.start();
  const messages = new MessageQueue(async (text: string, context: ContextItem[], nextId: () => number) => {
    ensureRestored();
    await rules.freeze();
    const id = nextId();
    // `/server:prompt …` and `#mcp:server:uri` (MCP prompts and resources) are expanded first.
    const expanded = await mcp.expand(text, session.askOutsideTurn, closing.signal);
    const composed = await composeMessage(expanded?.text ?? text, context, (p) => ws.call('read_file', { path: p }));
    if (expanded) composed.labels.unshift(...expanded.labels);
    // After a rewind the model learns which of its edits are gone.
    const note = ws.workspace.checkpoints.takeNotes();
    const r = agent.send(note ? `${note}\n\n${composed.text}` : composed.text, { id, display: text, labels: composed.labels } satisfies MessageMeta);
    if (r.status === 'queued') ui.emit(EVENTS.queued, { id, text, context: composed.labels, position: r.position });
    if (r.status === 'rejected') {
      if (note) ws.workspace.checkpoints.addNote(note);
      ui.emit(EVENTS.error, { kind: 'queue_full', message: queueFullMessage(config.max_queue ?? 3) });
    }
    return { id, ...r };
  });
  const selectionEdits = new SelectionEdits(() => chat.fresh());
  return {
    session,
    sessions,
    selectionEdit: (p) => selectionEdits.run(p),
    cancelSelectionEdit: (id) => selectionEdits.cancel(id),
    send: (text, context = []) => messages.send(text, context),
    sent: () => messages.sent(),
    prepare: () => {
      // MCP servers start while the user types the first message (they report their own failures).
      void mcp.hooks?.prepare(new AbortController().signal);
      return agent.prepare();
    },
    model: () => chat.provider,
    setModel(p, newLabel) {
      chat.set(p, newLabel);
      agent.setContextWindow(p.contextWindow ?? knownContextWindow(p.model) ?? DEFAULT_CONTEXT_WINDOW);
      sessionInfo();
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
    mcpClient: mcp.client,
    dispose() {
      // Nothing this session emits while it winds down reaches the chat that replaces it.
      ui.close();
      selectionEdits.dispose();
      closing.abort();
      mcp.hooks?.detach();
      session.stop();
      recorder.dispose();
      void sandbox.dispose();
      ws.close();
    },
  };
}

/**
 * Compaction is always on: the configured window, else a well-known model's, else (asked only when the
 * conversation gets long) the server's model list, else a conservative default.
 */
function contextWindowOptions(p: ResolvedProvider, current: () => ResolvedProvider, log: Logger): { contextWindow: number; contextWindowLookup?: () => Promise<number> } {
  return {
    contextWindow: p.contextWindow ?? knownContextWindow(p.model) ?? DEFAULT_CONTEXT_WINDOW,
    contextWindowLookup:
      p.contextWindow || knownContextWindow(p.model)
        ? undefined
        : async () => {
            const w = await resolveContextWindow(current());
            log.info('context window %d tokens (%s)', w.tokens, w.source);
            return w.tokens;
          },
  };
}
