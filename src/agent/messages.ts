/** Building blocks of the OpenAI-format conversation the agent keeps. Pure helpers. */
import type { ToolResult } from '../tools/tool';
import { capToolResultJson } from '../tools/output';
import type { AssembledToolCall, ChatMessage } from './provider';

/** Appended to a partial assistant message whose stream was cut or stopped. */
export const INTERRUPTED_MARKER = '[response interrupted]';

export type ParsedArgs = { ok: true; args: unknown } | { ok: false; message: string };

/** Tool-call arguments from the model: JSON text; an empty string means "no arguments". */
export function parseToolArguments(raw: string): ParsedArgs {
  if (raw.trim() === '') return { ok: true, args: {} };
  try {
    return { ok: true, args: JSON.parse(raw) as unknown };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    const shown = raw.length > 200 ? `${raw.slice(0, 200)}…` : raw;
    return { ok: false, message: `arguments are not valid JSON: ${why} (received: ${shown})` };
  }
}

export function userMessage(text: string): ChatMessage {
  return { role: 'user', content: text };
}

export function assistantMessage(text: string, calls: AssembledToolCall[] = []): ChatMessage {
  if (calls.length === 0) return { role: 'assistant', content: text };
  return {
    role: 'assistant',
    content: text.length > 0 ? text : null,
    tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
  };
}

export function interruptedAssistantMessage(partial: string): ChatMessage {
  return { role: 'assistant', content: partial.length > 0 ? `${partial}\n\n${INTERRUPTED_MARKER}` : INTERRUPTED_MARKER };
}

/** Tool results go to the model as JSON strings, within the output cap every tool obeys. */
export function toolMessage(toolCallId: string, result: ToolResult): ChatMessage {
  return { role: 'tool', tool_call_id: toolCallId, content: capToolResultJson(result) };
}
