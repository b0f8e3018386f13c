import type { FakeRequest } from './fake-openai';

export interface RecordedToolResult {
  ok: boolean;
  data?: Record<string, unknown>;
  error?: { kind: string; message: string; suggestedAction?: string; details?: unknown };
}

/** Tool results sent with a chat request after its last assistant message, keyed by tool_call_id. */
export function lastToolResults(req: FakeRequest): Map<string, RecordedToolResult> {
  const msgs = req.body?.messages ?? [];
  let lastAssistant = -1;
  msgs.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
  });
  const out = new Map<string, RecordedToolResult>();
  for (const m of msgs.slice(lastAssistant + 1)) {
    if (m.role === 'tool') out.set(String(m.tool_call_id), JSON.parse(String(m.content)) as RecordedToolResult);
  }
  return out;
}

/** The only (or first) tool result in the request. */
export function firstToolResult(req: FakeRequest): RecordedToolResult {
  const r = [...lastToolResults(req).values()][0];
  if (!r) throw new Error('no tool result in request');
  return r;
}
