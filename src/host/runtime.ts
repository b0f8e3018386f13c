import * as path from 'node:path';
import { Agent } from '../agent/loop';
import { createSubagentTool } from '../agent/subagent';
import { isOffered } from '../tools/offered';
import { createExecTools } from '../tools/exec-tools';
import { TodoList } from '../tools/todo-list';
import { openWorkspace } from '../index';
import type { ResolvedProvider } from './provider-config';
import type { HostConfig } from './protocol';
import { EVENTS } from './protocol';
import type { ChatSession } from './session';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';
import { describeToolResult, summarizeToolCall } from './summaries';
import { composeMessage, type ContextItem } from './message-context';
import { NvimBufferBridge } from './nvim-buffers';
import { createModelClient } from '../agent/provider';
import { requestSelectionEdit } from '../agent/selection-edit';
import { computeHunks, type ReviewHunk } from '../workspace/review';

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
  dispose(): void;
}

export interface RuntimeOptions {
  config: HostConfig;
  cwd: string;
  dataDir: string;
  provider: ResolvedProvider;
  session: ChatSession;
  ui: LuaUi;
  log: Logger;
}

/** Builds the workspace, the tool set and the agent for one chat session. */
export async function createSessionRuntime(o: RuntimeOptions): Promise<SessionRuntime> {
  const { config, session, ui, log } = o;
  const ws = openWorkspace({
    root: o.cwd,
    dataDir: path.resolve(o.dataDir),
    sessionId: session.id,
    denyGlobs: config.deny_globs,
    trashRetentionDays: config.trash_retention_days,
    // The file tools see and edit live buffers (issue 4).
    bridge: new NvimBufferBridge(ui),
    unsavedBuffers: config.unsaved_buffers,
  });
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
  const usage = { prompt: 0, completion: 0 };
  const metaOf = (m: { text: string; meta?: unknown }): MessageMeta => (m.meta as MessageMeta | undefined) ?? { id: 0, display: m.text, labels: [] };
  todos.onChange((items) => ui.emit(EVENTS.todos, { items }));
  // The file tools' registry audits refused write attempts; the other tools join it.
  const registry = ws.registry;
  for (const def of createExecTools({
    todos,
    webSearch: config.web_search ? { searxngUrl: config.web_search.searxng_url } : null,
    bashTimeoutMs: config.bash_timeout_ms,
    hideEnvValues: o.provider.apiKey ? [o.provider.apiKey] : [],
  })) {
    registry.add(def);
  }
  registry.add(createSubagentTool({ name: 'explore', provider: o.provider, registry, log }));
  registry.add(createSubagentTool({ name: 'agent', provider: o.provider, registry, log }));
  const agent = new Agent({
    provider: o.provider,
    registry,
    mode: config.mode ?? 'create',
    stepLimit: config.step_limit ?? 50,
    maxQueue,
    cwd: o.cwd,
    systemPrompt: config.system_prompt ?? undefined,
    toolFilter: isOffered,
    contextWindow: o.provider.contextWindow,
    makeContext: (signal) => ({
      signal,
      workspace: ws.workspace,
      sessionId: session.id,
      ask: session.ask,
      log: (level, msg, meta) => log[level]('%s %j', msg, meta ?? {}),
    }),
    requestApproval: session.requestApproval,
    events: {
      state: (state, previous) => session.emitState(state, previous),
      assistantStart: () => ui.emit(EVENTS.assistantStart, {}),
      text: (delta) => ui.emit(EVENTS.assistantDelta, { text: delta }),
      assistantEnd: (info) => ui.emit(EVENTS.assistantEnd, { interrupted: info.interrupted }),
      turnStart: (m) => {
        const meta = metaOf(m);
        ui.emit(EVENTS.userMessage, { id: meta.id, text: meta.display, context: meta.labels });
      },
      queueDiscarded: (ms) => ui.emit(EVENTS.queueDiscarded, { messages: ms.map((m) => ({ id: metaOf(m).id, text: metaOf(m).display })) }),
      retry: (r) => ui.emit(EVENTS.retry, { attempt: r.attempt, delay_ms: r.delayMs, message: r.message }),
      usage: (u) => {
        usage.prompt += u.promptTokens;
        usage.completion += u.completionTokens;
        ui.emit(EVENTS.usage, { prompt: u.promptTokens, completion: u.completionTokens, session_prompt: usage.prompt, session_completion: usage.completion });
      },
      toolCall: (c) => {
        callArgs.set(c.id, c.args);
        ui.emit(EVENTS.toolCall, { id: c.id, name: c.name, summary: summarizeToolCall(c.name, c.args) });
      },
      toolResult: (r) => {
        const view = describeToolResult(r.name, callArgs.get(r.id), r.result);
        callArgs.delete(r.id);
        ui.emit(EVENTS.toolResult, { id: r.id, name: r.name, ok: r.result.ok, status: view.status, summary: view.summary, details: view.details });
        // A shell command may have changed files behind Neovim's back: clean buffers re-read them.
        if (r.name === 'bash') ui.emit(EVENTS.diskChanged, {});
      },
      error: (e) => ui.emit(EVENTS.error, { kind: e.kind, message: e.message }),
      notice: (text) => ui.emit(EVENTS.notice, { text }),
      approvalCancelled: (req) => session.cancelApproval(req.id),
      compacted: (c) => {
        ws.workspace.store.archive.add(session.id, c.summary, c.removed);
      },
    },
    log: {
      debug: (m: string, ...a: unknown[]) => log.debug(m, ...a),
      info: (m: string, ...a: unknown[]) => log.info(m, ...a),
      warn: (m: string, ...a: unknown[]) => log.warn(m, ...a),
      error: (m: string, ...a: unknown[]) => log.error(m, ...a),
    },
  });
  session.bind(agent);
  ui.emit(EVENTS.sessionInfo, { session: session.id, model: o.provider.model, cwd: o.cwd });
  const sendNow = async (text: string, context: ContextItem[]) => {
    const id = ++messageCount;
    const composed = await composeMessage(text, context, (p) => ws.call('read_file', { path: p }));
    const r = agent.send(composed.text, { id, display: text, labels: composed.labels } satisfies MessageMeta);
    if (r.status === 'queued') ui.emit(EVENTS.queued, { id, text, context: composed.labels, position: r.position });
    if (r.status === 'rejected') {
      ui.emit(EVENTS.error, {
        kind: 'queue_full',
        message: `The agent is busy and ${maxQueue} message${maxQueue === 1 ? ' is' : 's are'} already queued; wait or :CabooseStop.`,
      });
    }
    return { id, ...r };
  };
  const selectionEdits = new Map<number, AbortController>();
  return {
    session,
    async selectionEdit(p) {
      const ac = new AbortController();
      selectionEdits.set(p.id, ac);
      try {
        const replacement = await requestSelectionEdit(
          createModelClient(o.provider),
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
    prepare: () => agent.prepare(),
    listTrash: () => ws.workspace.trash.list(),
    restore: (trashId, targetPath) => ws.call('restore_file', { trashId, targetPath }),
    callTool: (name, args) => ws.call(name, args),
    dispose() {
      for (const ac of selectionEdits.values()) ac.abort();
      session.stop();
      ws.close();
    },
  };
}
