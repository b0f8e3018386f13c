/** What the model sees of a long conversation. Pure: the agent's own history is never altered. */
import type { ChatMessage } from './provider';

export const PRUNED_TOOL_OUTPUT = '[output truncated]';
/** Tool outputs of this many most recent user turns are sent in full. */
export const DEFAULT_KEEP_TOOL_OUTPUT_TURNS = 3;
/** Outputs this short are cheaper to keep than to prune (errors, small results). */
export const KEEP_SHORT_OUTPUT_CHARS = 300;

/** Where an old tool output is kept: the id `recall` takes. Undefined = not stored (marker only). */
export type StoredRef = (m: ChatMessage) => number | undefined;

/** The stub that stands in the prompt for an output kept in cold storage. */
export function storedOutputStub(id: number, tool: string, chars: number): string {
  const size = chars >= 1024 ? `${(chars / 1024).toFixed(1)} KB` : `${chars} chars`;
  return `[${tool} output (${size}) moved out of the prompt; stored as #${id} — call recall with id ${id} to read it]`;
}

/**
 * Old tool outputs are the largest consumers of context: after `keepTurns` further user messages, a
 * tool message's content is replaced by a stub naming where the output is stored (the call itself and
 * the assistant text remain). A stub only ever replaces the same output, so the prompt prefix stays stable.
 */
export function pruneToolOutputs(history: readonly ChatMessage[], keepTurns = DEFAULT_KEEP_TOOL_OUTPUT_TURNS, stored?: StoredRef): ChatMessage[] {
  const names = new Map<string, string>();
  for (const m of history) {
    const calls = (m as { tool_calls?: { id: string; function: { name: string } }[] }).tool_calls;
    if (m.role === 'assistant' && Array.isArray(calls)) for (const c of calls) names.set(c.id, c.function.name);
  }
  // Walking backwards, `laterUsers` counts the user messages after index i: 0 in the current turn.
  let laterUsers = 0;
  const out = new Array<ChatMessage>(history.length);
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (m.role === 'user') laterUsers++;
    if (laterUsers >= keepTurns && m.role === 'tool' && typeof m.content === 'string' && m.content.length > KEEP_SHORT_OUTPUT_CHARS) {
      const id = stored?.(m);
      const tool = names.get((m as { tool_call_id: string }).tool_call_id) ?? 'tool';
      out[i] = { ...m, content: id === undefined ? PRUNED_TOOL_OUTPUT : storedOutputStub(id, tool, m.content.length) };
    } else {
      out[i] = m;
    }
  }
  return out;
}

/** One tool output `fitToolOutputs` replaced: its index in the prompt, and its stored id when stubbed. */
export interface FittedOutput {
  index: number;
  storedAs?: number;
}

/**
 * Brings `prompt` within `budgetTokens` (estimateTokens) by replacing tool outputs, the largest first: with
 * the stub naming their stored id (recall reads them back), or, for a `recall` output (a stub would send
 * the model in a circle) or one not stored, with its beginning and a notice. Outputs already stubbed and
 * short ones are left alone. Pure: returns the new prompt and what it replaced.
 */
export function fitToolOutputs(prompt: readonly ChatMessage[], budgetTokens: number, storedAt: (index: number) => number | undefined): { prompt: ChatMessage[]; replaced: FittedOutput[] } {
  const out = [...prompt];
  const names = new Map<string, string>();
  for (const m of prompt) {
    const calls = (m as { tool_calls?: { id: string; function: { name: string } }[] }).tool_calls;
    if (m.role === 'assistant' && Array.isArray(calls)) for (const c of calls) names.set(c.id, c.function.name);
  }
  const candidates = prompt
    .map((m, index) => ({ m, index }))
    .filter(({ m }) => m.role === 'tool' && typeof m.content === 'string' && m.content.length > KEEP_SHORT_OUTPUT_CHARS && !m.content.startsWith('['))
    .sort((a, b) => (b.m.content as string).length - (a.m.content as string).length || a.index - b.index);
  const replaced: FittedOutput[] = [];
  let used = estimateTokens(out);
  for (const { m, index } of candidates) {
    if (used <= budgetTokens) break;
    const content = m.content as string;
    const tool = names.get((m as { tool_call_id: string }).tool_call_id) ?? 'tool';
    const id = tool === 'recall' ? undefined : storedAt(index);
    let next: string;
    if (id !== undefined) next = storedOutputStub(id, tool, content.length);
    else {
      const excessChars = (used - budgetTokens) * 4;
      const keep = Math.max(KEEP_SHORT_OUTPUT_CHARS, content.length - excessChars - 200);
      if (keep >= content.length) continue;
      next = `${content.slice(0, keep)}\n[${tool} output cut from ${content.length} to ${keep} characters to fit the context window${tool === 'recall' ? '; recall a smaller slice (lineCount) for the rest' : ''}]`;
    }
    out[index] = { ...m, content: next } as ChatMessage;
    replaced.push({ index, ...(id !== undefined ? { storedAs: id } : {}) });
    used = estimateTokens(out);
  }
  return { prompt: out, replaced: replaced.sort((a, b) => a.index - b.index) };
}

/** Compaction starts when the last request used this share of the context window. */
export const DEFAULT_COMPACT_AT = 0.8;

export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';

export const SUMMARIZE_INSTRUCTION = [
  'The conversation is about to be compacted: everything above will be replaced by your summary. Write it so',
  'that you can continue the work without the rest, under exactly these headings:',
  '',
  "## Intent\nThe user's goals, requests and constraints, in their words where it matters.",
  '## Files touched\nEvery file read, created, changed, moved or deleted (paths), and its current state.',
  '## Decisions\nWhat was decided or agreed, and why; approaches rejected.',
  '## Progress\nWhat is done, commands run and what they showed, errors met.',
  '## Next steps\nWhat remains, in order, and any open question for the user.',
  '',
  'Be concise but complete; keep exact names, paths and numbers. Answer with the summary only.',
].join('\n');

/** A rough token count (4 characters a token) of messages about to be sent. */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') chars += m.content.length;
    const calls = (m as { tool_calls?: { function: { arguments: string } }[] }).tool_calls;
    if (Array.isArray(calls)) for (const c of calls) chars += c.function.arguments.length + 32;
    chars += 8;
  }
  return Math.ceil(chars / 4);
}

/** True when the last reported usage crossed `compactAt` of the window. */
export function needsCompaction(usedTokens: number | undefined, contextWindow: number | undefined, compactAt = DEFAULT_COMPACT_AT): boolean {
  if (!contextWindow || usedTokens === undefined) return false;
  return usedTokens >= contextWindow * compactAt;
}

/**
 * Splits the history for compaction: everything before the current turn's user message is summarized;
 * the current turn (its user message and what followed) is kept verbatim. Null when nothing is old enough,
 * or when the head is only the summary of the previous compaction.
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
  const head = history.slice(0, lastUser);
  // Only the last compaction's summary and its acknowledgement (a long turn's later steps): summarizing
  // it again frees nothing and would cost a request at every step.
  if (head.length <= 2 && typeof head[0].content === 'string' && head[0].content.startsWith(SUMMARY_PREFIX)) return null;
  return { head, tail: history.slice(lastUser) };
}

/** Share of the context window the messages of a summary request may fill (the rest: instruction, answer). */
export const SUMMARY_INPUT_SHARE = 0.6;

/**
 * The messages a summary request sends, within `budgetTokens` (estimateTokens): a message longer than a
 * quarter of the budget keeps its beginning and end around a cut notice (huge tool arguments likewise),
 * and when that is not enough the oldest turns are left out (every message stays archived for `recall`).
 * Without this, one 10 MB reply made every later summary request, and so every later message, fail.
 */
export function fitForSummary(head: readonly ChatMessage[], budgetTokens: number): ChatMessage[] {
  const maxChars = Math.max(2_000, Math.floor(budgetTokens)); // a quarter of the budget (4 characters a token)
  const cut = (text: string): string => {
    if (text.length <= maxChars) return text;
    const keepHead = Math.floor(maxChars * 0.6);
    const keepTail = maxChars - keepHead;
    return `${text.slice(0, keepHead)}\n[… ${text.length - keepHead - keepTail} characters cut for the summary …]\n${text.slice(text.length - keepTail)}`;
  };
  let out: ChatMessage[] = head.map((m) => {
    let next = m;
    if (typeof m.content === 'string' && m.content.length > maxChars) next = { ...next, content: cut(m.content) } as ChatMessage;
    const calls = (m as { tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] }).tool_calls;
    if (m.role === 'assistant' && Array.isArray(calls) && calls.some((c) => c.function.arguments.length > maxChars)) {
      const small = calls.map((c) =>
        c.function.arguments.length <= maxChars
          ? c
          : { ...c, function: { ...c.function, arguments: JSON.stringify({ cut_for_summary: `${c.function.arguments.length} characters of arguments`, start: c.function.arguments.slice(0, 500) }) } },
      );
      next = { ...next, tool_calls: small } as ChatMessage;
    }
    return next;
  });
  let omitted = 0;
  while (out.length > 0 && estimateTokens(out) > budgetTokens) {
    // Whole turns go, oldest first, so no tool result is left without its call.
    let next = out.findIndex((m, i) => i > 0 && m.role === 'user');
    if (next === -1) next = out.length;
    omitted += next;
    out = out.slice(next);
  }
  if (omitted > 0) out.unshift({ role: 'user', content: `[${omitted} earlier messages are left out of this summary request; they stay archived.]` });
  return out;
}

/** The history after compaction: the summary stands in for the head. */
export function compactedHistory(summary: string, tail: readonly ChatMessage[], archivedAs?: number): ChatMessage[] {
  const where = archivedAs === undefined ? '' : `\n\n(The full earlier conversation is archived as #${archivedAs}: call recall with id ${archivedAs} to read it.)`;
  return [{ role: 'user', content: `${SUMMARY_PREFIX}\n${summary.trim()}${where}` }, { role: 'assistant', content: 'Understood. Continuing from the summary.' }, ...tail];
}

/** Context windows (tokens) of common models, matched on the model id (most specific first). */
const KNOWN_WINDOWS: [RegExp, number][] = [
  [/gpt-4\.1/, 1_047_576],
  [/gpt-5/, 400_000],
  [/gpt-4o|gpt-4-turbo|chatgpt-4o/, 128_000],
  [/gpt-4-32k/, 32_768],
  [/gpt-4(?!\.|o)/, 8_192],
  [/gpt-3\.5-turbo/, 16_385],
  [/\bo[134](-mini|-pro)?\b/, 200_000],
  [/claude/, 200_000],
  [/gemini-(1\.5|2|3)/, 1_048_576],
  [/deepseek/, 64_000],
  [/llama-?3\.[1-3]|llama-?4/, 128_000],
  [/llama-?3/, 8_192],
  [/qwen.*coder|qwen-?2\.5|qwen-?3/, 32_768],
  [/mistral-large|codestral|mistral-small|mistral-medium/, 128_000],
  [/mixtral|mistral/, 32_768],
  [/grok/, 131_072],
];

/** Used when nothing says better: small enough for most servers; a context-length error still compacts. */
export const DEFAULT_CONTEXT_WINDOW = 32_000;

/** The window of a well-known model, or undefined. */
export function knownContextWindow(model: string): number | undefined {
  const id = model.toLowerCase().replace(/^.*\//, '');
  return KNOWN_WINDOWS.find(([re]) => re.test(id))?.[1];
}

/** A model list entry's own window (OpenRouter, vLLM, LM Studio, llama.cpp and others name it differently). */
export function listedContextWindow(entry: unknown): number | undefined {
  if (!entry || typeof entry !== 'object') return undefined;
  const e = entry as Record<string, unknown>;
  const meta = (e.meta ?? {}) as Record<string, unknown>;
  const top = (e.top_provider ?? {}) as Record<string, unknown>;
  for (const v of [e.context_length, e.context_window, e.max_context_length, e.max_model_len, e.max_input_tokens, top.context_length, meta.n_ctx, meta.n_ctx_train]) {
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return Math.floor(v);
  }
  return undefined;
}
