/** Building blocks of the OpenAI-format conversation the agent keeps. Pure helpers. */
import type { ToolResult } from '../tools/tool';
import { capToolResultJson } from '../tools/output';
import type { AssembledToolCall, ChatMessage } from './provider';
import { META_KEY, type AssistantMeta } from './stream';

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

/**
 * An assistant reply. `extra` is kept beside it under `caboose` (see AssistantMeta: the model, the
 * provider's tool call ids, the reasoning) and stripped before any request (toWireMessages).
 */
export function assistantMessage(text: string, calls: AssembledToolCall[] = [], extra: { model?: string; reasoning?: string; reasoningOpaque?: string } = {}): ChatMessage {
  const providerIds: Record<string, string> = {};
  for (const c of calls) if (c.providerId !== undefined && c.providerId !== c.id) providerIds[c.id] = c.providerId;
  const callExtras: Record<string, Record<string, unknown>> = {};
  for (const c of calls) if (c.extraContent !== undefined) callExtras[c.id] = c.extraContent;
  const meta: AssistantMeta = {
    ...(extra.model ? { model: extra.model } : {}),
    ...(Object.keys(providerIds).length > 0 ? { providerIds } : {}),
    ...(extra.reasoning ? { reasoning: extra.reasoning } : {}),
    ...(extra.reasoningOpaque ? { reasoningOpaque: extra.reasoningOpaque } : {}),
    ...(Object.keys(callExtras).length > 0 ? { callExtras } : {}),
  };
  const withMeta = (m: ChatMessage): ChatMessage => (Object.keys(meta).length > 0 ? ({ ...m, [META_KEY]: meta } as unknown as ChatMessage) : m);
  if (calls.length === 0) return withMeta({ role: 'assistant', content: text });
  return withMeta({
    role: 'assistant',
    content: text.length > 0 ? text : null,
    tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
  });
}

/** The model that wrote an assistant message, when it was recorded. */
export function modelOf(m: ChatMessage): string | undefined {
  const meta = (m as unknown as Record<string, unknown>)[META_KEY] as AssistantMeta | undefined;
  return meta?.model;
}

export function interruptedAssistantMessage(partial: string): ChatMessage {
  return { role: 'assistant', content: partial.length > 0 ? `${partial}\n\n${INTERRUPTED_MARKER}` : INTERRUPTED_MARKER };
}

/** Tool results go to the model as JSON strings, within the output cap every tool obeys. */
export function toolMessage(toolCallId: string, result: ToolResult): ChatMessage {
  return { role: 'tool', tool_call_id: toolCallId, content: capToolResultJson(result) };
}
