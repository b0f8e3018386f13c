/**
 * A model request that went out before the session existed (the host's first-request path,
 * src/host/first-request.ts): handed to the session's model client, which uses it for its first request
 * when that request's body is byte for byte the one already sent, and sends its own otherwise.
 *
 * What crosses between the two is plain data (the first-request path runs from another bundle, with its
 * own copies of these classes): events, and failures as `{ kind, message, … }`, made ProviderErrors here.
 */
import { ProviderError, type ProviderErrorKind } from './provider-errors';
import type { Exchange, ModelClient, ModelEvent, ModelRequest, OpenAIProvider } from './provider';

/** A failure as plain data (ProviderError's fields). */
export interface PrefetchFailure {
  kind: string;
  message: string;
  status?: number;
  partialText?: string;
  retryAfterMs?: number;
}

export type PrefetchItem = { event: ModelEvent } | { end: true } | { error: PrefetchFailure };

export interface PrefetchedReply {
  /** The request's JSON body as it was sent (JSON.stringify of OpenAIProvider.requestBody). */
  readonly bodyJson: string;
  /** The exchange record :CabooseDebug shows (filled in as the reply arrives). */
  readonly exchange?: Exchange;
  /** The reply's `i`-th item, once it has arrived (items stay available: they can be read again). */
  item(i: number): Promise<PrefetchItem>;
  /** Cuts the request (its reply then ends with an `aborted` failure). */
  abort(): void;
}

export function providerErrorOf(f: PrefetchFailure): ProviderError {
  return new ProviderError(f.kind as ProviderErrorKind, f.message, {
    ...(f.status !== undefined ? { status: f.status } : {}),
    ...(f.partialText !== undefined ? { partialText: f.partialText } : {}),
    ...(f.retryAfterMs !== undefined ? { retryAfterMs: f.retryAfterMs } : {}),
  });
}

export function failureOf(err: unknown): PrefetchFailure {
  const e = err as { kind?: unknown; message?: unknown; status?: unknown; partialText?: unknown; retryAfterMs?: unknown };
  return {
    kind: typeof e?.kind === 'string' ? e.kind : 'bad_response',
    message: typeof e?.message === 'string' ? e.message : String(err),
    ...(typeof e?.status === 'number' ? { status: e.status } : {}),
    ...(typeof e?.partialText === 'string' ? { partialText: e.partialText } : {}),
    ...(typeof e?.retryAfterMs === 'number' ? { retryAfterMs: e.retryAfterMs } : {}),
  };
}

/**
 * `client`, whose first `stream` call takes `reply` over when its request's body is the one `reply` sent;
 * `mismatch` is told otherwise (the prefetched request is then cut and the client sends its own).
 */
export function withPrefetched(client: OpenAIProvider, reply: PrefetchedReply, mismatch: (sent: string, wanted: string) => void): ModelClient {
  let pending: PrefetchedReply | null = reply;
  return {
    get model() {
      return client.model;
    },
    prepare: () => client.prepare(),
    stream(req: ModelRequest): AsyncIterable<ModelEvent> {
      const r = pending;
      pending = null;
      if (!r) return client.stream(req);
      const wanted = JSON.stringify(client.requestBody(req));
      if (wanted !== r.bodyJson) {
        r.abort();
        mismatch(r.bodyJson, wanted);
        return client.stream(req);
      }
      return replay(r, req);
    },
  };
}

async function* replay(r: PrefetchedReply, req: ModelRequest): AsyncGenerator<ModelEvent> {
  if (r.exchange) req.observe?.(r.exchange);
  const onAbort = (): void => r.abort();
  if (req.signal?.aborted) r.abort();
  else req.signal?.addEventListener('abort', onAbort, { once: true });
  let ended = false;
  try {
    for (let i = 0; ; i++) {
      const it = await r.item(i);
      if ('end' in it) {
        ended = true;
        return;
      }
      if ('error' in it) {
        ended = true;
        throw providerErrorOf(it.error);
      }
      const ev = it.event;
      yield ev.type === 'retry' ? { ...ev, error: providerErrorOf(failureOf(ev.error)) } : ev;
    }
  } finally {
    req.signal?.removeEventListener('abort', onAbort);
    // The consumer left before the reply's end: the request is let go.
    if (!ended) r.abort();
  }
}
