/**
 * Reading an OpenAI-compatible chat completion stream as real servers send it (pure; no HTTP, no SDK).
 *
 * - `readSse(body)`: the response body's Server-Sent Events → `data` payloads, `[DONE]`, and errors sent
 *   inside the 200 stream in any of the three shapes seen in the wild: `data: {"error": …}`, an
 *   `event: error` event, and llama.cpp's bare `error: {…}` line (not an SSE field: the SDK drops it).
 *   Parsing is eventsource-parser's (spec-conformant: CRLF, comments, multi-line data).
 * - `StreamAssembler`: chunk objects → text, reasoning, tool calls, usage, finish, tolerant of content as an
 *   array of typed parts (Mistral), missing `finish_reason`, repeated `index` (Ollama), repeated names,
 *   continuation chunks without `index` (Gemini), empty or repeated ids (Gemini, Qwen), and the reasoning
 *   fields `reasoning_content` / `reasoning` / `reasoning_text` / `reasoning_details` / `thinking` parts.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export type SseItem = { kind: 'data'; data: unknown } | { kind: 'done' } | { kind: 'error'; error: StreamErrorInfo } | { kind: 'invalid'; text: string };

/** An error the server reported inside a stream, normalized. */
export interface StreamErrorInfo {
  message: string;
  /** HTTP-like status when the error names one (numeric `code`/`status`), else undefined. */
  status?: number;
  /** The error's string code or type (`rate_limit_exceeded`, `server_error`, `invalid_request_error`…). */
  code?: string;
}

/** Reads SSE items from a byte stream. */
export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseItem> {
  for await (const items of readSseBatches(body)) yield* items;
}

/** readSse's items, as one array per read of the byte stream (one async step per read, not per event). */
export async function* readSseBatches(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseItem[]> {
  const sse = new SseDecoder();
  for await (const bytes of body) {
    const items = sse.push(bytes);
    if (items.length > 0) yield items;
  }
  const last = sse.end();
  if (last.length > 0) yield last;
}

/**
 * readSse's parser without the async steps: bytes in, the items they complete out (synchronously). The
 * provider reads the body with it directly, one async step per network read for the whole path.
 */
export class SseDecoder {
  private pending: SseItem[] = [];
  private readonly decoder = new TextDecoder();
  private readonly parser = createParser({
    onEvent: (ev: EventSourceMessage) => {
      for (const it of itemsFromEvent(ev.event, ev.data)) this.pending.push(it);
    },
    onError: (err) => {
      // An unknown field: llama.cpp writes `error: {json}` as its own line.
      const e = err as { type?: string; field?: string; value?: string };
      if (e.type === 'unknown-field' && e.field === 'error' && typeof e.value === 'string') {
        this.pending.push({ kind: 'error', error: errorInfo(parseJson(e.value) ?? e.value) });
      }
    },
  });

  /** The items completed by these bytes (often none: an event split over reads waits for its end). */
  push(bytes: Uint8Array): SseItem[] {
    this.parser.feed(this.decoder.decode(bytes, { stream: true }));
    return this.take();
  }

  /** The body ended: what is left (a last event without its blank line still counts). */
  end(): SseItem[] {
    this.parser.feed(this.decoder.decode());
    this.parser.feed('\n\n');
    return this.take();
  }

  private take(): SseItem[] {
    if (this.pending.length === 0) return NO_ITEMS;
    const out = this.pending;
    this.pending = [];
    return out;
  }
}

const NO_ITEMS: SseItem[] = Object.freeze([]) as unknown as SseItem[];

function itemsFromEvent(event: string | undefined, data: string): SseItem[] {
  const trimmed = data.trim();
  if (trimmed === '[DONE]') return [{ kind: 'done' }];
  if (trimmed === '') return [];
  const json = parseJson(trimmed);
  if (event === 'error') return [{ kind: 'error', error: errorInfo(json ?? trimmed) }];
  if (json === undefined) return [{ kind: 'invalid', text: trimmed.slice(0, 200) }];
  if (isRecord(json) && json.error !== undefined && json.error !== null) {
    // OpenRouter sends the error beside (possibly empty) choices; anything the chunk carried before the error
    // is kept by sending the chunk first.
    return [{ kind: 'data', data: json }, { kind: 'error', error: errorInfo(json.error) }];
  }
  // An error object alone, without an `error` key: `{"object":"error", message, type, code}` (older vLLM
  // releases, FastChat-style servers).
  if (isRecord(json) && json.object === 'error' && typeof json.message === 'string' && !Array.isArray(json.choices)) {
    return [{ kind: 'error', error: errorInfo(json) }];
  }
  return [{ kind: 'data', data: json }];
}

/** Any error shape (`{error:{…}}`, `{message, code}`, a string) → message, status, code. */
export function errorInfo(raw: unknown): StreamErrorInfo {
  if (typeof raw === 'string') return { message: raw.slice(0, 500) };
  if (!isRecord(raw)) return { message: 'the server reported an error' };
  if (isRecord(raw.error)) return errorInfo(raw.error);
  const message = typeof raw.message === 'string' ? raw.message : typeof raw.error === 'string' ? raw.error : JSON.stringify(raw).slice(0, 300);
  const info: StreamErrorInfo = { message };
  for (const v of [raw.status, raw.code, raw.status_code, raw.statusCode]) {
    if (typeof v === 'number' && v >= 100 && v < 600) {
      info.status = v;
      break;
    }
    if (typeof v === 'string' && /^\d{3}$/.test(v)) {
      info.status = Number(v);
      break;
    }
  }
  for (const v of [raw.code, raw.type, raw.status]) {
    if (typeof v === 'string' && !/^\d+$/.test(v)) {
      info.code = v;
      break;
    }
  }
  return info;
}

/* ------------------------------------------------------------------------------------------------
 * Chunk assembly
 * ---------------------------------------------------------------------------------------------- */

export interface StreamUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Prompt tokens served from the provider's cache (only when the server reported a figure above zero). */
  cachedTokens?: number;
  /** Completion tokens spent reasoning (only when above zero). */
  reasoningTokens?: number;
}

export interface AssembledCall {
  /** Our own id, unique in the session: what the transcript, the store and recall key on. */
  id: string;
  /** The provider's id when it sent a non-empty one that no other call of this reply used. */
  providerId?: string;
  name: string;
  arguments: string;
  /**
   * The call's `extra_content` as the provider sent it (Gemini 3 on its OpenAI-compatible endpoint puts the
   * call's `google.thought_signature` there and refuses the next request unless it comes back with the call).
   */
  extraContent?: Record<string, unknown>;
}

export type AssemblerEvent =
  | { type: 'text'; delta: string }
  | { type: 'reasoning'; delta: string }
  | { type: 'tool_call_delta'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'usage'; usage: StreamUsage };

interface Slot {
  ownId: string;
  providerId?: string;
  index?: number;
  name: string;
  arguments: string;
  extraContent?: Record<string, unknown>;
}

/** A tool call id of our own: 9 letters/digits (the strictest format a provider accepts back: Mistral's). */
export function ownToolCallId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  // node:crypto loaded here, not with the module: a cold start's first request does not need it (issue 24).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const bytes = (require('node:crypto') as typeof import('node:crypto')).randomBytes(9);
  let s = '';
  for (const b of bytes) s += alphabet[b % alphabet.length];
  return s;
}

export class StreamAssembler {
  text = '';
  reasoning = '';
  /** Copilot's signed reasoning: it must go back with the assistant message for the model to continue. */
  reasoningOpaque = '';
  finishReason: string | undefined;
  usage: StreamUsage | undefined;
  sawChunk = false;
  private readonly slots: Slot[] = [];

  constructor(private readonly makeId: () => string = ownToolCallId) {}

  /** One parsed chunk → the events it carries. */
  push(chunk: unknown): AssemblerEvent[] {
    if (!isRecord(chunk)) return [];
    this.sawChunk = true;
    const out: AssemblerEvent[] = [];
    const usage = parseUsage(chunk.usage);
    // llama.cpp says how many prompt tokens it reused from its cache in `timings.cache_n`, not in usage.
    const cacheN = isRecord(chunk.timings) && typeof chunk.timings.cache_n === 'number' ? chunk.timings.cache_n : 0;
    if (usage && usage.cachedTokens === undefined && cacheN > 0 && Number.isFinite(cacheN)) usage.cachedTokens = cacheN;
    if (usage) {
      this.usage = usage;
      out.push({ type: 'usage', usage });
    }
    // One reply is asked for (n = 1); a server that still splits it over several choices (GitHub
    // Copilot puts a tool call in a second choice) is read choice after choice.
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      if (!isRecord(choice)) continue;
      // A server answering a stream with one whole `message` (no deltas) is read like a delta; a final
      // `message` repeating what the deltas already said is not.
      const whole = isRecord(choice.message) && this.text === '' && this.reasoning === '' && this.slots.length === 0 ? choice.message : undefined;
      const delta = isRecord(choice.delta) ? choice.delta : whole;
      if (delta) {
        // One reasoning field per delta: a server sending the same text under two names (`reasoning` beside
        // `reasoning_details` on OpenRouter, or beside `reasoning_content` on servers moving from one name to
        // the other) gives it once. `reasoning_details` alone carries it on Snowflake Cortex (encrypted
        // entries are not text).
        const r = reasoningOf(delta);
        if (r.length > 0) this.addReasoning(r, out);
        if (typeof delta.reasoning_opaque === 'string') this.reasoningOpaque += delta.reasoning_opaque;
        this.addContent(delta.content, out);
        // OpenAI's refusal is what the model says instead of a reply: shown as the reply.
        if (typeof delta.refusal === 'string') this.addContent(delta.refusal, out);
        if (Array.isArray(delta.tool_calls)) {
          const touched = new Set<Slot>();
          for (const tc of delta.tool_calls) this.addToolCall(tc, out, touched);
        }
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason.length > 0) this.finishReason = choice.finish_reason;
    }
    return out;
  }

  private addReasoning(r: string, out: AssemblerEvent[]): void {
    this.reasoning += r;
    out.push({ type: 'reasoning', delta: r });
  }

  private addContent(content: unknown, out: AssemblerEvent[]): void {
    if (typeof content === 'string') {
      if (content.length === 0) return;
      this.text += content;
      out.push({ type: 'text', delta: content });
      return;
    }
    if (!Array.isArray(content)) return;
    for (const part of content) {
      if (typeof part === 'string') {
        this.addContent(part, out);
        continue;
      }
      if (!isRecord(part)) continue;
      if (part.type === 'text' && typeof part.text === 'string') this.addContent(part.text, out);
      else if (part.type === 'thinking' || part.type === 'reasoning') {
        const t = partText(part.thinking ?? part.reasoning ?? part.text);
        if (t.length > 0) this.addReasoning(t, out);
      }
      // Unknown part types (images, references…) are not reply text.
    }
  }

  /** `touched`: the calls earlier entries of the same chunk went to (a second entry is another call). */
  private addToolCall(tc: unknown, out: AssemblerEvent[], touched: Set<Slot>): void {
    if (!isRecord(tc)) return;
    const fn = isRecord(tc.function) ? tc.function : {};
    const id = typeof tc.id === 'string' && tc.id.length > 0 ? tc.id : undefined;
    const index = typeof tc.index === 'number' ? tc.index : undefined;
    const name = typeof fn.name === 'string' && fn.name.length > 0 ? fn.name : undefined;
    const args = typeof fn.arguments === 'string' ? fn.arguments : fn.arguments !== undefined && fn.arguments !== null ? JSON.stringify(fn.arguments) : '';
    let slot: Slot | undefined;
    if (id !== undefined) {
      // By id first: a repeated id continues its call, unless it clearly starts another (another name).
      slot = [...this.slots].reverse().find((s) => s.providerId === id);
      if (slot && name !== undefined && slot.name !== '' && slot.name !== name) slot = undefined;
      if (slot && index !== undefined && slot.index !== undefined && slot.index !== index) slot = undefined;
      if (!slot) {
        // The id may arrive after the call opened (rare): an open slot at this index without an id takes it.
        const open = index !== undefined ? this.lastAt(index) : undefined;
        if (open && open.providerId === undefined && open.name === '' && open.arguments === '') slot = open;
      }
    } else if (index !== undefined) {
      slot = this.lastAt(index);
    } else {
      // Without id or index (Gemini): a continuation joins the open call, unless it plainly starts another
      // one (another entry of the same chunk, another name, or a name after complete arguments).
      slot = this.slots.at(-1);
      if (slot && touched.has(slot)) slot = undefined;
      if (slot && name !== undefined && slot.name !== '' && (slot.name !== name || isCompleteJson(slot.arguments))) slot = undefined;
    }
    if (!slot) {
      slot = { ownId: this.makeId(), name: '', arguments: '', ...(index !== undefined ? { index } : {}) };
      this.slots.push(slot);
    }
    touched.add(slot);
    if (id !== undefined && slot.providerId === undefined) slot.providerId = id;
    if (index !== undefined) slot.index = index;
    if (name !== undefined && slot.name !== name) slot.name += name; // a repeated name is never appended
    slot.arguments += args;
    if (isRecord(tc.extra_content)) slot.extraContent = mergeExtra(slot.extraContent, tc.extra_content);
    const pos = this.slots.indexOf(slot);
    out.push({ type: 'tool_call_delta', index: pos, id: slot.ownId, ...(name !== undefined ? { name } : {}), argumentsDelta: args });
  }

  private lastAt(index: number): Slot | undefined {
    for (let i = this.slots.length - 1; i >= 0; i--) if (this.slots[i].index === index) return this.slots[i];
    return undefined;
  }

  /** The calls of the reply. A provider id used by two calls is not unique: neither keeps it. */
  calls(): AssembledCall[] {
    const counts = new Map<string, number>();
    for (const s of this.slots) if (s.providerId !== undefined) counts.set(s.providerId, (counts.get(s.providerId) ?? 0) + 1);
    return this.slots
      .filter((s) => s.name !== '' || s.arguments !== '')
      .map((s) => ({
        id: s.ownId,
        ...(s.providerId !== undefined && counts.get(s.providerId) === 1 ? { providerId: s.providerId } : {}),
        name: s.name,
        arguments: s.arguments,
        ...(s.extraContent !== undefined ? { extraContent: s.extraContent } : {}),
      }));
  }
}

/** Provider extras of one call spread over chunks: objects merged key by key, anything else replaced. */
function mergeExtra(into: Record<string, unknown> | undefined, add: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(into ?? {}) };
  for (const [k, v] of Object.entries(add)) out[k] = isRecord(v) && isRecord(out[k]) ? mergeExtra(out[k] as Record<string, unknown>, v) : v;
  return out;
}

function isCompleteJson(s: string): boolean {
  if (s.trim() === '') return false;
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

function partText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(partText).join('');
  if (isRecord(v) && typeof v.text === 'string') return v.text;
  return '';
}

/** The reasoning text of one delta (see `push`): the first named field that has some, else `reasoning_details`. */
function reasoningOf(delta: Record<string, unknown>): string {
  for (const key of ['reasoning_content', 'reasoning', 'reasoning_text', 'thinking'] as const) {
    const r = delta[key];
    if (typeof r === 'string' && r.length > 0) return r;
  }
  if (!Array.isArray(delta.reasoning_details)) return '';
  let text = '';
  for (const d of delta.reasoning_details) {
    if (!isRecord(d)) continue;
    if (d.type === 'reasoning.text' && typeof d.text === 'string') text += d.text;
    else if (d.type === 'reasoning.summary' && typeof d.summary === 'string') text += d.summary;
  }
  return text;
}

/** Usage with details; zero placeholders (cached 0, reasoning 0, an all-zero usage) are left out. */
export function parseUsage(raw: unknown): StreamUsage | undefined {
  if (!isRecord(raw)) return undefined;
  const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
  const promptTokens = num(raw.prompt_tokens);
  const completionTokens = num(raw.completion_tokens);
  const totalTokens = num(raw.total_tokens) || promptTokens + completionTokens;
  if (promptTokens === 0 && completionTokens === 0 && totalTokens === 0) return undefined;
  const usage: StreamUsage = { promptTokens, completionTokens, totalTokens };
  const pd = isRecord(raw.prompt_tokens_details) ? raw.prompt_tokens_details : {};
  const cd = isRecord(raw.completion_tokens_details) ? raw.completion_tokens_details : {};
  const cached = Math.max(num(pd.cached_tokens), num(raw.prompt_cache_hit_tokens));
  if (cached > 0) usage.cachedTokens = cached;
  const reasoning = num(cd.reasoning_tokens) || num(raw.reasoning_tokens);
  if (reasoning > 0) usage.reasoningTokens = reasoning;
  return usage;
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/* ------------------------------------------------------------------------------------------------
 * What goes back to the server
 * ---------------------------------------------------------------------------------------------- */

/**
 * What the conversation keeps beside an assistant message (never sent as such): the model that wrote it,
 * the provider's own ids of its tool calls (our ids → theirs), its reasoning, and Copilot's opaque
 * reasoning token.
 */
export interface AssistantMeta {
  model?: string;
  providerIds?: Record<string, string>;
  reasoning?: string;
  reasoningOpaque?: string;
  /** Our call id → the `extra_content` the provider attached to that call (Gemini's thought signatures). */
  callExtras?: Record<string, Record<string, unknown>>;
}

export const META_KEY = 'caboose';

/**
 * The conversation as the server must see it: our metadata removed, each tool call under the id the
 * provider gave it (its tool result too), reasoning left out — except Copilot's opaque token, which the
 * provider requires back with the reasoning text it signed, and each call's `extra_content` (Gemini 3's
 * thought signature, likewise required back with its call). DeepSeek, on the contrary, rejects
 * `reasoning_content` in the input; every other provider ignores or does not need it.
 * `model`: the model the request goes to. What a provider gave (its call ids, signatures, opaque reasoning)
 * goes back only to the model that wrote the message; after a switch the other model gets our own ids
 * (valid everywhere) and none of those fields, which it would not know and might refuse.
 */
export function toWireMessages<M extends object>(messages: readonly M[], model?: string): M[] {
  const own = (meta: AssistantMeta | undefined): AssistantMeta | undefined =>
    meta === undefined || model === undefined || meta.model === undefined || meta.model === model ? meta : undefined;
  const ids = new Map<string, string>();
  for (const m of messages) {
    const meta = own((m as Record<string, unknown>)[META_KEY] as AssistantMeta | undefined);
    for (const [ours, theirs] of Object.entries(meta?.providerIds ?? {})) ids.set(ours, theirs);
  }
  return messages.map((m) => {
    const r = m as Record<string, unknown>;
    const stored = r[META_KEY] as AssistantMeta | undefined;
    const meta = own(stored);
    const needsIds = ids.size > 0 && (Array.isArray(r.tool_calls) || typeof r.tool_call_id === 'string');
    if (stored === undefined && !needsIds && !('reasoning_content' in r)) return m;
    const out: Record<string, unknown> = { ...r };
    delete out[META_KEY];
    delete out.reasoning_content;
    if (Array.isArray(r.tool_calls)) {
      out.tool_calls = (r.tool_calls as Record<string, unknown>[]).map((c) => {
        const ours = typeof c.id === 'string' ? c.id : undefined;
        const extra = ours !== undefined ? meta?.callExtras?.[ours] : undefined;
        const withExtra = extra !== undefined ? { ...c, extra_content: extra } : c;
        return ours !== undefined && ids.has(ours) ? { ...withExtra, id: ids.get(ours) } : withExtra;
      });
    }
    if (typeof r.tool_call_id === 'string' && ids.has(r.tool_call_id)) out.tool_call_id = ids.get(r.tool_call_id);
    if (meta?.reasoningOpaque) {
      out.reasoning_opaque = meta.reasoningOpaque;
      if (meta.reasoning) out.reasoning_text = meta.reasoning;
    }
    return out as M;
  });
}
