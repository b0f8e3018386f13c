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
