/**
 * Every failure of a model request as a `ProviderError`: a kind the agent loop acts on (retry, compact,
 * stop) and a message the user can act on. The SDK's and the network's errors are classified here
 * (classifyError), and the errors a server sends inside a 200 stream (streamErrorToProviderError).
 */
import type { StreamErrorInfo } from './stream';

export type ProviderErrorKind = 'unreachable' | 'auth' | 'not_found' | 'rate_limited' | 'server' | 'interrupted' | 'aborted' | 'bad_response' | 'context_length';

/** How servers say the prompt does not fit (OpenAI's code, vLLM, llama.cpp, Ollama, OpenRouter, Anthropic-compatible). */
const CONTEXT_LENGTH_RE = /context[_ ]length[_ ]exceeded|compared to KV size|maximum context length|context window|exceeds? the (?:model'?s? )?(?:maximum )?context|too many tokens|prompt is too long|input is too long|reduce the length of the (?:messages|prompt)/i;

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

type OpenAIModule = typeof import('openai');

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/** SDK / network error → ProviderError with a message a user can act on (`sdk`: the loaded openai module). */
export function classifyError(err: unknown, config: { baseURL: string; model: string }, sdk: OpenAIModule | undefined, signal?: AbortSignal): ProviderError {
  if (err instanceof ProviderError) return err;
  const base = config.baseURL;
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
        ? `model ${config.model} not found at ${base}${detail ? ` — ${detail}` : ''}`
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

/**
 * An error the server sent inside a 200 stream → ProviderError, classified by the error's own status or
 * code: only what another attempt can fix (rate limits, server faults, overload) stays retryable.
 */
export function streamErrorToProviderError(info: StreamErrorInfo, baseURL: string, partialText = ''): ProviderError {
  const code = (info.code ?? '').toLowerCase();
  const status = info.status;
  const detail = info.message;
  const extra = { ...(status !== undefined ? { status } : {}), ...(partialText ? { partialText } : {}) };
  const kept = partialText ? ' (the partial reply is kept)' : '';
  if (code === 'context_length_exceeded' || /context/.test(code) || isContextLengthMessage(detail)) {
    return new ProviderError('context_length', `the conversation is longer than the model's context window — ${detail}${kept}`, extra);
  }
  if (status === 401 || status === 403 || /auth|permission|api_key|invalid_key/.test(code)) {
    return new ProviderError('auth', `authentication failed${status ? ` (${status})` : ''}: check api_key — ${detail}`, extra);
  }
  if (status === 429 || /rate_limit|too_many|quota/.test(code)) {
    return new ProviderError('rate_limited', `rate limited by ${baseURL} — ${detail}${kept}`, extra);
  }
  if ((status !== undefined && status >= 500) || /server_error|internal|overloaded|unavailable|timeout/.test(code)) {
    return new ProviderError('server', `the server reported an error${status ? ` (${status})` : ''}: ${detail}${kept}`, extra);
  }
  if (status === 404 || /not_found|model_not_found/.test(code)) {
    return new ProviderError('not_found', `not found${status ? ` (${status})` : ''}: ${detail}`, extra);
  }
  // 400-class or unclassified: the same request would fail the same way.
  return new ProviderError('bad_response', `request rejected${status ? ` (${status})` : ''} by ${baseURL}: ${detail}${kept}`, extra);
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
