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
import { nodeFetch } from './node-fetch';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { SseDecoder, StreamAssembler, toWireMessages, type AssembledCall, type StreamErrorInfo, type StreamUsage } from './stream';
import { classifyError, ProviderError, streamErrorToProviderError } from './provider-errors';

export { isContextLengthMessage, parseRetryAfter, ProviderError, type ProviderErrorKind } from './provider-errors';

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
  /**
   * Per-model request fields (reasoning_effort, temperature, …). One the server rejects with a 400 naming
   * it is dropped, the request sent again once, and the model remembered as not accepting it.
   */
  options?: Record<string, unknown>;
}

export type ChatMessage = ChatCompletionMessageParam;

/** A streamed Chat Completions request body (OpenAIProvider.requestBody). */
export type ChatRequestBody = {
  model: string;
  messages: ChatCompletionMessageParam[];
  stream: true;
  stream_options: { include_usage: boolean };
  tools?: ChatCompletionTool[];
  max_tokens?: number;
} & Record<string, unknown>;

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
  /** Extra top-level request fields (per-model options such as reasoning_effort, temperature). */
  extraBody?: Record<string, unknown>;
  /**
   * Told of each HTTP request as it starts, with a record the client keeps filling in (status, chunks,
   * finish, usage, error) until the response ends: what :CabooseDebug shows.
   */
  observe?: (exchange: Exchange) => void;
}

/** One HTTP request to the model and what came back (filled in as the response arrives). */
export interface Exchange {
  url: string;
  model: string;
  /** The JSON body sent, as sent (not a copy: never mutated afterwards). */
  body: Record<string, unknown>;
  /** Extra headers configured for the provider (besides Authorization and Content-Type). */
  headers?: Record<string, string>;
  /** Whether an API key went in the Authorization header. */
  authorization: boolean;
  startedAt: number;
  status?: number;
  responseHeaders?: Record<string, string>;
  /** Milliseconds from the request to the response's headers, and to its end. */
  headersMs?: number;
  durationMs?: number;
  /** Stream chunks (SSE data events) read. */
  chunks: number;
  finishReason?: string;
  usage?: StreamUsage;
  error?: { kind: string; message: string; status?: number; body?: unknown };
  done: boolean;
}

/**
 * `id` is our own (unique in the session: transcript, store and recall key on it); `providerId` is the
 * server's id when it sent a usable one (sent back to it in the next request). `arguments`: raw JSON text
 * exactly as the model produced it (may be malformed).
 */
export type AssembledToolCall = AssembledCall;

export type Usage = StreamUsage;

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'function_call' | 'unknown';

export type ModelEvent =
  | { type: 'text'; delta: string }
  /** The model's reasoning (never part of the reply text). */
  | { type: 'reasoning'; delta: string }
  /** Raw argument fragments as they arrive (for UIs that want to show a call being written). */
  | { type: 'tool_call_delta'; index: number; id?: string; name?: string; argumentsDelta: string }
  | { type: 'usage'; usage: Usage }
  /** A retry is about to happen after `delayMs` (nothing was yielded before it). */
  | { type: 'retry'; attempt: number; delayMs: number; error: ProviderError }
  /** Always the last event of a successful stream. */
  | { type: 'done'; finishReason: FinishReason; text: string; toolCalls: AssembledToolCall[]; usage?: Usage; reasoning?: string; reasoningOpaque?: string };

/** What the agent needs from a model; tests may pass their own. */
export interface ModelClient {
  readonly model: string;
  /** Yields events; throws `ProviderError` on failure (after retries). */
  stream(req: ModelRequest): AsyncIterable<ModelEvent>;
  /** Loads what the first request needs (SDK, HTTP stack) ahead of it. Optional. */
  prepare?(): Promise<void>;
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
        // node:http instead of Node's fetch: the same requests and answers for a fraction of the CPU a
        // streamed reply costs (src/agent/node-fetch.ts).
        fetch: nodeFetch as unknown as typeof fetch,
      });
    }
    return { client: this.client, sdk: this.sdk };
  }

  async *stream(req: ModelRequest): AsyncGenerator<ModelEvent> {
    const maxRetries = this.config.maxRetries ?? DEFAULTS.maxRetries;
    let droppedOne = false;
    for (let attempt = 0; ; attempt++) {
      const yielded = { any: false };
      try {
        yield* this.attempt(req, yielded);
        return;
      } catch (err) {
        const e = err instanceof ProviderError ? err : this.mapError(err, req.signal);
        // A 400 naming a per-model option: sent again once without it, and remembered for this model.
        const param = !yielded.any && !droppedOne && e.kind === 'bad_response' && (e.status === 400 || e.status === undefined || e.status === 422) ? this.rejectedOption(e, req) : undefined;
        if (param !== undefined) {
          droppedOne = true;
          unsupportedFor(this.config).add(param);
          attempt--;
          yield { type: 'retry', attempt: 1, delayMs: 0, error: new ProviderError('bad_response', `${this.config.model} does not accept \`${param}\`: sending the request again without it`) };
          continue;
        }
        if (yielded.any || !e.retryable || attempt >= maxRetries || req.signal?.aborted) throw e;
        const delayMs = this.backoff(attempt, e.retryAfterMs);
        yield { type: 'retry', attempt: attempt + 1, delayMs, error: e };
        await sleep(delayMs, req.signal).catch(() => {
          throw new ProviderError('aborted', 'request cancelled');
        });
      }
    }
  }

  /**
   * The JSON body of `req`'s HTTP request, as `stream` sends it (the first-request path, first-request.ts,
   * compares the body it sent before the session loaded with this one).
   */
  requestBody(req: Pick<ModelRequest, 'messages' | 'tools' | 'maxTokens' | 'extraBody'>): ChatRequestBody {
    const tools: ChatCompletionTool[] | undefined = req.tools?.length
      ? req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
      : undefined;
    const maxTokens = req.maxTokens ?? this.config.maxTokens;
    return {
      model: this.config.model,
      messages: toWireMessages(req.messages, this.config.model),
      stream: true as const,
      stream_options: { include_usage: true },
      ...(tools ? { tools } : {}),
      ...(maxTokens && !unsupportedFor(this.config).has('max_tokens') ? { max_tokens: maxTokens } : {}),
      ...this.sentOptions(),
      ...(req.extraBody ?? {}),
    };
  }

  /** The per-model option (or max_tokens) a rejection names, when it is one this request sent. */
  private rejectedOption(e: ProviderError, req: ModelRequest): string | undefined {
    const sent = [...Object.keys(this.sentOptions()), ...((req.maxTokens ?? this.config.maxTokens) && !unsupportedFor(this.config).has('max_tokens') ? ['max_tokens'] : [])];
    const cause = e.cause as { param?: unknown } | undefined;
    const param = typeof cause?.param === 'string' ? cause.param : undefined;
    if (param && sent.includes(param)) return param;
    return sent.find((k) => new RegExp(`['"\`\\s(]${k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}['"\`\\s):,]`).test(` ${e.message} `) && /unsupported|not supported|unrecognized|unknown|not allowed|does not support|invalid|extra|unexpected/i.test(e.message));
  }

  /** The per-model options still sent (those the model rejected before are left out). */
  private sentOptions(): Record<string, unknown> {
    const dropped = unsupportedFor(this.config);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(this.config.options ?? {})) if (!dropped.has(k)) out[k] = v;
    return out;
  }

  /** Exponential backoff with a little jitter; a server's Retry-After wins (capped). */
  private backoff(attempt: number, retryAfterMs: number | undefined): number {
    const max = this.config.retryMaxDelayMs ?? DEFAULTS.retryMaxDelayMs;
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, max);
    const base = (this.config.retryBaseDelayMs ?? DEFAULTS.retryBaseDelayMs) * 2 ** attempt;
    return Math.min(max, Math.round(base * (0.8 + Math.random() * 0.4)));
  }

  /** One HTTP request; text and partial state are tracked so a cut can report what arrived. */
  private async *attempt(req: ModelRequest, yielded: { any: boolean }): AsyncGenerator<ModelEvent> {
    const { client } = await this.ensureClient();
    const controller = new AbortController();
    const onAbort = (): void => controller.abort();
    if (req.signal?.aborted) throw new ProviderError('aborted', 'request cancelled');
    req.signal?.addEventListener('abort', onAbort, { once: true });

    const asm = new StreamAssembler();
    let exchange: Exchange | undefined;
    let clean = false;
    let streamError: StreamErrorInfo | undefined;
    try {
      const body = this.requestBody(req);
      exchange = {
        url: `${this.config.baseURL}/chat/completions`,
        model: this.config.model,
        body,
        ...(this.config.headers ? { headers: this.config.headers } : {}),
        authorization: this.config.apiKey !== '',
        startedAt: Date.now(),
        chunks: 0,
        done: false,
      };
      req.observe?.(exchange);
      // The SDK sends the request and turns a non-2xx answer into an APIError; the body is read here, so
      // errors inside the 200 stream (`event: error`, llama.cpp's bare `error:` line) are seen too.
      const response = await client.chat.completions.create(body, { signal: controller.signal }).asResponse();
      if (exchange) {
        exchange.status = response.status;
        exchange.responseHeaders = headersOfInterest(response.headers);
        exchange.headersMs = Date.now() - exchange.startedAt;
      }
      if (!response.body) throw new ProviderError('bad_response', `empty response from ${this.config.baseURL}`);
      // The events of one read are yielded together, consecutive text (or reasoning) deltas joined into
      // one: the same text, far fewer steps through the generators and the agent loop in a fast stream.
      // The body is parsed here, synchronously per read (SseDecoder), without a generator of its own in between.
      const sse = new SseDecoder();
      const iterator = (response.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      // The body ended or failed: nothing to let go (a failing read is not followed by return(), as in `for await`).
      let ended = false;
      try {
        for (;;) {
          let r: IteratorResult<Uint8Array>;
          try {
            r = await iterator.next();
          } catch (err) {
            ended = true;
            throw err;
          }
          const items = r.done ? sse.end() : sse.push(r.value);
          if (r.done) ended = true;
          if (items.length > 0) {
            let stop = false;
            let out: ModelEvent[] | undefined;
            for (const item of items) {
              if (item.kind === 'done') {
                clean = true;
                stop = true;
                break;
              }
              if (item.kind === 'error') {
                streamError = item.error;
                stop = true;
                break;
              }
              if (item.kind === 'invalid') continue; // keep-alive noise some proxies send
              if (exchange) exchange.chunks++;
              for (const ev of asm.push(item.data)) {
                out ??= [];
                const last = out[out.length - 1];
                if (last && (ev.type === 'text' || ev.type === 'reasoning') && last.type === ev.type) out[out.length - 1] = { type: ev.type, delta: last.delta + ev.delta };
                else out.push(ev);
              }
            }
            if (out) {
              yielded.any = true;
              for (const ev of out) yield ev;
            }
            if (stop) break;
          }
          if (ended) break;
        }
      } finally {
        // Stopped before the body's end (`[DONE]`, an error event, the consumer left): the body is let go
        // as a `for await` would (node-fetch drains a finished response for keep-alive, cuts a running one).
        if (!ended) await iterator.return?.();
      }
    } catch (err) {
      if (exchange) recordFailure(exchange, err, this.mapError(err, req.signal));
      if (req.signal?.aborted) throw new ProviderError('aborted', 'request cancelled', { partialText: asm.text });
      const e = this.mapError(err, req.signal);
      if (asm.sawChunk && (e.kind === 'unreachable' || e.kind === 'bad_response' || e.kind === 'server')) {
        // The server was reached (chunks arrived): name the low-level cause, not "cannot reach".
        const cause = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
        const kept = asm.text.length > 0 ? '; the partial reply is kept' : '';
        throw new ProviderError('interrupted', `the response stream from ${this.config.baseURL} was interrupted midway (${cause})${kept}`, {
          partialText: asm.text,
          cause: err,
        });
      }
      throw e;
    } finally {
      req.signal?.removeEventListener('abort', onAbort);
      controller.abort(); // releases the connection when the consumer stops early
      if (exchange) {
        exchange.durationMs = Date.now() - exchange.startedAt;
        exchange.finishReason = asm.finishReason;
        if (asm.usage) exchange.usage = asm.usage;
        exchange.done = true;
      }
    }
    if (exchange && streamError) exchange.error = { kind: 'stream_error', message: streamError.message, ...(streamError.status !== undefined ? { status: streamError.status } : {}), body: streamError };
    if (req.signal?.aborted) throw new ProviderError('aborted', 'request cancelled', { partialText: asm.text });
    if (streamError) throw this.redact(streamErrorToProviderError(streamError, this.config.baseURL, asm.text));
    const calls = asm.calls();
    let finishReason: FinishReason;
    if (asm.finishReason !== undefined && asm.finishReason !== 'error') finishReason = normalizeFinish(asm.finishReason);
    else if (clean || asm.usage !== undefined) finishReason = calls.length > 0 ? 'tool_calls' : 'stop'; // ended cleanly without saying why
    else {
      const kept = asm.text.length > 0 ? '; the partial reply is kept' : '';
      throw new ProviderError('interrupted', `the response stream ended before the model finished${kept}`, { partialText: asm.text });
    }
    // A server that says "stop" while it sent tool calls still asked for them.
    if (calls.length > 0 && finishReason === 'stop') finishReason = 'tool_calls';
    const usage = asm.usage;
    yielded.any = true;
    yield {
      type: 'done',
      finishReason,
      text: asm.text,
      toolCalls: calls,
      ...(usage ? { usage } : {}),
      ...(asm.reasoning ? { reasoning: asm.reasoning } : {}),
      ...(asm.reasoningOpaque ? { reasoningOpaque: asm.reasoningOpaque } : {}),
    };
  }

  private redact(e: ProviderError): ProviderError {
    const key = this.config.apiKey;
    if (!key || key.length < 8 || !e.message.includes(key)) return e;
    return new ProviderError(e.kind, e.message.split(key).join('[API key]'), { status: e.status, partialText: e.partialText, retryAfterMs: e.retryAfterMs, cause: e.cause });
  }

  /**
   * SDK / network error → ProviderError with a message a user can act on. Some servers echo the key in
   * their 401 message; the message is shown and stored with the session, so the key is cut out of it.
   */
  mapError(err: unknown, signal?: AbortSignal): ProviderError {
    return this.redact(classifyError(err, this.config, this.sdk, signal));
  }
}

export function createModelClient(config: ProviderConfig): ModelClient {
  return new OpenAIProvider(config);
}

/* ------------------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------------------- */

/** Request fields each model rejected (by base URL and model), for the life of the host. */
const UNSUPPORTED = new Map<string, Set<string>>();
function unsupportedFor(c: ProviderConfig): Set<string> {
  const key = `${c.baseURL} ${c.model}`;
  let set = UNSUPPORTED.get(key);
  if (!set) UNSUPPORTED.set(key, (set = new Set()));
  return set;
}

/** The response headers :CabooseDebug shows (request ids, rate limits, timing, type). */
const HEADERS_OF_INTEREST = /^(content-type|date|server|retry-after(-ms)?|x-request-id|request-id|cf-ray|openai-.*|x-ratelimit-.*|anthropic-.*|x-groq-.*|x-litellm-.*)$/i;

function headersOfInterest(h: Pick<Headers, 'forEach'> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  h?.forEach((v, k) => {
    if (HEADERS_OF_INTEREST.test(k)) out[k] = v;
  });
  return out;
}

/** A failed request's status, headers and error body, as far as the SDK kept them. */
function recordFailure(ex: Exchange, err: unknown, mapped: ProviderError): void {
  const api = err as { status?: unknown; headers?: unknown; error?: unknown };
  if (typeof api.status === 'number') ex.status = api.status;
  if (api.headers && typeof (api.headers as Headers).forEach === 'function') ex.responseHeaders = headersOfInterest(api.headers as Headers);
  ex.error = { kind: mapped.kind, message: mapped.message, ...(mapped.status !== undefined ? { status: mapped.status } : {}), ...(api.error !== undefined ? { body: api.error } : {}) };
}

function normalizeFinish(r: string): FinishReason {
  return r === 'stop' || r === 'tool_calls' || r === 'length' || r === 'content_filter' || r === 'function_call' ? r : 'unknown';
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
