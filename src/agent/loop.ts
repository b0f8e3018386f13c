/**
 * The agent loop: an explicit state machine around the model client and the tool registry.
 *
 *   idle → streaming → executing_tools ⇄ pending_approval → streaming → … → idle
 *
 * One user message = one turn: stream the model's reply; if it asked for tools, run them (gated by the
 * permission mode and the user's approvals) and stream again with the results; stop when the model answers
 * without a tool call, after `stepLimit` model calls, on a provider error, or on `stop()`.
 *
 * Never imports the Neovim client: the host passes `requestApproval`, `makeContext` and `events`.
 * Never throws at its callers: failures become `error` events and tool results the model can act on.
 */
import { randomUUID } from 'node:crypto';
import type { ToolRegistry } from '../tools/registry';
import type { ApprovalPreview, ToolContext, ToolDefinition, ToolPolicy, ToolResult } from '../tools/tool';
import type { ReviewSelection } from '../workspace/review';
import type { Confinement } from '../workspace/sandbox/sandbox';
import { ToolError, type ToolErrorInfo } from '../workspace/errors';
import { OpenAIProvider, ProviderError, type AssembledToolCall, type ChatMessage, type ModelClient, type ProviderConfig, type Usage } from './provider';
import { DEFAULT_MODE, blockedByModeMessage, permissionFor, type PermissionMode } from '../tools/permissions';
import { secretReason, secretTargets } from '../tools/secret-targets';
import { redactDeep } from '../store/redact';
import { assistantMessage, interruptedAssistantMessage, parseToolArguments, toolMessage, userMessage } from './messages';
import { audioFormat, mediaOf } from '../tools/media';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import { defaultSystemPrompt } from './prompt';
import { compactedHistory, DEFAULT_COMPACT_AT, DEFAULT_CONTEXT_WINDOW, estimateTokens, fitForSummary, fitToolOutputs, needsCompaction, pruneToolOutputs, splitForCompaction, SUMMARIZE_INSTRUCTION, SUMMARY_INPUT_SHARE, type StoredRef } from './context';

export type { PermissionMode } from '../tools/permissions';

export type AgentState = 'idle' | 'streaming' | 'executing_tools' | 'pending_approval';

export interface ApprovalRequest {
  /** Unique per request (not the tool call id). */
  id: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  preview?: ApprovalPreview;
  /** Who asks, when it is not the main agent (a subagent: "agent #2: fix the parser"). */
  label?: string;
  /** Why the user is asked although the mode would not ask (a file that usually holds secrets). */
  reason?: string;
  /** What decides whether the call asks in a mode (a mode change answers a request its new mode would not ask). */
  policy?: ToolPolicy;
  allowed?: { readOnly: boolean };
  confinement?: Confinement;
}

/** `review`: with 'once'/'always', the hunks the user rejected in a file change (the rest are written). */
export type ApprovalDecision = { decision: 'once' | 'always' | 'reject'; reason?: string; review?: ReviewSelection };

export interface AgentEvents {
  state?(state: AgentState, previous: AgentState): void;
  assistantStart?(): void;
  text?(delta: string): void;
  /** The model's reasoning as it streams (never part of the reply). */
  reasoning?(delta: string): void;
  assistantEnd?(info: { interrupted: boolean }): void;
  toolCall?(call: { id: string; name: string; args: unknown }): void;
  toolResult?(r: { id: string; name: string; result: ToolResult }): void;
  /** User-facing errors (provider errors, step limit, internal failures). */
  error?(e: { kind: string; message: string }): void;
  notice?(text: string): void;
  /** A pending approval was withdrawn (stop()); the host should close its prompt. */
  approvalCancelled?(req: { id: string }): void;
  usage?(usage: Usage): void;
  /** The conversation was compacted: `removed` messages were replaced by `added` (the summary pair). */
  compacted?(c: { removed: ChatMessage[]; summary: string; added: ChatMessage[]; archivedAs?: number }): void;
  /** A message joined the conversation (user, assistant, interrupted reply, tool result), in order. */
  messageAdded?(m: ChatMessage): void;
  /** A turn begins: the user's message (a queued one when its turn comes). */
  turnStart?(message: QueuedMessage): void;
  turnEnd?(): void;
  /** stop() dropped these queued messages. */
  queueDiscarded?(messages: QueuedMessage[]): void;
  /** The model request failed and is retried after `delayMs`. */
  retry?(info: { attempt: number; delayMs: number; message: string }): void;
}

/** Structurally compatible with the host's Logger. */
export interface AgentLogger {
  debug(msg: string, ...args: unknown[]): void;
  info(msg: string, ...args: unknown[]): void;
  warn(msg: string, ...args: unknown[]): void;
  error(msg: string, ...args: unknown[]): void;
}

export interface AgentOptions {
  provider: ProviderConfig | ModelClient;
  registry: ToolRegistry;
  makeContext: (signal: AbortSignal) => ToolContext;
  mode?: PermissionMode;
  /** Read at each tool call instead of `mode`: a subagent follows its parent's mode when the user changes it mid-run. */
  followMode?: () => PermissionMode;
  /** Model calls per user message. Default 50. */
  stepLimit?: number;
  /** Messages waiting while busy. Default 3. */
  maxQueue?: number;
  /** Replaces the default system prompt. */
  systemPrompt?: string;
  /** The workspace root, named in the default system prompt. */
  cwd?: string;
  /**
   * The project's instruction files as a system-prompt section (see projectRulesSection), appended to the
   * system prompt, the configured one included. Must stay the same for a conversation (prompt caching).
   */
  projectRules?: () => string | undefined;
  requestApproval: (req: ApprovalRequest) => Promise<ApprovalDecision>;
  events?: AgentEvents;
  log?: AgentLogger;
  /** Tokens the model accepts; with it, the conversation is compacted (summarized) near the limit. */
  contextWindow?: number;
  /** Share of contextWindow that triggers compaction. Default 0.8. */
  compactAt?: number;
  /** Asked once, when the conversation first nears `contextWindow`: the model's real window, if known. */
  contextWindowLookup?: () => Promise<number | undefined>;
  /** Where old tool outputs are stored: pruned ones become stubs naming that id (see `recall`). */
  storedRef?: StoredRef;
  /** Stores the messages compaction removes; the id returned is named in the summary (for `recall`). */
  archive?: (removed: ChatMessage[], summary: string) => number | undefined;
  /** Which registry tools are offered to the model (a hidden tool still answers when called by name). Default: all. */
  toolFilter?: (def: ToolDefinition) => boolean;
  /** Media the model accepts: images and audio tools returned reach it as a user message after the results. */
  acceptsMedia?: readonly ('image' | 'audio')[];
  /** Tools approved with "always"; pass one set to share the grants with subagents. Default: a set of its own. */
  grants?: Set<string>;
  /** Awaited before each model request: tools that come and go (MCP servers) get ready. Must not throw. */
  prepareTools?: (signal: AbortSignal) => Promise<void>;
}

/** A user message; `meta` is the caller's (e.g. what the chat shows of it), handed back in turnStart. */
export interface QueuedMessage {
  text: string;
  meta?: unknown;
}

export type SendResult = { status: 'started' } | { status: 'queued'; position: number } | { status: 'rejected'; reason: string };

export const DEFAULT_STEP_LIMIT = 50;
export const DEFAULT_MAX_QUEUE = 3;

/** One tool call of the current reply, as the loop tracks it. */
interface PendingCall {
  call: AssembledToolCall;
  args: unknown;
  parseError?: string;
  def?: ToolDefinition;
}

export class Agent {
  private readonly model: ModelClient;
  private readonly registry: ToolRegistry;
  private readonly opts: AgentOptions;
  private readonly history: ChatMessage[] = [];
  private readonly queue: QueuedMessage[] = [];
  /** Queued messages a stop() dropped while a turn ran: reported once that turn has ended. */
  private readonly discardedOnStop: QueuedMessage[] = [];
  private readonly alwaysAllowed: Set<string>;
  /** Secret files (secret_globs) the user allowed for this session with "always". */
  private readonly approvedSecrets = new Set<string>();
  private readonly idleWaiters: (() => void)[] = [];
  private currentMode: PermissionMode;
  private currentState: AgentState = 'idle';
  private running = false;
  private abort: AbortController | null = null;
  private lastUsage: Usage | undefined;
  private contextWindow: number | undefined;
  private windowLookedUp = false;
  private warnedSmallWindow = false;
  /**
   * Tool messages moved out of the prompt (stub) or cut (cap) because the turn's outputs did not fit the
   * context window; the same replacement is sent at every later step (a stable prompt).
   */
  private readonly fitted = new WeakMap<ChatMessage, ChatMessage>();

  constructor(opts: AgentOptions) {
    this.opts = opts;
    this.model = isModelClient(opts.provider) ? opts.provider : new OpenAIProvider(opts.provider);
    this.registry = opts.registry;
    this.currentMode = opts.mode ?? DEFAULT_MODE;
    this.contextWindow = opts.contextWindow;
    this.alwaysAllowed = opts.grants ?? new Set<string>();
  }

  /* ---------------------------------------------------------------------------------------------
   * Public API
   * ------------------------------------------------------------------------------------------- */

  get mode(): PermissionMode {
    return this.opts.followMode?.() ?? this.currentMode;
  }

  get state(): AgentState {
    return this.currentState;
  }

  /** The conversation in OpenAI format, without the system prompt (a copy). */
  get messages(): ChatMessage[] {
    return this.history.slice();
  }

  /** Messages waiting to be processed (a copy). */
  get queued(): string[] {
    return this.queue.map((m) => m.text);
  }

  /** Token usage reported with the last model reply. */
  get usage(): Usage | undefined {
    return this.lastUsage;
  }

  /** Tool names approved with "always" in this session. */
  get alwaysAllowedTools(): string[] {
    return [...this.alwaysAllowed];
  }

  /** Loads what the first model request needs, so the first reply does not wait for it. */
  async prepare(): Promise<void> {
    await this.model.prepare?.();
  }

  /**
   * Withdraws standing "always" grants: one tool's, or all of them without `tool`. Returns the tools
   * revoked (empty when `tool` had no grant). Their next call asks again.
   */
  revoke(tool?: string): string[] {
    const revoked = tool === undefined ? [...this.alwaysAllowed] : this.alwaysAllowed.has(tool) ? [tool] : [];
    for (const t of revoked) this.alwaysAllowed.delete(t);
    return revoked;
  }

  setMode(mode: PermissionMode): void {
    this.currentMode = mode;
  }

  /** Tokens the model accepts (learned after start-up, e.g. from the server's model list). */
  setContextWindow(tokens: number | undefined): void {
    this.contextWindow = tokens;
  }

  get contextWindowTokens(): number | undefined {
    return this.contextWindow;
  }

  /** Replace the conversation (e.g. a resumed session). Only while idle. */
  loadMessages(messages: ChatMessage[]): void {
    if (this.running) throw new Error('cannot load messages while the agent is busy');
    this.history.splice(0, this.history.length, ...messages);
  }

  /** Starts a turn, or queues the message while busy (up to `maxQueue`, processed in order). */
  send(text: string, meta?: unknown): SendResult {
    if (!this.running) {
      this.running = true;
      void this.runLoop({ text, meta });
      return { status: 'started' };
    }
    const max = this.opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    if (this.queue.length >= max) {
      return { status: 'rejected', reason: `the agent is busy and ${max} messages are already queued` };
    }
    this.queue.push({ text, meta });
    return { status: 'queued', position: this.queue.length };
  }

  /**
   * A tool the user runs from a message (the chat's /fetch): the mode, the approval and the tool's own
   * rules apply as to a call of the model's. Between turns it has the agent to itself (stop() cancels it).
   */
  async callAsUser(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    const controller = new AbortController();
    const busy = this.running;
    if (!busy) {
      this.running = true;
      this.abort = controller;
    }
    const call: AssembledToolCall = { id: `user-${randomUUID()}`, name, arguments: JSON.stringify(args) };
    try {
      return await this.gateAndRun({ call, args, def: this.registry.get(name) }, controller.signal);
    } finally {
      if (!busy) {
        this.abort = null;
        this.setState('idle');
        const next = this.queue.shift();
        if (next) void this.runLoop(next);
        else {
          this.running = false;
          for (const w of this.idleWaiters.splice(0)) w();
        }
      }
    }
  }

  /**
   * Summarizes the turns before the last one now (the chat's /compact), between turns: messages sent
   * meanwhile wait in the queue and start after it. False when there is nothing to summarize.
   */
  async compactNow(): Promise<boolean> {
    if (this.running) throw new Error('the agent is busy: /compact works between turns');
    this.running = true;
    const controller = new AbortController();
    this.abort = controller;
    try {
      return await this.maybeCompact(controller.signal, true, undefined, true);
    } finally {
      this.abort = null;
      const next = this.queue.shift();
      if (next) void this.runLoop(next);
      else {
        this.running = false;
        for (const w of this.idleWaiters.splice(0)) w();
      }
    }
  }

  /**
   * Aborts the stream and running tools, withdraws a pending approval (as a rejection) and clears the
   * queue. Text already received stays in the history, marked interrupted. The state returns to idle as
   * soon as the turn unwinds (await `idle()`).
   */
  stop(): QueuedMessage[] {
    const discarded = this.queue.splice(0);
    // Reported after the stopped turn has ended (the chat reads in order: the cut reply, then the drop).
    if (this.running) this.discardedOnStop.push(...discarded);
    else if (discarded.length > 0) this.emit('queueDiscarded', discarded);
    this.abort?.abort();
    return discarded;
  }

  /** Resolves when idle with an empty queue. */
  idle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /* ---------------------------------------------------------------------------------------------
   * Turn processing
   * ------------------------------------------------------------------------------------------- */

  private async runLoop(first: QueuedMessage): Promise<void> {
    let next: QueuedMessage | undefined = first;
    while (next !== undefined) {
      try {
        this.emit('turnStart', next);
        await this.runTurn(next.text);
      } catch (err) {
        // A bug in the loop or an event handler: report it, keep the agent usable.
        const message = err instanceof Error ? err.message : String(err);
        this.opts.log?.error('agent turn failed: %s', err instanceof Error ? (err.stack ?? message) : message);
        this.emit('error', { kind: 'internal', message: `internal error: ${message}` });
      }
      this.abort = null;
      this.setState('idle');
      this.emit('turnEnd');
      const dropped = this.discardedOnStop.splice(0);
      if (dropped.length > 0) this.emit('queueDiscarded', dropped);
      next = this.queue.shift();
    }
    this.running = false;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private async runTurn(text: string): Promise<void> {
    const controller = new AbortController();
    this.abort = controller;
    const signal = controller.signal;
    this.push(userMessage(text));
    const stepLimit = this.opts.stepLimit ?? DEFAULT_STEP_LIMIT;

    for (let step = 1; ; step++) {
      if (step > stepLimit) {
        this.emit('error', {
          kind: 'step_limit',
          message: `stopped after ${stepLimit} steps without a final answer; send a message to let the agent continue`,
        });
        return;
      }
      const calls = await this.streamStep(signal);
      if (calls === null || calls.length === 0 || signal.aborted) return;
      await this.executeTools(calls, signal);
      if (signal.aborted) return;
    }
  }

  /**
   * Near the context limit (or when the server said the prompt does not fit: `force`), the turns before
   * the current one are summarized by the model and replaced by the summary; the removed messages go to
   * cold storage. A failed summary leaves the history as it was (pruning still applies). True when compacted.
   */
  private async maybeCompact(signal: AbortSignal, force = false, prompt?: ChatMessage[], byUser = false): Promise<boolean> {
    if (!force) {
      const reported = this.lastUsage ? this.lastUsage.promptTokens + this.lastUsage.completionTokens : 0;
      const used = Math.max(reported, estimateTokens(prompt ?? this.promptHistory()));
      if (!needsCompaction(used, this.contextWindow, this.opts.compactAt)) return false;
      const lookup = this.opts.contextWindowLookup;
      if (lookup && !this.windowLookedUp) {
        this.windowLookedUp = true;
        const tokens = await lookup().catch(() => undefined);
        if (tokens) this.contextWindow = tokens;
        if (!needsCompaction(used, this.contextWindow, this.opts.compactAt)) return false;
      }
    }
    if (!this.warnedSmallWindow) this.warnIfWindowTooSmall();
    const split = splitForCompaction(this.history);
    if (!split) return false;
    this.emit('notice', byUser ? 'compacting the conversation (/compact)…' : force ? 'the model’s context is full: compacting the conversation…' : 'compacting the conversation (near the context limit)…');
    let summary = '';
    try {
      const system: ChatMessage = { role: 'system', content: this.systemPrompt() };
      const instruction: ChatMessage = { role: 'user', content: SUMMARIZE_INSTRUCTION };
      const budget = Math.max(1_000, Math.floor((this.contextWindow ?? DEFAULT_CONTEXT_WINDOW) * SUMMARY_INPUT_SHARE) - estimateTokens([system, instruction]));
      const messages: ChatMessage[] = [system, ...fitForSummary(pruneToolOutputs(split.head, 1, this.opts.storedRef), budget), instruction];
      for await (const ev of this.model.stream({ messages, signal })) {
        if (ev.type === 'done') summary = ev.text;
      }
    } catch (err) {
      if (!signal.aborted) this.emit('notice', `compaction failed: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
    if (summary.trim() === '') return false;
    let archivedAs: number | undefined;
    try {
      archivedAs = this.opts.archive?.(split.head, summary);
    } catch (e) {
      this.opts.log?.error('archiving the compacted messages failed: %s', e instanceof Error ? e.message : String(e));
    }
    const compacted = compactedHistory(summary, split.tail, archivedAs);
    this.history.splice(0, this.history.length, ...compacted);
    this.lastUsage = undefined;
    this.emit('compacted', { removed: split.head, summary, added: compacted.slice(0, compacted.length - split.tail.length), ...(archivedAs === undefined ? {} : { archivedAs }) });
    this.emit('notice', `compacted ${split.head.length} earlier messages into a summary${archivedAs === undefined ? '' : ` (the full text stays reachable as #${archivedAs})`}`);
    return true;
  }

  /**
   * The system prompt and the tool definitions go with every request and cannot be summarized: when
   * they alone fill the window, say so once (the configured window is likely wrong).
   */
  private warnIfWindowTooSmall(): void {
    const tools = this.registry.specs(this.opts.toolFilter).map(({ name, description, parameters }) => ({ name, description, parameters }));
    const fixed = estimateTokens([{ role: 'system', content: this.systemPrompt() }]) + Math.ceil(JSON.stringify(tools).length / 4);
    if (!needsCompaction(fixed, this.contextWindow, this.opts.compactAt)) return;
    this.warnedSmallWindow = true;
    this.emit(
      'notice',
      `the context window (${this.contextWindow} tokens) is too small for what every request carries (system prompt and tool definitions, about ${fixed} tokens): ` +
        'only the conversation can be compacted; set provider.context_window to the model’s real window',
    );
  }

  /** The conversation as the next request sends it (old tool outputs stubbed, those that did not fit too). */
  private promptHistory(): ChatMessage[] {
    const pruned = pruneToolOutputs(this.history, undefined, this.opts.storedRef);
    return pruned.map((m, i) => (m === this.history[i] ? (this.fitted.get(m) ?? m) : m));
  }

  /**
   * The request must fit the context window even when the current turn's tool outputs alone do not (they
   * cannot be summarized: compaction keeps the current turn). The largest outputs leave the prompt for a
   * stub naming their stored id (recall reads them back; a recall output, or one not stored, is cut
   * instead) until the conversation fits the window's compaction share next to the system prompt and the
   * tool definitions. Said in the chat.
   */
  private fitToWindow(prompt: ChatMessage[], tools: readonly { name: string; description: string; parameters: unknown }[]): ChatMessage[] {
    if (!this.contextWindow) return prompt;
    const fixed = estimateTokens([{ role: 'system', content: this.systemPrompt() }]) + Math.ceil(JSON.stringify(tools).length / 4);
    const budget = Math.floor(this.contextWindow * (this.opts.compactAt ?? DEFAULT_COMPACT_AT)) - fixed;
    // A window too small for the fixed part is said elsewhere (warnIfWindowTooSmall): nothing to fit into.
    if (budget <= 0 || estimateTokens(prompt) <= budget) return prompt;
    const fit = fitToolOutputs(prompt, budget, (i) => this.opts.storedRef?.(this.history[i]));
    if (fit.replaced.length === 0) return prompt;
    for (const r of fit.replaced) this.fitted.set(this.history[r.index], fit.prompt[r.index]);
    const stubs = fit.replaced.filter((r) => r.storedAs !== undefined).map((r) => `#${r.storedAs}`);
    const cut = fit.replaced.length - stubs.length;
    const what = [
      stubs.length > 0 ? `${stubs.length} moved out of the prompt (stored as ${stubs.join(', ')}; recall reads them)` : '',
      cut > 0 ? `${cut} cut` : '',
    ].filter(Boolean);
    this.emit('notice', `this turn's tool outputs did not fit the context window (${this.contextWindow} tokens): ${what.join(', ')}`);
    return fit.prompt;
  }

  private push(m: ChatMessage): void {
    this.history.push(m);
    this.emit('messageAdded', m);
  }

  /** One model call. Returns the tool calls to run, [] for a final answer, null when the turn must end. */
  private async streamStep(signal: AbortSignal, compactedForLength = false): Promise<AssembledToolCall[] | null> {
    this.setState('streaming');
    // The prompt is built once per step; again only when compaction changed the history.
    let prompt = this.promptHistory();
    if (!compactedForLength && (await this.maybeCompact(signal, false, prompt))) prompt = this.promptHistory();
    if (signal.aborted) return null;
    if (this.opts.prepareTools) {
      await this.opts.prepareTools(signal).catch((e: unknown) => this.opts.log?.warn('preparing tools failed: %s', e instanceof Error ? e.message : String(e)));
      if (signal.aborted) return null;
    }
    this.emit('assistantStart');
    let partial = '';
    let lastRetryMessage: string | undefined;
    try {
      const tools = this.registry.specs(this.opts.toolFilter).map(({ name, description, parameters }) => ({ name, description, parameters }));
      const messages: ChatMessage[] = [{ role: 'system', content: this.systemPrompt() }, ...this.fitToWindow(prompt, tools)];
      for await (const ev of this.model.stream({ messages, tools, signal })) {
        switch (ev.type) {
          case 'text':
            partial += ev.delta;
            this.emit('text', ev.delta);
            break;
          case 'usage':
            this.lastUsage = ev.usage;
            this.emit('usage', ev.usage);
            break;
          case 'retry':
            this.emit('retry', { attempt: ev.attempt, delayMs: ev.delayMs, message: ev.error.message });
            // The server's message once: a retry failing the same way says so without repeating it.
            this.emit('notice', `${ev.error.message === lastRetryMessage ? 'the same error again' : ev.error.message}; retrying in ${formatDelay(ev.delayMs)} (attempt ${ev.attempt})`);
            lastRetryMessage = ev.error.message;
            break;
          case 'reasoning':
            this.emit('reasoning', ev.delta);
            break;
          case 'tool_call_delta':
            break;
          case 'done':
            this.push(assistantMessage(ev.text, ev.toolCalls, { model: this.model.model, ...(ev.reasoning ? { reasoning: ev.reasoning } : {}), ...(ev.reasoningOpaque ? { reasoningOpaque: ev.reasoningOpaque } : {}) }));
            this.emit('assistantEnd', { interrupted: false });
            if (ev.finishReason === 'length' && ev.toolCalls.length === 0) {
              this.emit('notice', 'the reply was cut at the max_tokens limit');
            }
            return ev.toolCalls;
        }
      }
      // A client that ended without `done` (custom ModelClient): treat as interrupted.
      throw new ProviderError('interrupted', 'the response stream ended before the model finished', { partialText: partial });
    } catch (err) {
      const e = err instanceof ProviderError ? err : new ProviderError('bad_response', err instanceof Error ? err.message : String(err));
      const aborted = signal.aborted || e.kind === 'aborted';
      // Partial text stays in the history, marked so the model knows its reply was cut.
      if (partial.length > 0) this.push(interruptedAssistantMessage(partial));
      // Only a reply that showed text was interrupted; a request that failed before any text has nothing to mark.
      this.emit('assistantEnd', { interrupted: partial.length > 0 });
      // The prompt did not fit: compact and try once more instead of ending the turn.
      if (e.kind === 'context_length' && !aborted && !compactedForLength && partial.length === 0) {
        if (await this.maybeCompact(signal, true)) return this.streamStep(signal, true);
        this.emit('error', { kind: e.kind, message: `${e.message}; nothing older is left to summarize — start a new conversation (:CabooseNew) or shorten the request` });
        return null;
      }
      if (aborted) this.emit('notice', 'stopped');
      else this.emit('error', { kind: e.kind, message: e.message });
      return null;
    }
  }

  /**
   * Runs the calls of one reply. Consecutive calls that run without asking and have the `read` policy
   * (subagents included: a child gates its own calls) run concurrently; anything else (approval, edit,
   * exec, interactive) runs alone, in order. Results are appended in the original order whatever the
   * completion order.
   */
  private async executeTools(calls: AssembledToolCall[], signal: AbortSignal): Promise<void> {
    this.setState('executing_tools');
    const pending: PendingCall[] = calls.map((call) => {
      const parsed = parseToolArguments(call.arguments);
      return {
        call,
        args: parsed.ok ? parsed.args : call.arguments,
        parseError: parsed.ok ? undefined : parsed.message,
        def: this.registry.get(call.name),
      };
    });
    const results: ToolResult[] = new Array<ToolResult>(pending.length);
    // Each result joins the history (and the session store) as soon as the ones before it have.
    let pushed = 0;
    const pushReady = (): void => {
      for (; pushed < pending.length && results[pushed] !== undefined; pushed++) this.push(toolMessage(pending[pushed].call.id, results[pushed]));
    };
    let batch: Promise<void>[] = [];
    const flush = async (): Promise<void> => {
      await Promise.all(batch);
      batch = [];
    };

    for (let i = 0; i < pending.length; i++) {
      const p = pending[i];
      const finish = (result: ToolResult): void => {
        results[i] = result;
        this.emit('toolResult', { id: p.call.id, name: p.call.name, result });
        pushReady();
      };
      this.emit('toolCall', { id: p.call.id, name: p.call.name, args: p.args });
      if (signal.aborted) {
        finish(cancelledResult());
        continue;
      }
      if (p.parseError !== undefined) {
        finish(this.refuse(p, { kind: 'invalid_arguments', message: p.parseError, suggestedAction: 'Send the arguments as one valid JSON object matching the tool schema.' }));
        continue;
      }
      const concurrent = p.def?.policy === 'read' && this.permission(p) === 'run';
      if (concurrent) {
        batch.push(this.runTool(p, signal).then(finish));
        continue;
      }
      await flush();
      finish(signal.aborted ? cancelledResult() : await this.gateAndRun(p, signal));
    }
    await flush();
    if (!signal.aborted) this.pushMedia(pending.map((p) => p.call.id), results);
  }

  /** Images and audio the step's tools returned, for a model that accepts them (after every tool result). */
  private pushMedia(ids: string[], results: ToolResult[]): void {
    const accepts = this.opts.acceptsMedia ?? [];
    if (accepts.length === 0) return;
    const parts: ChatCompletionContentPart[] = [];
    results.forEach((r, i) => {
      if (!r?.ok) return;
      const own: ChatCompletionContentPart[] = [];
      for (const m of mediaOf(r.data)) {
        if (!accepts.includes(m.type)) continue;
        if (m.type === 'image') own.push({ type: 'image_url', image_url: { url: `data:${m.mimeType};base64,${m.data}` } });
        else {
          const format = audioFormat(m.mimeType);
          if (format) own.push({ type: 'input_audio', input_audio: { data: m.data, format } });
        }
      }
      if (own.length > 0) parts.push({ type: 'text', text: `Media returned by tool call ${ids[i]}:` }, ...own);
    });
    if (parts.length > 0) this.push({ role: 'user', content: parts });
  }

  private permission(p: PendingCall): 'run' | 'ask' | 'block' {
    if (!p.def) return 'run'; // the registry answers invalid_arguments (unknown tool)
    const confinement = p.def.confinement?.(p.args);
    const perm = permissionFor(this.mode, p.def.policy, p.def.allowed, confinement);
    // Reading or searching a file that usually holds secrets asks in every mode, whatever was always allowed.
    if (perm !== 'block' && this.unapprovedSecrets(p).length > 0) return 'ask';
    // An escalation out of the sandbox asks every time, whatever "always" was answered before.
    if (perm === 'ask' && confinement !== 'escalated' && this.alwaysAllowed.has(p.def.name)) return 'run';
    return perm;
  }

  /** The secret files (secret_globs) this call would read or search that the user has not allowed yet. */
  private unapprovedSecrets(p: PendingCall): string[] {
    if (!p.def || p.parseError !== undefined) return [];
    const workspace = this.opts.makeContext(new AbortController().signal).workspace;
    return secretTargets(p.def.name, p.args, workspace).filter((rel) => !this.approvedSecrets.has(rel));
  }

  /** Mode check, approval (when needed), then the tool. */
  private async gateAndRun(p: PendingCall, signal: AbortSignal): Promise<ToolResult> {
    const def = p.def;
    const perm = this.permission(p);
    if (def && perm === 'block') {
      return this.refuse(p, { kind: 'blocked_by_mode', message: blockedByModeMessage(def.name, def.policy) });
    }
    if (def && perm === 'ask') {
      // Invalid arguments never reach the user: the registry reports them to the model.
      const valid = def.parameters.safeParse(p.args ?? {});
      if (!valid.success) return this.runTool(p, signal);
      // A call that cannot apply (stale file, text not found…) fails now: the user is not asked about it —
      // unless it touches a secret file: its error (closest lines…) could show the content, so the user is asked first.
      const secrets = this.unapprovedSecrets(p);
      const preview = await this.previewFor(p, def, valid.data, signal);
      if ('error' in preview && secrets.length === 0) return err(preview.error);
      const reason = secrets.length > 0 ? secretReason(def.name, secrets) : undefined;
      if (reason) this.emit('notice', reason);
      const decision = await this.askApproval(p, def, valid.data, 'preview' in preview ? preview.preview : undefined, signal, reason);
      if (decision === null) {
        return this.refuse(p, { kind: 'rejected_by_user', message: 'The user stopped the agent before approving this call.' });
      }
      if (decision.decision === 'reject') {
        const reason = decision.reason?.trim();
        return this.refuse(p, {
          kind: 'rejected_by_user',
          message: reason ? `The user rejected this ${def.name} call: ${reason}` : `The user rejected this ${def.name} call.`,
          suggestedAction: 'Do not repeat the same call; adjust your approach or ask the user.',
        });
      }
      // "always" for a secret file allows that file for the session, not the tool for every file; "always"
      // on an escalation approves this call only: the next escalation asks again.
      if (decision.decision === 'always') {
        if (secrets.length > 0) for (const s of secrets) this.approvedSecrets.add(s);
        else if (def.confinement?.(p.args) !== 'escalated') this.alwaysAllowed.add(def.name);
      }
      if ('error' in preview) return err(preview.error);
      this.setState('executing_tools');
      const review = decision.review?.files.some((f) => f.rejected.length > 0) ? decision.review : undefined;
      return this.runTool(p, signal, review);
    }
    return this.runTool(p, signal);
  }

  /** A call refused before it ran: the registry hears of it (to audit it), the model gets the error. */
  private refuse(p: PendingCall, info: ToolErrorInfo): ToolResult {
    this.registry.refused(p.call.name, p.args, info);
    return err(info);
  }

  /**
   * What the approval float shows. A ToolError means the call cannot apply as it is (the tool would fail
   * the same way): it goes back to the model instead of to the user. Any other failure only loses the
   * preview (logged); the user is still asked.
   */
  private async previewFor(p: PendingCall, def: ToolDefinition, args: unknown, signal: AbortSignal): Promise<{ preview?: ApprovalPreview } | { error: ToolErrorInfo }> {
    if (!def.preview) return {};
    try {
      return { preview: await def.preview(args, this.contextFor(p, signal)) };
    } catch (e) {
      if (e instanceof ToolError) return { error: e.toInfo() };
      this.opts.log?.warn('preview for %s failed: %s', def.name, e instanceof Error ? e.message : String(e));
      return {};
    }
  }

  /** Waits for the user; null when stop() withdrew the request. */
  private async askApproval(
    p: PendingCall,
    def: ToolDefinition,
    args: unknown,
    preview: ApprovalPreview | undefined,
    signal: AbortSignal,
    reason?: string,
  ): Promise<ApprovalDecision | null> {
    const confinement = def.confinement?.(p.args);
    const req: ApprovalRequest = {
      id: randomUUID(),
      toolCallId: p.call.id,
      tool: def.name,
      args,
      policy: def.policy,
      ...(def.allowed ? { allowed: def.allowed } : {}),
      ...(confinement !== undefined ? { confinement } : {}),
      ...(preview ? { preview } : {}),
      ...(reason ? { reason } : {}),
    };
    const aborted = abortPromise(signal);
    try {
      // The request goes out before the state change, so whoever reacts to `pending_approval` finds it.
      const pending = this.opts.requestApproval(req);
      this.setState('pending_approval');
      const decision = await Promise.race([pending, aborted.promise]);
      if (decision === null) this.emit('approvalCancelled', { id: req.id });
      return decision;
    } catch (e) {
      this.opts.log?.warn('requestApproval failed: %s', e instanceof Error ? e.message : String(e));
      return { decision: 'reject', reason: 'the approval prompt failed' };
    } finally {
      aborted.dispose();
    }
  }

  /** registry.call never throws; the race makes stop() effective even for tools ignoring the signal. */
  private async runTool(p: PendingCall, signal: AbortSignal, review?: ReviewSelection): Promise<ToolResult> {
    if (signal.aborted) return cancelledResult();
    const aborted = abortPromise(signal);
    try {
      const ctx = review ? { ...this.contextFor(p, signal), review } : this.contextFor(p, signal);
      const result = await Promise.race([this.registry.call(p.call.name, p.args, ctx), aborted.promise]);
      // The API key (and a base_url's password) never reach the model, even when a command prints them.
      return result ? redactDeep(result) : cancelledResult();
    } finally {
      aborted.dispose();
    }
  }

  /* ---------------------------------------------------------------------------------------------
   * Helpers
   * ------------------------------------------------------------------------------------------- */

  private contextFor(p: PendingCall, signal: AbortSignal): ToolContext {
    return { ...this.opts.makeContext(signal), toolCallId: p.call.id };
  }

  private systemPrompt(): string {
    const base = this.opts.systemPrompt ?? defaultSystemPrompt(this.currentMode, this.opts.cwd);
    const rules = this.opts.projectRules?.();
    return rules ? `${base}\n\n${rules}` : base;
  }

  private setState(next: AgentState): void {
    const prev = this.currentState;
    if (prev === next) return;
    this.currentState = next;
    this.emit('state', next, prev);
  }

  /** Event handlers are the host's code: a throwing handler is logged, never breaks the loop. */
  private emit<K extends keyof AgentEvents>(name: K, ...args: Parameters<NonNullable<AgentEvents[K]>>): void {
    const handler = this.opts.events?.[name] as ((...a: unknown[]) => void) | undefined;
    if (!handler) return;
    try {
      handler(...args);
    } catch (e) {
      this.opts.log?.error('event handler %s threw: %s', name, e instanceof Error ? e.message : String(e));
    }
  }
}

function isModelClient(p: ProviderConfig | ModelClient): p is ModelClient {
  return typeof (p as ModelClient).stream === 'function';
}

function err(info: ToolErrorInfo): ToolResult {
  return { ok: false, error: info };
}

function cancelledResult(): ToolResult {
  return err({ kind: 'cancelled', message: 'The user stopped the agent; this call did not complete.' });
}

/** A promise resolving to null on abort, and a disposer to drop the listener. */
function abortPromise(signal: AbortSignal): { promise: Promise<null>; dispose(): void } {
  let onAbort: () => void = () => undefined;
  const promise = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    if (signal.aborted) resolve(null);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

function formatDelay(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}
