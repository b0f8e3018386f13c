/**
 * The agent loop: an explicit state machine around the model client and the tool registry.
 *
 *   idle → streaming → executing_tools ⇄ pending_approval → streaming → … → idle
 *
 * One user message = one turn: stream the model's reply; if it asked for tools, run them (gated by the
 * permission mode and the user's approvals) and stream again with the results; stop when the model answers
 * without a tool call, after `stepLimit` model calls, on a provider error, or on `stop()`.
 *
 * The tool step (permission, approval, running one reply's calls) is tool-calls.ts; the prompt within
 * the context window and compaction are context-window.ts; the options, events and states the caller
 * sees are agent-types.ts.
 *
 * Never imports the Neovim client: the host passes `requestApproval`, `makeContext` and `events`.
 * Never throws at its callers: failures become `error` events and tool results the model can act on.
 */
import { randomUUID } from 'node:crypto';
import type { ToolRegistry } from '../tools/registry';
import type { ToolResult } from '../tools/tool';
import { OpenAIProvider, ProviderError, type AssembledToolCall, type ChatMessage, type ModelClient, type ProviderConfig, type Usage } from './provider';
import { DEFAULT_MODE, type PermissionMode } from '../tools/permissions';
import { assistantMessage, interruptedAssistantMessage, userMessage } from './messages';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import { ToolCalls } from './tool-calls';
import { defaultSystemPrompt } from './prompt';
import { ContextWindow } from './context-window';
import type { AgentEvents, AgentOptions, AgentState, QueuedMessage, SendResult } from './agent-types';

export type { PermissionMode } from '../tools/permissions';
export type { ApprovalDecision, ApprovalRequest } from './tool-calls';
export type { AgentEvents, AgentLogger, AgentOptions, AgentState, QueuedMessage, SendResult } from './agent-types';

/** What a server says when a request carries images the model cannot read. */
const IMAGE_REJECTION_RE = /image|vision|multi-?modal|modalit|image_url|content.?part|content type|unsupported content|only text/i;

/** True when `m` carries an image part (the user attached one). */
function hasImage(m: ChatMessage): boolean {
  return m.role === 'user' && Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url');
}

/** `m` without its images: its text, and a note the model reads saying which images did not go. */
function withoutImages(m: ChatMessage, why: string): ChatMessage {
  if (!hasImage(m) || !Array.isArray(m.content)) return m;
  const parts = m.content as ChatCompletionContentPart[];
  const text = parts.map((p) => (p.type === 'text' ? p.text : '')).filter(Boolean).join('\n\n');
  const n = parts.filter((p) => p.type === 'image_url').length;
  return { role: 'user', content: `${text}\n\n(${n === 1 ? 'The attached image was' : `The ${n} attached images were`} not sent: ${why}.)` };
}

export const DEFAULT_STEP_LIMIT = 50;

/** The setting a user changes when a model cannot read images (issue 22). */
export const VISION_HINT = 'If this model cannot read images, set provider.vision = false (per model: providers.<name>.models["<model>"].vision = false) so images are never sent to it; use a vision model to send images.';
export const DEFAULT_MAX_QUEUE = 3;

export class Agent {
  private readonly model: ModelClient;
  private readonly registry: ToolRegistry;
  private readonly opts: AgentOptions;
  private readonly history: ChatMessage[] = [];
  private readonly queue: QueuedMessage[] = [];
  /** Queued messages a stop() dropped while a turn ran: reported once that turn has ended. */
  private readonly discardedOnStop: QueuedMessage[] = [];
  private readonly alwaysAllowed: Set<string>;
  /** Runs each reply's tool calls: permission, approval, the tools (tool-calls.ts). */
  private readonly tools: ToolCalls;
  private readonly idleWaiters: (() => void)[] = [];
  private currentMode: PermissionMode;
  private currentState: AgentState = 'idle';
  private running = false;
  private abort: AbortController | null = null;
  /** The server refused a request for its images: later images are not sent to this model. */
  private imagesRejected = false;
  /** The prompt within the model's context window, and compaction (context-window.ts). */
  private readonly window: ContextWindow;

  constructor(opts: AgentOptions) {
    this.opts = opts;
    this.model = isModelClient(opts.provider) ? opts.provider : new OpenAIProvider(opts.provider);
    this.registry = opts.registry;
    this.currentMode = opts.mode ?? DEFAULT_MODE;
    this.window = new ContextWindow(
      {
        model: this.model,
        registry: this.registry,
        history: this.history,
        systemPrompt: () => this.systemPrompt(),
        opts,
        events: { notice: (text) => this.emit('notice', text), compacted: (c) => this.emit('compacted', c) },
      },
      opts.contextWindow,
    );
    this.alwaysAllowed = opts.grants ?? new Set<string>();
    this.tools = new ToolCalls({
      registry: this.registry,
      makeContext: opts.makeContext,
      requestApproval: opts.requestApproval,
      log: opts.log,
      acceptsMedia: opts.acceptsMedia,
      mode: () => this.mode,
      grants: this.alwaysAllowed,
      push: (m) => this.push(m),
      setState: (s) => this.setState(s),
      events: {
        toolCall: (c) => this.emit('toolCall', c),
        toolResult: (r) => this.emit('toolResult', r),
        notice: (text) => this.emit('notice', text),
        approvalCancelled: (req) => this.emit('approvalCancelled', req),
      },
    });
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
    return this.window.lastUsage;
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
    this.window.tokens = tokens;
  }

  get contextWindowTokens(): number | undefined {
    return this.window.tokens;
  }

  /** Replace the conversation (e.g. a resumed session). Only while idle. */
  loadMessages(messages: ChatMessage[]): void {
    if (this.running) throw new Error('cannot load messages while the agent is busy');
    this.history.splice(0, this.history.length, ...messages);
  }

  /** Starts a turn, or queues the message while busy (up to `maxQueue`, processed in order). */
  send(text: string, meta?: unknown, content?: ChatCompletionContentPart[]): SendResult {
    const message: QueuedMessage = content ? { text, meta, content } : { text, meta };
    if (!this.running) {
      this.running = true;
      void this.runLoop(message);
      return { status: 'started' };
    }
    const max = this.opts.maxQueue ?? DEFAULT_MAX_QUEUE;
    if (this.queue.length >= max) {
      return { status: 'rejected', reason: `the agent is busy and ${max} messages are already queued` };
    }
    this.queue.push(message);
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
      return await this.tools.callAsUser(call, args, controller.signal);
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
      return await this.window.maybeCompact(controller.signal, true, undefined, true);
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
        await this.runTurn(next.text, next.content);
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

  private async runTurn(text: string, content?: ChatCompletionContentPart[]): Promise<void> {
    const controller = new AbortController();
    this.abort = controller;
    const signal = controller.signal;
    const user: ChatMessage = content ? { role: 'user', content } : userMessage(text);
    // A model that refused images before gets the text alone (said once more, so the user knows).
    if (this.imagesRejected && hasImage(user)) {
      this.emit('error', { kind: 'image_rejected', message: `${this.model.model} rejected images earlier in this session: the image was not sent, the text was. ${VISION_HINT}` });
      this.push(withoutImages(user, 'the model does not accept images'));
    } else this.push(user);
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
      await this.tools.run(calls, signal);
      if (signal.aborted) return;
    }
  }

  private push(m: ChatMessage): void {
    this.history.push(m);
    this.emit('messageAdded', m);
  }

  /** One model call. Returns the tool calls to run, [] for a final answer, null when the turn must end. */
  private async streamStep(signal: AbortSignal, compactedForLength = false): Promise<AssembledToolCall[] | null> {
    this.setState('streaming');
    // The prompt is built once per step; again only when compaction changed the history.
    let prompt = this.window.promptHistory();
    if (!compactedForLength && (await this.window.maybeCompact(signal, false, prompt))) prompt = this.window.promptHistory();
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
      const messages: ChatMessage[] = [{ role: 'system', content: this.systemPrompt() }, ...this.window.fitToWindow(prompt, tools)];
      for await (const ev of this.model.stream({ messages, tools, signal })) {
        switch (ev.type) {
          case 'text':
            partial += ev.delta;
            this.emit('text', ev.delta);
            break;
          case 'usage':
            this.window.lastUsage = ev.usage;
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
      // Images the model cannot read: the text goes again without them (once), and the user learns the setting.
      if (!aborted && partial.length === 0 && e.kind === 'bad_response' && (e.status === undefined || (e.status >= 400 && e.status < 500)) && IMAGE_REJECTION_RE.test(e.message) && this.history.some(hasImage)) {
        this.imagesRejected = true;
        for (let i = 0; i < this.history.length; i++) this.history[i] = withoutImages(this.history[i], 'the model rejected images');
        this.emit('error', { kind: 'image_rejected', message: `${this.model.model} rejected the image (${e.message}): sending the text without it. ${VISION_HINT}` });
        return this.streamStep(signal, compactedForLength);
      }
      // The prompt did not fit: compact and try once more instead of ending the turn.
      if (e.kind === 'context_length' && !aborted && !compactedForLength && partial.length === 0) {
        if (await this.window.maybeCompact(signal, true)) return this.streamStep(signal, true);
        this.emit('error', { kind: e.kind, message: `${e.message}; nothing older is left to summarize — start a new conversation (:CabooseNew) or shorten the request` });
        return null;
      }
      if (aborted) this.emit('notice', 'stopped');
      else this.emit('error', { kind: e.kind, message: e.message });
      return null;
    }
  }

  /* ---------------------------------------------------------------------------------------------
   * Helpers
   * ------------------------------------------------------------------------------------------- */

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

function formatDelay(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}
