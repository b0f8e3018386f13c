/** What the model sees of a long conversation. Pure: the agent's own history is never altered. */
import type { ChatMessage } from './provider';

export const PRUNED_TOOL_OUTPUT = '[output truncated]';
/** Tool outputs of this many most recent user turns are sent in full. */
export const DEFAULT_KEEP_TOOL_OUTPUT_TURNS = 3;
/** Outputs this short are cheaper to keep than to prune (errors, small results). */
const KEEP_SHORT_OUTPUT_CHARS = 300;

/**
 * Old tool outputs are the largest consumers of context: after `keepTurns` further user messages, a
 * tool message's content is replaced by a marker (the call itself and the assistant text remain).
 */
export function pruneToolOutputs(history: readonly ChatMessage[], keepTurns = DEFAULT_KEEP_TOOL_OUTPUT_TURNS): ChatMessage[] {
  // Walking backwards, `laterUsers` counts the user messages after index i: 0 in the current turn.
  let laterUsers = 0;
  const out = new Array<ChatMessage>(history.length);
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (m.role === 'user') laterUsers++;
    if (laterUsers >= keepTurns && m.role === 'tool' && typeof m.content === 'string' && m.content.length > KEEP_SHORT_OUTPUT_CHARS) {
      out[i] = { ...m, content: PRUNED_TOOL_OUTPUT };
    } else {
      out[i] = m;
    }
  }
  return out;
}

/** Compaction starts when the last request used this share of the context window. */
export const DEFAULT_COMPACT_AT = 0.8;

export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';

export const SUMMARIZE_INSTRUCTION = [
  'The conversation is about to be compacted. Write a summary that lets you continue the work without it:',
  "the user's goals and constraints, decisions made, files read or changed (paths) and their current state,",
  'commands run and what they showed, open questions and the remaining tasks. Be concise but complete.',
  'Answer with the summary only.',
].join(' ');

/** True when the last reported usage crossed `compactAt` of the window. */
export function needsCompaction(usedTokens: number | undefined, contextWindow: number | undefined, compactAt = DEFAULT_COMPACT_AT): boolean {
  if (!contextWindow || usedTokens === undefined) return false;
  return usedTokens >= contextWindow * compactAt;
}

/**
 * Splits the history for compaction: everything before the current turn's user message is summarized;
 * the current turn (its user message and what followed) is kept verbatim. Null when nothing is old enough.
 */
export function splitForCompaction(history: readonly ChatMessage[]): { head: ChatMessage[]; tail: ChatMessage[] } | null {
  let lastUser = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i].role === 'user') {
      lastUser = i;
      break;
    }
  }
  if (lastUser <= 0) return null;
  return { head: history.slice(0, lastUser), tail: history.slice(lastUser) };
}

/** The history after compaction: the summary stands in for the head. */
export function compactedHistory(summary: string, tail: readonly ChatMessage[]): ChatMessage[] {
  return [{ role: 'user', content: `${SUMMARY_PREFIX}\n${summary.trim()}` }, { role: 'assistant', content: 'Understood. Continuing from the summary.' }, ...tail];
}
