import type { SubagentProgress, SubagentTranscript } from '../agent/subagent';
import type { Usage } from '../agent/provider';
import type { AgentEvents } from '../agent/agent-types';
import type { McpPool } from '../mcp/client-pool';
import { isOffered } from '../tools/offered';
import { TodoList } from '../tools/todo-list';
import { attachVerdict, secretTargets } from '../tools/secret-targets';
import { imagePolicy } from './image-attachments';
import { Sandbox } from '../workspace/sandbox/sandbox';
import { recoveryNotice } from '../workspace/commit-journal';
import type { SessionRepository } from '../store/sessions';
import type { ResolvedProvider } from './provider-config';
import { EVENTS, type HostConfig } from './protocol';
import type { ChatSession } from './session';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';
import { describeSubagentProgress } from './summaries';
import type { ContextItem } from './message-context';
import { SessionRecorder } from './session-recorder';
import { checkpointApi, type CheckpointApi } from './checkpoints';
import { ConversationRules, rulesOptions } from './project-rules';
import { chatEvents } from './session-parts/agent-events';
import { ChatModel } from './session-parts/chat-model';
import { forkAt, regenerate, type FilesChoice, type ForkReply, type RetryReply } from './session-parts/conversation-control';
import { transcriptItems } from './session-history';
import { attachSessionMcp } from './session-parts/mcp-attachment';
import { messageDelivery, restoreOnce } from './session-parts/message-delivery';
import { MessageQueue, metaOf } from './session-parts/message-queue';
import { InFlight } from './session-parts/in-flight';
import { userMessage } from '../agent/messages';
import type { QueuedMessage } from '../agent/loop';
import { createChatAgent, contextWindowOf } from './session-parts/session-agent';
import { SessionIdentity } from './session-parts/session-identity';
import { SelectionEdits, type SelectionEditParams, type SelectionEditResult } from './session-parts/selection-edits';
import { SessionNamer } from './session-parts/session-namer';
import { openSessionWorkspace } from './session-parts/session-workspace';
import { ToolLines } from './session-parts/tool-lines';
import { addSessionTools } from './session-parts/tool-set';
import { UsageMeter } from './session-parts/usage-meter';
import { debugView } from './debug-view';
import { withPrefetched, type PrefetchedReply } from '../agent/prefetched';
import type { RulesSnapshot } from '../workspace/rules';

export interface SessionRuntime {
  session: ChatSession;
  /** Every stored session of this data folder (list, search, delete). */
  sessions: SessionRepository;
  /** Starts a turn or queues the message; context items are read and attached first. */
  /** `arrivedAt`: when the host received it (performance.now()); defaults to now. */
  send(text: string, context?: ContextItem[], arrivedAt?: number): Promise<{ id: number; status: string; position?: number }>;
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
  /** Summarizes the conversation now (the chat's /compact), between turns. */
  compact(): Promise<{ compacted: boolean }>;
  /** Which session the chat shows, its title and whether it holds messages. */
  info(): { session: string; title: string | null; cwd: string; messages: number; agent?: string };
  /** :CabooseUndo / :CabooseCheckpoints: the file changes of each user message, rewindable. */
  checkpoints: CheckpointApi;
  /** Regenerate and edit-and-resend (issue 22); absent in an external agent's chat. */
  conversation?: {
    retry(opts: { files: FilesChoice; force?: boolean; model?: string; beforeCut?: () => void }): Promise<RetryReply>;
    fork(p: { index: number; text: string; files: FilesChoice; force?: boolean; newId: string }): Promise<ForkReply>;
  };
  /** :CabooseDebug: the chat's last model request and response, secrets masked (absent for external agents). */
  debug?(): import('./debug-view').DebugView;
  /**
   * Runs `fn` (a request the server routed to this session) as this session's work: once disposed, the
   * session closes its store only after such work has settled.
   */
  hold<T>(fn: () => Promise<T> | T): Promise<T>;
  /**
   * Leaves the session (:CabooseNew, reopening another, deleting it): what it emits from now on is dropped,
   * its turn and what waits on the user stop at once; its store closes once its work in flight settled
   * (messages on their way, the stopped turn, held requests), or at once with `immediately` (host exit).
   */
  dispose(immediately?: boolean): Promise<void>;
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
  /**
   * The first message's model request, sent by the host's first-request path before this session existed
   * (first-request.ts): its reply is taken over by the first request whose body is the one sent, and the
   * project rules it was built with are this conversation's.
   */
  first?: { reply: PrefetchedReply; rules: RulesSnapshot | null };
}

/**
 * Builds one chat session from its parts (src/host/session-parts/, one job each): the workspace, the model,
 * what the chat sees (usage, tool lines, notices), the session's record and title, the tool set with MCP,
 * the agent, and the queue that brings the user's messages to it.
 */
export async function createSessionRuntime(o: RuntimeOptions): Promise<SessionRuntime> {
  const { config, session, ui, log, cwd } = o;
  const first = o.first;
  const chat = new ChatModel(
    config,
    o.provider,
    o.modelLabel ?? o.provider.model,
    first
      ? (client) =>
          withPrefetched(client, first.reply, (sent, wanted) => {
            // Not expected (the same inputs build the same body): the reply shown so far is not this session's.
            let at = 0;
            while (at < sent.length && sent[at] === wanted[at]) at++;
            log.error('first request: the session built a different request than the one sent early; sending its own (they differ at byte %d: sent …%s… wanted …%s…)', at, sent.slice(Math.max(0, at - 80), at + 80), wanted.slice(Math.max(0, at - 80), at + 80));
            if (process.env.CABOOSE_FIRST_DEBUG) require('node:fs').writeFileSync(process.env.CABOOSE_FIRST_DEBUG, `${sent}\n${wanted}\n`);
            notice('the reply shown so far came from a request that differed from this session\'s: asking again');
          })
      : undefined,
  );
  const ws = openSessionWorkspace({ config, cwd, dataDir: o.dataDir, sessionId: session.id, model: o.provider.model, ui, log });
  const sessions = ws.workspace.store.sessions;
  const closing = new AbortController();
  const usage = new UsageMeter(ui, {
    stored: o.resume ? sessions.get(session.id)?.usage : undefined,
    store: (prompt, completion) => sessions.addUsage(session.id, prompt, completion),
    log,
  });
  const todos = new TodoList();
  todos.onChange((items) => ui.emit(EVENTS.todos, { items }));
  // bash (and MCP servers that opt in) run inside the OS sandbox (issue 19).
  const sandbox = new Sandbox({ root: cwd, dataDir: o.dataDir, config: config.sandbox ?? null });
  // Its trial run (a child process) goes on while the session loads; the first request's tool
  // definitions (bash describes the sandbox) wait for it in prepareTools below, unless an earlier host's
  // answer is remembered in the data folder (then the trial confirms it after the request left).
  const sandboxReady = sandbox.prepare();
  const identity = new SessionIdentity({ ui, sessions, sessionId: session.id, cwd, model: o.provider.model });
  const recorder = new SessionRecorder(sessions, session.id, { cwd, model: o.provider.model, onTitle: identity.onTitle }, (e) =>
    log.error('session store: %s', e instanceof Error ? (e.stack ?? e.message) : String(e)),
  );
  const notice = (text: string): void => {
    recorder.chatLine('notice', text);
    ui.emit(EVENTS.notice, { text });
  };
  const progress = (id: string, summary: string): void => ui.emit(EVENTS.toolProgress, { id, summary });
  const toolLines = new ToolLines({ ui, sandbox, recordView: (id, view) => recorder.toolView(id, view), notice });
  // AGENTS.md and the like: fixed at the first message (a reopened session keeps the ones it started with).
  const stored = o.resume ? sessions.latest(session.id, 'rules')?.message : undefined;
  const firstRules = first?.rules;
  const rules = new ConversationRules({
    options: rulesOptions(config),
    cwd,
    ui,
    log,
    stored,
    record: (snap, lines) => recorder.rules(snap, lines),
    // The files as the first request read them, after the message arrived (what freeze() would see).
    ...(firstRules ? { load: () => Promise.resolve(firstRules) } : {}),
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
  const namer = new SessionNamer({ sessions, sessionId: session.id, client: () => chat.fresh(), onTitle: identity.onTitle, log, signal: closing.signal });
  const checkpoints = ws.workspace.checkpoints;
  // A remembered sandbox answer is confirmed by a trial once the first reply is arriving: the request goes
  // out first, and the trial runs while the reply streams (commands use the trial's answer only).
  const events = onFirstReply(chatEvents({
    session, ui, recorder, checkpoints, mcp: mcp.hooks, toolLines, notice,
    usage: (u) => usage.count(u, true),
    turnEnded: () => namer.nameAfterTurn(agent.messages),
  }), () => sandbox.recheck());
  const agent = createChatAgent({
    config, cwd, provider: o.provider, current: () => chat.provider, client: chat.client, registry, grants, projectRules,
    prepareTools: async (signal: AbortSignal) => {
      await sandboxReady;
      await mcp.hooks?.prepare(signal);
    },
    recorder, workspace: ws.workspace, session, events, log,
  });
  // What opening the workspace undid of a commit a crash interrupted (issue 18).
  const recoveredText = recoveryNotice(ws.workspace.recovered, ws.workspace.root);
  if (recoveredText) notice(recoveredText);
  session.bind(agent);
  session.notice = notice;
  const ensureRestored = restoreOnce(o.resume, { sessions, sessionId: session.id, agent, recorder });
  identity.announce(chat.label);
  usage.announceStored();
  rules.start();
  const messages = new MessageQueue(
    messageDelivery({
      agent, ensureRestored, rules, mcp, ask: session.askOutsideTurn, signal: closing.signal, checkpoints, ui,
      // A file the user attaches (#file:, #buffer, /file, @path) is read as the agent reads it; one that
      // usually holds secrets (secret_globs) asks first, as read_file does, in every mode.
      readFile: (p) => (secretTargets('read_file', { path: p }, ws.workspace).length > 0 ? agent.callAsUser('read_file', { path: p }) : ws.call('read_file', { path: p })),
      pathPolicy: (p) => attachVerdict(ws.workspace, p),
      fetchUrl: (url) => agent.callAsUser('fetch', { url }),
      maxQueue: config.max_queue ?? 3,
      images: { workspace: imagePolicy(ws.workspace), model: () => chat.provider },
      // A message still on its way when the session was left: kept in it, not started (see dispose).
      park: (text, meta, content) => void parked.push(content ? { text, meta, content } : { text, meta }),
    }),
  );
  const inFlight = new InFlight();
  /** Messages the session was given but never started (it was left first): stored once its turn has ended. */
  const parked: QueuedMessage[] = [];
  let disposed = false;
  /** Settles once the store is closed (dispose). */
  let closed: Promise<void> | null = null;
  const storeParked = (): void => {
    for (const m of parked) {
      const meta = metaOf(m);
      recorder.turnStart({ text: meta.display, ...(meta.labels.length > 0 ? { labels: meta.labels } : {}) });
      recorder.messageAdded(m.content ? { role: 'user', content: m.content } : userMessage(m.text));
    }
    if (parked.length > 0) {
      const n = parked.length;
      recorder.chatLine('notice', `${n === 1 ? 'this message was' : `these ${n} messages were`} not sent to the model: the chat left this session first`);
    }
    parked.length = 0;
  };
  const selectionEdits = new SelectionEdits(() => chat.fresh());
  const checkpointsApi = checkpointApi(ws.workspace, () => session.id, () => agent.state !== 'idle', notice);
  const control = {
    sessionId: session.id,
    sessions,
    agent,
    recorder,
    checkpoints: checkpointsApi,
    notes: { take: () => checkpoints.takeNotes(), add: (text: string) => checkpoints.addNote(text) },
    ensureRestored,
    nextId: () => messages.takeId(),
    showTranscript: () => {
      const items = transcriptItems(sessions.displayRows(session.id));
      ui.emit(EVENTS.transcript, { session: session.id, title: sessions.get(session.id)?.title ?? null, replaced: true, items_json: Buffer.from(JSON.stringify(items)) });
    },
  };
  return {
    session,
    sessions,
    selectionEdit: (p) => selectionEdits.run(p),
    cancelSelectionEdit: (id) => selectionEdits.cancel(id),
    send: (text, context = [], arrivedAt) => messages.send(text, context, arrivedAt),
    sent: () => messages.sent(),
    prepare: () => {
      // MCP servers start while the user types the first message (they report their own failures).
      void mcp.hooks?.prepare(new AbortController().signal);
      return agent.prepare();
    },
    model: () => chat.provider,
    setModel(p, label) {
      chat.set(p, label);
      agent.setContextWindow(contextWindowOf(p));
      identity.announce(chat.label);
    },
    async compact() {
      ensureRestored();
      return { compacted: await agent.compactNow() };
    },
    rename: (title) => identity.rename(title),
    info: () => identity.info(),
    listTrash: () => ws.workspace.trash.list(),
    restore: (trashId, targetPath) => ws.call('restore_file', { trashId, targetPath }),
    callTool: (name, args) => ws.call(name, args),
    checkpoints: checkpointsApi,
    conversation: {
      retry: (opts) => regenerate(control, opts),
      fork: (p) => forkAt(control, p),
    },
    debug: () => debugView(chat.client.lastExchange, chat.secrets),
    mcpClient: mcp.client,
    hold: (fn) => inFlight.hold(fn),
    dispose(immediately = false) {
      if (closed) return closed;
      disposed = true;
      // Nothing this session emits while it winds down reaches the chat that replaces it.
      ui.close();
      selectionEdits.dispose();
      closing.abort();
      mcp.hooks?.detach();
      // Queued messages stay with this session (stored after the stopped turn), not dropped.
      parked.push(...agent.stop());
      session.close();
      const close = (): void => {
        storeParked();
        recorder.dispose();
        void sandbox.dispose();
        ws.close();
      };
      if (immediately) {
        close();
        return (closed = Promise.resolve());
      }
      // The store closes after the work still in flight: messages on their way (parked, see above), the
      // stopped turn unwinding (its cut reply is recorded), a title request, requests the server routed here.
      closed = inFlight
        .settled(async () => {
          await messages.sent();
          await agent.idle();
          // A title asked for when the stopped turn ended.
          await namer.settled();
        })
        .then(close)
        .catch((err: unknown) => log.error('closing session %s: %s', session.id, err instanceof Error ? (err.stack ?? err.message) : String(err)));
      return closed;
    },
  };
}

/** The agent's events, with `first` run once, when the first reply starts arriving or the turn ends without one. */
function onFirstReply(events: AgentEvents, first: () => void): AgentEvents {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    first();
  };
  const wrap = <K extends 'text' | 'reasoning' | 'toolCall' | 'assistantEnd' | 'error' | 'turnEnd'>(k: K): AgentEvents[K] => {
    const h = events[k] as ((...a: unknown[]) => void) | undefined;
    return ((...a: unknown[]) => {
      // The chat gets the event first (the first token is not held back by the trial's spawn).
      try {
        h?.(...a);
      } finally {
        once();
      }
    }) as AgentEvents[K];
  };
  return { ...events, text: wrap('text'), reasoning: wrap('reasoning'), toolCall: wrap('toolCall'), assistantEnd: wrap('assistantEnd'), error: wrap('error'), turnEnd: wrap('turnEnd') };
}
