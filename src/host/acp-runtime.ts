/**
 * A chat whose agent is an external ACP agent (src/acp): the same workspace (buffers, trash, checkpoints,
 * audit), session store, approvals and chat events as the built-in agent's runtime, with the turns run by
 * the agent's process.
 */
import { randomUUID } from 'node:crypto';
import { AcpAgent } from '../acp/agent';
import type { AcpAgentConfig } from '../acp/config';
import { createExecTools } from '../tools/exec-tools';
import { TodoList } from '../tools/todo-list';
import { attachVerdict, secretReason, secretTargets } from '../tools/secret-targets';
import type { ToolResult } from '../tools/tool';
import { openSessionWorkspace } from './session-parts/session-workspace';
import { Sandbox } from '../workspace/sandbox/sandbox';
import type { HostConfig } from './protocol';
import { EVENTS } from './protocol';
import type { ChatSession } from './session';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';
import { composeMessage, type ContextItem } from './message-context';
import { SessionRecorder } from './session-recorder';
import { InFlight } from './session-parts/in-flight';
import { checkpointApi } from './checkpoints';
import type { SessionRuntime } from './runtime';

/** The session store's `model` column of an ACP chat: `acp:<agent> <its session id>`. */
export const ACP_MODEL_PREFIX = 'acp:';

export function acpModelTag(agent: string, acpSessionId: string | null): string {
  return `${ACP_MODEL_PREFIX}${agent}${acpSessionId ? ` ${acpSessionId}` : ''}`;
}

export function parseAcpModelTag(model: string | null | undefined): { agent: string; acpSessionId: string | null } | null {
  if (!model?.startsWith(ACP_MODEL_PREFIX)) return null;
  const [agent, id] = model.slice(ACP_MODEL_PREFIX.length).split(' ');
  return agent ? { agent, acpSessionId: id ?? null } : null;
}

export interface AcpRuntimeOptions {
  config: HostConfig;
  cwd: string;
  dataDir: string;
  session: ChatSession;
  ui: LuaUi;
  log: Logger;
  agentName: string;
  agent: AcpAgentConfig;
  /** Reopen this stored session: the agent's own session is loaded when it supports session/load. */
  resume?: boolean;
  clientVersion: string;
}

export async function createAcpRuntime(o: AcpRuntimeOptions): Promise<SessionRuntime> {
  const { config, session, ui, log } = o;
  const ws = openSessionWorkspace({ config, cwd: o.cwd, dataDir: o.dataDir, sessionId: session.id, model: o.agentName, ui, log, externalAgent: true });
  // Terminals run through our bash tool (output capped, audited, killed on stop), in the sandbox as ours do.
  const sandbox = new Sandbox({ root: o.cwd, dataDir: o.dataDir, config: config.sandbox ?? null });
  // Its trial runs as a child process now; a terminal waits for its answer (never the synchronous trial).
  const call = sandboxReadyCall(sandbox, ws.call.bind(ws));
  for (const def of createExecTools({ todos: new TodoList(), webSearch: null, bashTimeoutMs: config.bash_timeout_ms, hideEnvValues: [], sandbox })) {
    if (def.name === 'bash') ws.registry.add(def);
  }
  const sessions = ws.workspace.store.sessions;
  const stored = o.resume ? parseAcpModelTag(sessions.get(session.id)?.model) : null;
  const resumeId = stored?.agent === o.agentName ? stored.acpSessionId : null;
  const label = `${o.agentName} · ACP`;
  const onTitle = (title: string): void => ui.emit(EVENTS.sessionInfo, { session: session.id, title });
  let tag = acpModelTag(o.agentName, resumeId);
  const recorder = new SessionRecorder(sessions, session.id, { cwd: o.cwd, model: tag, onTitle }, (e) =>
    log.error('session store: %s', e instanceof Error ? (e.stack ?? e.message) : String(e)),
  );
  ws.workspace.checkpoints.noteStore = {
    add: (text) => {
      sessions.ensure({ id: session.id, cwd: o.cwd, model: tag });
      sessions.append(session.id, { kind: 'note', display: { text }, text: '', inContext: false });
    },
    take: () => sessions.takeNotes(session.id),
  };
  function notice(text: string): void {
    recorder.chatLine('notice', text);
    ui.emit(EVENTS.notice, { text });
  }
  const usage = { used: 0, size: 0 };
  // The reply's text since its last tool line: stored as one assistant message before that line.
  let pendingText = '';
  const toolTitles = new Map<string, string>();
  const storeToolLine = (r: { id: string; status: string; summary: string; details: string[] }): void => {
    try {
      if (pendingText !== '') recorder.messageAdded({ role: 'assistant', content: pendingText });
      pendingText = '';
      const title = toolTitles.get(r.id) ?? r.id;
      toolTitles.delete(r.id);
      // Shown when the chat is reopened; kept out of a model's context (these are the agent's own tools).
      sessions.append(session.id, { kind: 'message', role: 'assistant', message: null, display: { text: '', calls: [{ id: r.id, text: title }] }, text: title, inContext: false });
      const details = r.details.slice(0, 40);
      sessions.append(session.id, { kind: 'message', role: 'tool', message: null, display: { id: r.id, status: r.status, summary: r.summary, ...(details.length ? { details } : {}) }, text: '', inContext: false });
    } catch (e) {
      log.error('session store: %s', e instanceof Error ? (e.stack ?? e.message) : String(e));
    }
  };
  let messageCount = 0;
  let sending: Promise<unknown> = Promise.resolve();
  const inFlight = new InFlight();
  let disposed = false;
  /** Settles once the store is closed (dispose). */
  let closed: Promise<void> | null = null;
  const maxQueue = config.max_queue ?? 3;
  const agent = new AcpAgent(o.agentName, o.agent, {
    cwd: o.cwd,
    workspace: ws.workspace,
    sessionId: session.id,
    call,
    requestApproval: session.requestApproval,
    cancelApproval: (id) => session.cancelApproval(id),
    log,
    mode: config.mode ?? 'create',
    grants: new Set<string>(),
    maxQueue,
    clientVersion: o.clientVersion,
    resume: resumeId,
    events: {
      state: (s, prev) => session.emitState(s, prev),
      turnStart: (m) => {
        pendingText = '';
        ws.workspace.checkpoints.begin({ sessionId: session.id, messageId: m.id, text: m.text });
        recorder.turnStart({ text: m.text });
        recorder.messageAdded({ role: 'user', content: m.text });
        sessions.setModel(session.id, tag);
        ui.emit(EVENTS.userMessage, { id: m.id, text: m.text, context: [] });
        ui.emit(EVENTS.assistantStart, {});
      },
      text: (delta) => {
        pendingText += delta;
        recorder.text(delta);
        ui.emit(EVENTS.assistantDelta, { text: delta });
      },
      toolCall: (c) => {
        toolTitles.set(c.id, c.summary);
        ui.emit(EVENTS.toolCall, c);
      },
      toolProgress: (p) => ui.emit(EVENTS.toolProgress, p),
      toolResult: (r) => {
        if (r.name !== 'thinking') storeToolLine(r);
        else toolTitles.delete(r.id);
        ui.emit(EVENTS.toolResult, r);
      },
      todos: (items) => ui.emit(EVENTS.todos, { items }),
      usage: (u) => {
        Object.assign(usage, u);
        ui.emit(EVENTS.usage, { prompt: u.used, completion: 0, session_prompt: u.used, session_completion: 0 });
      },
      turnEnd: (info) => {
        ws.workspace.checkpoints.end();
        if (pendingText !== '') recorder.messageAdded({ role: 'assistant', content: pendingText });
        pendingText = '';
        recorder.flush();
        ui.emit(EVENTS.assistantEnd, { interrupted: info.stopReason === 'cancelled' });
      },
      notice,
      error: (message) => {
        recorder.chatLine('error', message);
        ui.emit(EVENTS.error, { kind: 'agent', message });
      },
      diskChanged: () => ui.emit(EVENTS.diskChanged, {}),
      sessionStarted: (acpSessionId) => {
        tag = acpModelTag(o.agentName, acpSessionId);
        if (sessions.get(session.id)) sessions.setModel(session.id, tag);
      },
    },
  });
  session.bind(agent);
  ui.emit(EVENTS.sessionInfo, { session: session.id, model: label, agent: o.agentName, cwd: o.cwd, title: sessions.get(session.id)?.title ?? null });
  // A file the user attaches that usually holds secrets (secret_globs) asks first, as the agent's reads do.
  const pathPolicy = (p: string) => attachVerdict(ws.workspace, p);
  const readForUser = async (p: string): Promise<ToolResult> => {
    const rels = secretTargets('read_file', { path: p }, ws.workspace);
    if (rels.length > 0) {
      const id = randomUUID();
      const d = await session.requestApproval({ id, toolCallId: id, tool: 'read_file', args: { path: rels[0] }, reason: secretReason('read_file', rels) });
      if (d.decision === 'reject') return { ok: false, error: { kind: 'rejected_by_user', message: `The user did not allow attaching ${rels.join(', ')}, a file that usually holds secrets.` } };
    }
    return ws.call('read_file', { path: p });
  };
  const sendNow = async (text: string, context: ContextItem[]) => {
    const id = ++messageCount;
    const composed = await composeMessage(text, context, readForUser, undefined, pathPolicy);
    if (disposed) {
      // The chat left this session while the message's context was read: kept with it, not started.
      recorder.turnStart({ text });
      recorder.messageAdded({ role: 'user', content: composed.text });
      recorder.chatLine('notice', 'this message was not sent to the agent: the chat left this session first');
      return { id, status: 'stopped' };
    }
    const r = agent.send(text, composed.text, id);
    if (r.status === 'queued') ui.emit(EVENTS.queued, { id, text, context: composed.labels, position: r.position });
    if (r.status === 'rejected') {
      ui.emit(EVENTS.error, { kind: 'queue_full', message: `The agent is busy and ${maxQueue} message${maxQueue === 1 ? ' is' : 's are'} already queued; wait or :CabooseStop.` });
    }
    return { id, ...r };
  };
  return {
    session,
    sessions,
    model: () => null,
    setModel() {
      throw new Error(`this chat runs the ACP agent ${o.agentName}, which chooses its own model (:CabooseAgent caboose goes back to the built-in agent)`);
    },
    send(text, context = []) {
      const next = sending.then(() => sendNow(text, context));
      sending = next.catch(() => undefined);
      return next;
    },
    sent: () => sending,
    prepare: () =>
      agent.start().catch((e: unknown) => {
        // Reported now (the chat says why); the first message tries again.
        const message = e instanceof Error ? e.message : String(e);
        ui.emit(EVENTS.error, { kind: 'agent', message });
      }),
    listTrash: () => ws.workspace.trash.list(),
    restore: (trashId, targetPath) => ws.call('restore_file', { trashId, targetPath }),
    callTool: (name, args) => ws.call(name, args),
    selectionEdit: () => Promise.reject(new Error(`:CabooseEdit uses the built-in agent; this chat runs ${o.agentName} (:CabooseAgent caboose switches back)`)),
    cancelSelectionEdit: () => false,
    compact: () => Promise.reject(new Error(`/compact summarizes the built-in agent's conversation; this chat runs ${o.agentName}`)),
    rename(title) {
      const t = title.replace(/\s+/g, ' ').trim().slice(0, 120);
      if (t === '') throw new Error('a session title cannot be empty');
      sessions.ensure({ id: session.id, cwd: o.cwd, model: tag });
      sessions.rename(session.id, t, 'user');
      onTitle(t);
      return { title: t };
    },
    info() {
      const s = sessions.get(session.id);
      return { session: session.id, title: s?.title ?? null, cwd: o.cwd, messages: s?.messageCount ?? 0, agent: o.agentName };
    },
    checkpoints: checkpointApi(ws.workspace, () => session.id, () => agent.state !== 'idle', notice),
    hold: (fn) => inFlight.hold(fn),
    dispose(immediately = false) {
      if (closed) return closed;
      disposed = true;
      ui.close();
      session.close();
      agent.dispose();
      const close = (): void => {
        recorder.dispose();
        ws.close();
      };
      if (immediately) {
        close();
        return (closed = Promise.resolve());
      }
      // The store closes after the messages on their way and the requests routed here (see runtime.ts).
      closed = inFlight
        .settled(() => sending)
        .then(close)
        .catch((err: unknown) => log.error('closing session %s: %s', session.id, err instanceof Error ? err.message : String(err)));
      return closed;
    },
    acp: agent,
  };
}

/**
 * `call` with the sandbox made ready first (Sandbox.ready: the trial as a child process) for the commands an
 * ACP agent's terminals run: the bash tool asks the sandbox how the command runs (its approval says), which
 * before the trial's answer would run the trial synchronously and block the host.
 */
export function sandboxReadyCall<A extends unknown[], R>(sandbox: Pick<Sandbox, 'ready'>, call: (name: string, ...rest: A) => Promise<R>): (name: string, ...rest: A) => Promise<R> {
  const ready = sandbox.ready();
  return async (name, ...rest) => {
    if (name === 'bash') await ready;
    return call(name, ...rest);
  };
}
