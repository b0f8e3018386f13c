/**
 * Token usage of one chat: the winbar's ↑ ↓ are the main agent's last request; Σ is the session's, subagents
 * included. Σ is stored with the session: a reopened one continues from its total.
 */
import type { Usage } from '../../agent/provider';
import type { Logger } from '../logger';
import type { LuaUi } from '../lua-ui';
import { EVENTS } from '../protocol';

export interface UsageMeterOptions {
  /** The session's stored total (a reopened session). */
  stored?: { prompt: number; completion: number };
  /** Adds one request's tokens to the stored total. */
  store?(prompt: number, completion: number): void;
  log?: Pick<Logger, 'error'>;
}

export class UsageMeter {
  private readonly totals;
  private readonly stored;

  constructor(
    private readonly ui: Pick<LuaUi, 'emit'>,
    private readonly o: UsageMeterOptions = {},
  ) {
    this.stored = o.stored;
    this.totals = { prompt: o.stored?.prompt ?? 0, completion: o.stored?.completion ?? 0, lastPrompt: 0, lastCompletion: 0, lastCached: 0, lastReasoning: 0 };
  }

  /** Counts one request's usage (`main`: the chat's own agent, not a subagent) and tells the winbar. */
  count(u: Usage, main: boolean): void {
    const usage = this.totals;
    usage.prompt += u.promptTokens;
    usage.completion += u.completionTokens;
    try {
      this.o.store?.(u.promptTokens, u.completionTokens);
    } catch (e) {
      this.o.log?.error('session store: usage not stored: %s', e instanceof Error ? e.message : String(e));
    }
    if (main) [usage.lastPrompt, usage.lastCompletion, usage.lastCached, usage.lastReasoning] = [u.promptTokens, u.completionTokens, u.cachedTokens ?? 0, u.reasoningTokens ?? 0];
    this.ui.emit(EVENTS.usage, {
      prompt: usage.lastPrompt,
      completion: usage.lastCompletion,
      session_prompt: usage.prompt,
      session_completion: usage.completion,
      // Details only when the server reported them above zero (a 0 is often a placeholder).
      ...(usage.lastCached > 0 ? { cached: usage.lastCached } : {}),
      ...(usage.lastReasoning > 0 ? { reasoning: usage.lastReasoning } : {}),
    });
  }

  /** A reopened session's stored Σ, before any request of this sitting (only Σ is known). */
  announceStored(): void {
    const s = this.stored;
    if (s && s.prompt + s.completion > 0) this.ui.emit(EVENTS.usage, { session_prompt: s.prompt, session_completion: s.completion });
  }
}
