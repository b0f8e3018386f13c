/**
 * The conversation kept within the model's context window: the prompt each request sends (old tool
 * outputs stubbed, this turn's outputs moved out when they alone do not fit), and compaction: near the
 * limit (or when the server said the prompt does not fit) the turns before the current one are
 * summarized by the model and replaced by the summary. The token arithmetic is context.ts's.
 */
import type { ToolRegistry } from '../tools/registry';
import type { ToolDefinition } from '../tools/tool';
import type { ChatMessage, ModelClient, Usage } from './provider';
import { compactedHistory, DEFAULT_COMPACT_AT, DEFAULT_CONTEXT_WINDOW, estimateTokens, fitForSummary, fitToolOutputs, needsCompaction, pruneToolOutputs, splitForCompaction, SUMMARIZE_INSTRUCTION, SUMMARY_INPUT_SHARE, type StoredRef } from './context';

/** What the context window hears of and does to the agent it serves (see AgentOptions for the settings). */
export interface ContextWindowHost {
  model: ModelClient;
  registry: ToolRegistry;
  /** The conversation (the agent's own array: compaction replaces its contents). */
  history: ChatMessage[];
  systemPrompt(): string;
  opts: {
    toolFilter?: (def: ToolDefinition) => boolean;
    compactAt?: number;
    contextWindowLookup?: () => Promise<number | undefined>;
    storedRef?: StoredRef;
    archive?: (removed: ChatMessage[], summary: string) => number | undefined;
    log?: { error(msg: string, ...args: unknown[]): void };
  };
  events: {
    notice(text: string): void;
    compacted(c: { removed: ChatMessage[]; summary: string; added: ChatMessage[]; archivedAs?: number }): void;
  };
}

export class ContextWindow {
  /** Token usage reported with the last model reply (compaction forgets it). */
  lastUsage: Usage | undefined;
  /** Tokens the model accepts (undefined: unknown, no compaction). */
  tokens: number | undefined;
  private windowLookedUp = false;
  private warnedSmallWindow = false;
  /**
   * Tool messages moved out of the prompt (stub) or cut (cap) because the turn's outputs did not fit the
   * context window; the same replacement is sent at every later step (a stable prompt).
   */
  private readonly fitted = new WeakMap<ChatMessage, ChatMessage>();

  constructor(
    private readonly host: ContextWindowHost,
    tokens: number | undefined,
  ) {
    this.tokens = tokens;
  }

  /**
   * Near the context limit (or when the server said the prompt does not fit: `force`), the turns before
   * the current one are summarized by the model and replaced by the summary; the removed messages go to
   * cold storage. A failed summary leaves the history as it was (pruning still applies). True when compacted.
   */
  async maybeCompact(signal: AbortSignal, force = false, prompt?: ChatMessage[], byUser = false): Promise<boolean> {
    if (!force) {
      const reported = this.lastUsage ? this.lastUsage.promptTokens + this.lastUsage.completionTokens : 0;
      const used = Math.max(reported, estimateTokens(prompt ?? this.promptHistory()));
      if (!needsCompaction(used, this.tokens, this.host.opts.compactAt)) return false;
      const lookup = this.host.opts.contextWindowLookup;
      if (lookup && !this.windowLookedUp) {
        this.windowLookedUp = true;
        const tokens = await lookup().catch(() => undefined);
        if (tokens) this.tokens = tokens;
        if (!needsCompaction(used, this.tokens, this.host.opts.compactAt)) return false;
      }
    }
    if (!this.warnedSmallWindow) this.warnIfWindowTooSmall();
    const split = splitForCompaction(this.host.history);
    if (!split) return false;
    this.host.events.notice(byUser ? 'compacting the conversation (/compact)…' : force ? 'the model’s context is full: compacting the conversation…' : 'compacting the conversation (near the context limit)…');
    let summary = '';
    try {
      const system: ChatMessage = { role: 'system', content: this.host.systemPrompt() };
      const instruction: ChatMessage = { role: 'user', content: SUMMARIZE_INSTRUCTION };
      const budget = Math.max(1_000, Math.floor((this.tokens ?? DEFAULT_CONTEXT_WINDOW) * SUMMARY_INPUT_SHARE) - estimateTokens([system, instruction]));
      const messages: ChatMessage[] = [system, ...fitForSummary(pruneToolOutputs(split.head, 1, this.host.opts.storedRef), budget), instruction];
      for await (const ev of this.host.model.stream({ messages, signal })) {
        if (ev.type === 'done') summary = ev.text;
      }
    } catch (err) {
      if (!signal.aborted) this.host.events.notice(`compaction failed: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
    if (summary.trim() === '') return false;
    let archivedAs: number | undefined;
    try {
      archivedAs = this.host.opts.archive?.(split.head, summary);
    } catch (e) {
      this.host.opts.log?.error('archiving the compacted messages failed: %s', e instanceof Error ? e.message : String(e));
    }
    const compacted = compactedHistory(summary, split.tail, archivedAs);
    this.host.history.splice(0, this.host.history.length, ...compacted);
    this.lastUsage = undefined;
    this.host.events.compacted({ removed: split.head, summary, added: compacted.slice(0, compacted.length - split.tail.length), ...(archivedAs === undefined ? {} : { archivedAs }) });
    this.host.events.notice(`compacted ${split.head.length} earlier messages into a summary${archivedAs === undefined ? '' : ` (the full text stays reachable as #${archivedAs})`}`);
    return true;
  }

  /**
   * The system prompt and the tool definitions go with every request and cannot be summarized: when
   * they alone fill the window, say so once (the configured window is likely wrong).
   */
  private warnIfWindowTooSmall(): void {
    const tools = this.host.registry.specs(this.host.opts.toolFilter).map(({ name, description, parameters }) => ({ name, description, parameters }));
    const fixed = estimateTokens([{ role: 'system', content: this.host.systemPrompt() }]) + Math.ceil(JSON.stringify(tools).length / 4);
    if (!needsCompaction(fixed, this.tokens, this.host.opts.compactAt)) return;
    this.warnedSmallWindow = true;
    this.host.events.notice(
      `the context window (${this.tokens} tokens) is too small for what every request carries (system prompt and tool definitions, about ${fixed} tokens): ` +
        'only the conversation can be compacted; set provider.context_window to the model’s real window',
    );
  }

  /** The conversation as the next request sends it (old tool outputs stubbed, those that did not fit too). */
  promptHistory(): ChatMessage[] {
    const pruned = pruneToolOutputs(this.host.history, undefined, this.host.opts.storedRef);
    return pruned.map((m, i) => (m === this.host.history[i] ? (this.fitted.get(m) ?? m) : m));
  }

  /**
   * The request must fit the context window even when the current turn's tool outputs alone do not (they
   * cannot be summarized: compaction keeps the current turn). The largest outputs leave the prompt for a
   * stub naming their stored id (recall reads them back; a recall output, or one not stored, is cut
   * instead) until the conversation fits the window's compaction share next to the system prompt and the
   * tool definitions. Said in the chat.
   */
  fitToWindow(prompt: ChatMessage[], tools: readonly { name: string; description: string; parameters: unknown }[]): ChatMessage[] {
    if (!this.tokens) return prompt;
    const fixed = estimateTokens([{ role: 'system', content: this.host.systemPrompt() }]) + Math.ceil(JSON.stringify(tools).length / 4);
    const budget = Math.floor(this.tokens * (this.host.opts.compactAt ?? DEFAULT_COMPACT_AT)) - fixed;
    // A window too small for the fixed part is said elsewhere (warnIfWindowTooSmall): nothing to fit into.
    if (budget <= 0 || estimateTokens(prompt) <= budget) return prompt;
    const fit = fitToolOutputs(prompt, budget, (i) => this.host.opts.storedRef?.(this.host.history[i]));
    if (fit.replaced.length === 0) return prompt;
    for (const r of fit.replaced) this.fitted.set(this.host.history[r.index], fit.prompt[r.index]);
    const stubs = fit.replaced.filter((r) => r.storedAs !== undefined).map((r) => `#${r.storedAs}`);
    const cut = fit.replaced.length - stubs.length;
    const what = [
      stubs.length > 0 ? `${stubs.length} moved out of the prompt (stored as ${stubs.join(', ')}; recall reads them)` : '',
      cut > 0 ? `${cut} cut` : '',
    ].filter(Boolean);
    this.host.events.notice(`this turn's tool outputs did not fit the context window (${this.tokens} tokens): ${what.join(', ')}`);
    return fit.prompt;
  }
}
