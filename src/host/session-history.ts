/**
 * A stored session read back: the conversation the model continues from, and what the chat shows.
 * Pure functions over the rows of SessionRepository.
 */
import type { ChatMessage } from '../agent/provider';
import type { ToolResult } from '../tools/tool';
import { compactedHistory } from '../agent/context';
import { INTERRUPTED_MARKER, interruptedAssistantMessage } from '../agent/messages';
import type { SessionRow } from '../store/sessions';
import { describeToolResult, summarizeToolCall, type ToolStatus } from './summaries';

/** A message of the restored conversation and the row it came from (for pruning stubs and archiving). */
export interface RestoredMessage {
  message: ChatMessage;
  rowId: number | null;
}

/** What a user row's display holds. */
export interface UserDisplay {
  text: string;
  labels?: string[];
}

type ToolCallOf = { id: string; function: { name: string; arguments: string } };

const UNFINISHED_CALL: ToolResult = {
  ok: false,
  error: { kind: 'cancelled', message: 'Neovim or the host stopped before this call finished; it may not have run. Check the state before repeating it.' },
};

function toolCalls(m: ChatMessage): ToolCallOf[] {
  return m.role === 'assistant' && Array.isArray((m as { tool_calls?: unknown }).tool_calls) ? ((m as { tool_calls: ToolCallOf[] }).tool_calls ?? []) : [];
}

/**
 * The model's conversation: the latest summary (if the session was compacted) followed by the messages
 * still in context. A reply cut by a crash ends with the interrupted marker; tool calls without a result
 * get one saying so, so the next request is a valid conversation.
 */
export function restoreConversation(rows: readonly SessionRow[]): RestoredMessage[] {
  const live = rows.filter((r) => r.inContext && (r.kind === 'message' || r.kind === 'summary'));
  const summary = [...live].reverse().find((r) => r.kind === 'summary');
  const out: RestoredMessage[] = [];
  if (summary) {
    const text = (summary.message as { summary?: string } | null)?.summary ?? '';
    for (const m of compactedHistory(text, [], summary.id)) out.push({ message: m, rowId: summary.id });
  }
  for (const r of live) {
    if (r.kind !== 'message' || r.message === null) continue;
    const m = r.message as ChatMessage;
    if (r.partial) {
      const text = typeof m.content === 'string' ? m.content : '';
      out.push({ message: interruptedAssistantMessage(text), rowId: r.id });
    } else {
      out.push({ message: m, rowId: r.id });
    }
  }
  return repairToolCalls(out);
}

/** Every assistant tool call is followed by its result; results without their call are dropped. */
function repairToolCalls(msgs: RestoredMessage[]): RestoredMessage[] {
  const out: RestoredMessage[] = [];
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i].message;
    if (m.role === 'tool') continue; // placed with their call below
    out.push(msgs[i]);
    const calls = toolCalls(m);
    if (calls.length === 0) continue;
    const results = new Map<string, RestoredMessage>();
    let j = i + 1;
    for (; j < msgs.length && msgs[j].message.role === 'tool'; j++) {
      results.set((msgs[j].message as { tool_call_id: string }).tool_call_id, msgs[j]);
    }
    for (const c of calls) {
      out.push(results.get(c.id) ?? { message: { role: 'tool', tool_call_id: c.id, content: JSON.stringify(UNFINISHED_CALL) }, rowId: null });
    }
    i = j - 1;
  }
  return out;
}

/** One entry of the chat transcript, as Lua renders it (see lua/caboose/chat/load.lua `load`). */
export type TranscriptItem =
  | { t: 'user'; text: string; labels?: string[] }
  | { t: 'text'; text: string; interrupted?: boolean }
  /** The model's reasoning before a reply (shown folded). */
  | { t: 'thinking'; text: string }
  | { t: 'tool'; id: string; text: string; status: ToolStatus | 'running'; summary?: string; details?: string[] }
  | { t: 'notice'; text: string }
  | { t: 'error'; text: string }
  | { t: 'rules'; lines: string[] };

function parseArgs(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

function parseResult(content: unknown): ToolResult {
  try {
    const r = JSON.parse(typeof content === 'string' ? content : '') as ToolResult;
    if (r && typeof r === 'object' && 'ok' in r) return r;
  } catch {
    // a stub or plain text: shown as a success without details
  }
  return { ok: true, data: {} };
}

/** What the chat shows of an assistant message (stored with it, so reopening parses no tool output). */
export interface AssistantDisplay {
  text: string;
  /** The model's reasoning before the reply (the chat shows it folded). */
  thinking?: string;
  interrupted?: boolean;
  calls?: { id: string; text: string }[];
}

/** What the chat shows of a tool result. */
export interface ToolDisplay {
  id: string;
  status: ToolStatus;
  summary?: string;
  details?: string[];
}

export function assistantDisplay(m: ChatMessage, partial = false): AssistantDisplay {
  let text = typeof m.content === 'string' ? m.content : '';
  const interrupted = partial || text.endsWith(INTERRUPTED_MARKER);
  if (text.endsWith(INTERRUPTED_MARKER)) text = text.slice(0, -INTERRUPTED_MARKER.length).replace(/\s+$/, '');
  const calls = toolCalls(m).map((c) => ({ id: c.id, text: summarizeToolCall(c.function.name, parseArgs(c.function.arguments)) }));
  const reasoning = (m as { caboose?: { reasoning?: unknown } }).caboose?.reasoning;
  const thinking = typeof reasoning === 'string' && reasoning !== '' ? reasoning : undefined;
  return { text, ...(thinking ? { thinking } : {}), ...(interrupted ? { interrupted: true } : {}), ...(calls.length > 0 ? { calls } : {}) };
}

export function toolDisplay(id: string, name: string, args: unknown, content: unknown): ToolDisplay {
  const view = describeToolResult(name, args, parseResult(content));
  return { id, status: view.status, summary: view.summary, ...(view.details.length > 0 ? { details: view.details } : {}) };
}

/** A row as the transcript needs it: its stored display, or the message when it has none. */
export interface DisplayRow {
  kind: SessionRow['kind'];
  role: string | null;
  display: unknown;
  message: unknown;
  text: string;
  partial: boolean;
}

/** What the chat showed, rebuilt from every row (compacted ones included). */
export function transcriptItems(rows: readonly DisplayRow[]): TranscriptItem[] {
  const items: TranscriptItem[] = [];
  const calls = new Map<string, { item: Extract<TranscriptItem, { t: 'tool' }>; name: string; args: unknown }>();
  for (const r of rows) {
    if (r.kind === 'notice' || r.kind === 'error') {
      items.push({ t: r.kind, text: r.text });
      continue;
    }
    if (r.kind === 'rules') {
      const lines = (r.display as { lines?: unknown } | null)?.lines;
      if (Array.isArray(lines) && lines.length > 0) items.push({ t: 'rules', lines: lines.map(String) });
      continue;
    }
    if (r.kind !== 'message') continue;
    const m = (r.message ?? null) as ChatMessage | null;
    if (r.role === 'user') {
      const d = (r.display ?? null) as (UserDisplay & { media?: boolean }) | null;
      if (d?.media) continue; // a tool's images passed to the model

      items.push({ t: 'user', text: d?.text ?? (typeof m?.content === 'string' ? m.content : ''), ...(d?.labels?.length ? { labels: d.labels } : {}) });
    } else if (r.role === 'assistant') {
      const d = r.display && !r.partial ? (r.display as AssistantDisplay) : m ? assistantDisplay(m, r.partial) : null;
      if (!d) continue;
      if (d.thinking) items.push({ t: 'thinking', text: d.thinking });
      if (d.text !== '' || d.interrupted) items.push({ t: 'text', text: d.text, ...(d.interrupted ? { interrupted: true } : {}) });
      const raw = m ? toolCalls(m) : [];
      for (const c of d.calls ?? []) {
        const item = { t: 'tool' as const, id: c.id, text: c.text, status: 'cancelled' as ToolStatus | 'running' };
        const rc = raw.find((x) => x.id === c.id);
        calls.set(c.id, { item, name: rc?.function.name ?? '', args: rc ? parseArgs(rc.function.arguments) : null });
        items.push(item);
      }
    } else if (r.role === 'tool') {
      const d = (r.display ?? null) as ToolDisplay | null;
      const id = d?.id ?? (m as { tool_call_id?: string } | null)?.tool_call_id ?? '';
      const call = calls.get(id);
      if (!call) continue;
      const view = d ?? toolDisplay(id, call.name, call.args, m?.content);
      call.item.status = view.status;
      if (view.summary !== undefined) call.item.summary = view.summary;
      if (view.details) call.item.details = view.details;
    }
  }
  return items;
}

/** Searchable text of a message row: what was said, the tools called, what they returned. */
export function indexText(m: ChatMessage, display?: UserDisplay): string {
  if (m.role === 'user') return display?.text ?? (typeof m.content === 'string' ? m.content : '');
  const parts: string[] = [];
  if (typeof m.content === 'string') parts.push(m.content);
  for (const c of toolCalls(m)) parts.push(summarizeToolCall(c.function.name, parseArgs(c.function.arguments)));
  return parts.join('\n');
}

/** The first words of a message: the title until the model names the session. */
export function fallbackTitle(text: string, maxWords = 6): string {
  const words = text.replace(/\s+/g, ' ').trim().split(' ').filter(Boolean);
  const t = words.slice(0, maxWords).join(' ');
  return words.length > maxWords ? `${t}…` : t || 'untitled';
}
