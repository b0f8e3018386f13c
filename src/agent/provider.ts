/**
 * The model client: OpenAI-compatible Chat Completions, streamed, abortable, with our own retry loop.
 *
 * Layering: this file knows HTTP/SDK details and nothing about tools' execution or Neovim. It turns the
 * SDK's chunk stream into a small event stream (text deltas, assembled tool calls, usage, finish) and
 * every failure into a `ProviderError` with a user-facing message.
 *
 * The `openai` package is imported lazily on the first request (host start-up time matters); only types
 * are imported statically (erased at compile time).
 */
import type OpenAI from 'openai';
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

/* ------------------------------------------------------------------------------------------------
 * Public types
 * ---------------------------------------------------------------------------------------------- */

export interface ProviderConfig {
  /** e.g. 'https://api.openai.com/v1' or 'http://127.0.0.1:11434/v1'. */
  baseURL: string;
  apiKey: string;
  model: string;
  /** Sent as `max_tokens` (the field every OpenAI-compatible server understands). */
  maxTokens?: number;
  /** Informational for now (compaction is not implemented). */
  contextWindow?: number;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string>;
  /** What the model accepts besides text: images and audio tools return are passed to it (provider.media). */
  media?: ('image' | 'audio')[];
  /** SDK request timeout (ms). Default: 10 minutes (SDK default). */
  timeoutMs?: number;
  /** Retries on 429 / 5xx / network errors before any output arrived. Default 3. */
  maxRetries?: number;
  /** First backoff delay (ms), doubled per attempt. Default 500. Tests use ~1. */
  retryBaseDelayMs?: number;
  /** Upper bound for one backoff delay, including Retry-After. Default 30,000. */
  retryMaxDelayMs?: number;
}

export type ChatMessage = ChatCompletionMessageParam;

/** A tool as the model sees it (ToolSpec from src/tools/tool.ts is compatible). */
export interface ModelTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools?: ModelTool[];
  signal?: AbortSignal;
  /** Overrides the configured max_tokens (short side requests such as titles). */
  maxTokens?: number;
}

export interface AssembledToolCall {
  id: string;
  name: string;
  /** Raw JSON text exactly as the model produced it (may be malformed). */
  arguments: string;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'function_call' | 'unknown';

export type ModelEvent =
  | { type: 'text'; delta: string }
  /** Raw argument fragments as they arrive (for UIs that want to show a call being written). */
  | { type: 'tool_call_delta'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'usage'; usage: Usage }
  /** A retry is about to happen after `delayMs` (nothing was yielded before it). */
  | { type: 'retry'; attempt: number; delayMs: number; error: ProviderError }
  /** Always the last event of a successful stream. */
  | { type: 'done'; finishReason: FinishReason; text: string; toolCalls: AssembledToolCall[]; usage?: Usage };

/** What the agent needs from a model; tests may pass their own. */
export interface ModelClient {
  readonly model: string;
  /** Yields events; throws `ProviderError` on failure (after retries). */
  stream(req: ModelRequest): AsyncIterable<ModelEvent>;
  /** Loads what the first request needs (SDK, HTTP stack) ahead of it. Optional. */
  prepare?(): Promise<void>;
}

export type ProviderErrorKind = 'unreachable' | 'auth' | 'not_found' | 'rate_limited' | 'server' | 'interrupted' | 'aborted' | 'bad_response' | 'context_length';

/** How servers say the prompt does not fit (OpenAI's code, vLLM, llama.cpp, Ollama, OpenRouter, Anthropic-compatible). */
const CONTEXT_LENGTH_RE = /context[_ ]length[_ ]exceeded|maximum context length|context window|exceeds? the (?:model'?s? )?(?:maximum )?context|too many tokens|prompt is too long|input is too long|reduce the length of the (?:messages|prompt)/i;

/** True when an error text from the server means "the prompt is longer than the model's context". */
export function isContextLengthMessage(text: string): boolean {
  return CONTEXT_LENGTH_RE.test(text);
}

export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly status?: number;
  /** For `interrupted`: the text received before the cut. */
  readonly partialText?: string;
  /** Milliseconds requested by the server's Retry-After, when present. */
  readonly retryAfterMs?: number;

  constructor(kind: ProviderErrorKind, message: string, extra: { status?: number; partialText?: string; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, extra.cause !== undefined ? { cause: extra.cause } : undefined);
    this.name = 'ProviderError';
    this.kind = kind;
    if (extra.status !== undefined) this.status = extra.status;
    if (extra.partialText !== undefined) this.partialText = extra.partialText;
    if (extra.retryAfterMs !== undefined) this.retryAfterMs = extra.retryAfterMs;
  }

  /** Worth another attempt (only before any output was delivered). */
  get retryable(): boolean {
    return this.kind === 'rate_limited' || this.kind === 'server' || this.kind === 'unreachable' || this.kind === 'interrupted';
  }
}

/* ------------------------------------------------------------------------------------------------
 * Provider
 * ---------------------------------------------------------------------------------------------- */

const DEFAULTS = { maxRetries: 3, retryBaseDelayMs: 500, retryMaxDelayMs: 30_000 };

type OpenAIModule = typeof import('openai');

export class OpenAIProvider implements ModelClient {
  private client?: OpenAI;
  private sdk?: OpenAIModule;

  constructor(readonly config: ProviderConfig) {}

  get model(): string {
    return this.config.model;
  }

  async prepare(): Promise<void> {
    await this.ensureClient();
    // Node loads its fetch implementation on the first call; a data: URL does that without any network.
    await fetch('data:,').then((r) => r.arrayBuffer());
  }

  private async ensureClient(): Promise<{ client: OpenAI; sdk: OpenAIModule }> {
    if (!this.client || !this.sdk) {
      const sdk = await import('openai');
      this.sdk = sdk;
      this.client = new sdk.default({
        baseURL: this.config.baseURL,
        // The SDK refuses an empty key; local servers usually ignore it.
        apiKey: this.config.apiKey || 'no-key',
        maxRetries: 0,
        timeout: this.config.timeoutMs,
        defaultHeaders: this.config.headers,
      });
    }
    return { client: this.client, sdk: this.sdk };
  }

  async *stream(req: ModelRequest): AsyncGenerator<ModelEvent> {
    const maxRetries = this.config.maxRetries ?? DEFAULTS.maxRetries;
    for (let attempt = 0; ; attempt++) {
      const yielded = { any: false };
      try {
        for await (const ev of this.attempt(req)) {
          yielded.any = true;
          yield ev;
        }
        return;
      } catch (err) {
        const e = err instanceof ProviderError ? err : this.mapError(err, req.signal);
        if (yielded.any || !e.retryable || attempt >= maxRetries || req.signal?.aborted) throw e;
        const delayMs = this.backoff(attempt, e.retryAfterMs);
        yield { type: 'retry', attempt: attempt + 1, delayMs, error: e };
        await sleep(delayMs, req.signal).catch(() => {
          throw new ProviderError('aborted', 'request cancelled');
        });
      }
    }
  }

  /** Exponential backoff with a little jitter; a server's Retry-After wins (capped). */
  private backoff(attempt: number, retryAfterMs: number | undefined): number {
    const max = this.config.retryMaxDelayMs ?? DEFAULTS.retryMaxDelayMs;
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, max);
    const base = (this.config.retryBaseDelayMs ?? DEFAULTS.retryBaseDelayMs) * 2 ** attempt;
    return Math.min(max, Math.round(base * (0.8 + Math.random() * 0.4)));
  }

  /** One HTTP request; text and partial state are tracked so a cut can report what arrived. */
  private async *attempt(req: ModelRequest): AsyncGenerator<ModelEvent> {
    const { client } = await this.ensureClient();
    const controller = new AbortController();
    const onAbort = (): void => controller.abort();
    if (req.signal?.aborted) throw new ProviderError('aborted', 'request cancelled');
    req.signal?.addEventListener('abort', onAbort, { once: true });

    let text = '';
    const calls: { id: string; name: string; arguments: string }[] = [];
    let finishReason: FinishReason | undefined;
    let usage: Usage | undefined;
    let sawChunk = false;
    try {
      const tools: ChatCompletionTool[] | undefined = req.tools?.length
        ? req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
        : undefined;
      const stream = await client.chat.completions.create(
        {
          model: this.config.model,
          messages: req.messages,
          stream: true,
          stream_options: { include_usage: true },
          ...(tools ? { tools } : {}),
          ...((req.maxTokens ?? this.config.maxTokens) ? { max_tokens: req.maxTokens ?? this.config.maxTokens } : {}),
        },
        { signal: controller.signal },
      );
      for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) {
        sawChunk = true;
        if (chunk.usage) {
          usage = {
            promptTokens: chunk.usage.prompt_tokens,
            completionTokens: chunk.usage.completion_tokens,
            totalTokens: chunk.usage.total_tokens,
          };
          yield { type: 'usage', usage };
        }
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta;
        if (delta?.content) {
          text += delta.content;
          yield { type: 'text', delta: delta.content };
        }
        for (const tc of delta?.tool_calls ?? []) {
          const index = tc.index ?? calls.length;
          const slot = (calls[index] ??= { id: '', name: '', arguments: '' });
          if (tc.id) slot.id = tc.id;
          if (tc.function?.name) slot.name += tc.function.name;
          const argumentsDelta = tc.function?.arguments ?? '';
          slot.arguments += argumentsDelta;
          yield { type: 'tool_call_delta', index, id: tc.id, name: tc.function?.name, argumentsDelta };
        }
        if (choice.finish_reason) finishReason = normalizeFinish(choice.finish_reason);
      }
    } catch (err) {
      if (req.signal?.aborted) throw new ProviderError('aborted', 'request cancelled', { partialText: text });
      const e = this.mapError(err, req.signal);
      if (sawChunk && (e.kind === 'unreachable' || e.kind === 'bad_response' || e.kind === 'server')) {
        // The server was reached (chunks arrived): name the low-level cause, not "cannot reach".
        const cause = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
        throw new ProviderError('interrupted', `the response stream from ${this.config.baseURL} was interrupted midway (${cause}); the partial reply is kept`, {
          partialText: text,
          cause: err,
        });
      }
      throw e;
    } finally {
      req.signal?.removeEventListener('abort', onAbort);
      controller.abort(); // releases the connection when the consumer stops early
    }
    // The SDK ends iteration silently when aborted.
    if (req.signal?.aborted) throw new ProviderError('aborted', 'request cancelled', { partialText: text });
    if (finishReason === undefined) {
      throw new ProviderError('interrupted', 'the response stream ended before the model finished', { partialText: text });
    }
    const toolCalls: AssembledToolCall[] = calls
      .filter((c) => c !== undefined)
      .map((c, i) => ({ id: c.id || `call_${i}_${Date.now().toString(36)}`, name: c.name, arguments: c.arguments }));
    yield { type: 'done', finishReason, text, toolCalls, ...(usage ? { usage } : {}) };
  }

  /**
   * SDK / network error → ProviderError with a message a user can act on. Some servers echo the key in
   * their 401 message; the message is shown and stored with the session, so the key is cut out of it.
   */
  mapError(err: unknown, signal?: AbortSignal): ProviderError {
    const e = this.classify(err, signal);
    const key = this.config.apiKey;
    if (!key || key.length < 8 || !e.message.includes(key)) return e;
    return new ProviderError(e.kind, e.message.split(key).join('[API key]'), { status: e.status, partialText: e.partialText, retryAfterMs: e.retryAfterMs, cause: e.cause });
  }

  private classify(err: unknown, signal?: AbortSignal): ProviderError {
    if (err instanceof ProviderError) return err;
    const base = this.config.baseURL;
    const sdk = this.sdk;
    if (signal?.aborted || (sdk && err instanceof sdk.APIUserAbortError)) return new ProviderError('aborted', 'request cancelled', { cause: err });
    if (sdk && err instanceof sdk.APIConnectionTimeoutError) {
      return new ProviderError('unreachable', `request to ${base} timed out`, { cause: err });
    }
    if (sdk && err instanceof sdk.APIConnectionError) {
      const code = causeCode(err);
      const why = code ? ` (${code})` : '';
      return new ProviderError('unreachable', `cannot reach ${base}${why}: is the server running and base_url correct?`, { cause: err });
    }
    if (sdk && err instanceof sdk.APIError && typeof err.status === 'number') {
      const status = err.status;
      const detail = apiErrorMessage(err);
      if (status === 401 || status === 403) {
        return new ProviderError('auth', `authentication failed (${status}): check api_key / OPENAI_API_KEY${detail ? ` — ${detail}` : ''}`, { status, cause: err });
      }
      if (status === 404) {
        const isModel = /model/i.test(detail);
        const msg = isModel
          ? `model ${this.config.model} not found at ${base}${detail ? ` — ${detail}` : ''}`
          : `endpoint not found: ${base}/chat/completions (check base_url; OpenAI-compatible servers usually end in /v1)`;
        return new ProviderError('not_found', msg, { status, cause: err });
      }
      if (status === 429) {
        const retryAfterMs = parseRetryAfter(err.headers);
        return new ProviderError('rate_limited', `rate limited by ${base} (429)${detail ? ` — ${detail}` : ''}`, { status, cause: err, retryAfterMs });
      }
      if (status >= 500) {
        const retryAfterMs = parseRetryAfter(err.headers);
        return new ProviderError('server', `server error ${status} from ${base}${detail ? ` — ${detail}` : ''}`, { status, cause: err, retryAfterMs });
      }
      const code = (err as { code?: unknown }).code;
      if (code === 'context_length_exceeded' || ((status === 400 || status === 413 || status === 422) && isContextLengthMessage(`${detail} ${err.message}`))) {
        return new ProviderError('context_length', `the conversation is longer than the model's context window (${status})${detail ? ` — ${detail}` : ''}`, { status, cause: err });
      }
      return new ProviderError('bad_response', `request rejected (${status}) by ${base}${detail ? ` — ${detail}` : ''}`, { status, cause: err });
    }
    if (sdk && err instanceof sdk.APIError) {
      // An error object inside the stream (status undefined).
      return new ProviderError('server', `the server reported an error: ${apiErrorMessage(err) || err.message}`, { cause: err });
    }
    const code = causeCode(err);
    if (code && NETWORK_CODES.has(code)) return new ProviderError('unreachable', `cannot reach ${base} (${code})`, { cause: err });
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof TypeError && /terminated|fetch failed|socket/i.test(message)) {
      return new ProviderError('unreachable', `connection to ${base} lost (${message})`, { cause: err });
    }
    return new ProviderError('bad_response', `unexpected response from ${base}: ${message}`, { cause: err });
  }
}

export function createModelClient(config: ProviderConfig): ModelClient {
  return new OpenAIProvider(config);
}

/* ------------------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------------------- */

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

function normalizeFinish(r: string): FinishReason {
  return r === 'stop' || r === 'tool_calls' || r === 'length' || r === 'content_filter' || r === 'function_call' ? r : 'unknown';
}

/** Walks `cause` chains (SDK → fetch → socket) for a Node error code. */
function causeCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let depth = 0; cur && depth < 6; depth++) {
    if (typeof cur === 'object' && cur !== null) {
      const code = (cur as { code?: unknown }).code;
      if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
      const errors = (cur as { errors?: unknown }).errors; // AggregateError (happy eyeballs)
      if (Array.isArray(errors) && errors.length > 0) {
        const inner = causeCode(errors[0]);
        if (inner) return inner;
      }
      cur = (cur as { cause?: unknown }).cause;
    } else break;
  }
  return undefined;
}

function apiErrorMessage(err: { error?: unknown; message: string }): string {
  const body = err.error;
  if (body && typeof body === 'object') {
    const m = (body as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  }
  if (typeof body === 'string') return body.slice(0, 200);
  return '';
}

/** `retry-after-ms`, `retry-after` as seconds or as an HTTP date. */
export function parseRetryAfter(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = headers.get('retry-after');
  if (ra === null || ra.trim() === '') return undefined;
  if (Number.isFinite(Number(ra))) return Math.max(0, Number(ra) * 1000);
  const date = Date.parse(ra);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
