/** Token usage of one chat: the winbar's ↑ ↓ are the main agent's last request; Σ is the session's, subagents included. */
import type { Usage } from '../../agent/provider';
import type { LuaUi } from '../lua-ui';
import { EVENTS } from '../protocol';

export class UsageMeter {
  private readonly totals = { prompt: 0, completion: 0, lastPrompt: 0, lastCompletion: 0, lastCached: 0, lastReasoning: 0 };

  constructor(private readonly ui: Pick<LuaUi, 'emit'>) {}

  /** Counts one request's usage (`main`: the chat's own agent, not a subagent) and tells the winbar. */
  count(u: Usage, main: boolean): void {
    const usage = this.totals;
    usage.prompt += u.promptTokens;
    usage.completion += u.completionTokens;
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
}
