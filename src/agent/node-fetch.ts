/**
 * The `fetch` the model client (the openai SDK) is given: one request over node:http / node:https, the
 * body read as the socket's own chunks (issue 24).
 *
 * Why: Node's fetch (undici) hands each network read through WHATWG streams. For a model's stream that is
 * most of the host's CPU: reading a paced reply (500 chunks 10 ms apart) cost ≈ 2× the CPU of the same
 * SSE read from node:http (bench/BENCHMARKS.md, issue 24 third round), and its first request loads and
 * sets up its HTTP client (a WebAssembly parser) on the cold path.
 *
 * What it keeps of fetch's behaviour, for what the SDK and src/agent/provider.ts rely on: the status,
 * headers (a `Headers` without undici: lite-headers.ts), `ok`, `url`, `text()` / `json()` / `arrayBuffer()`, a body iterable of
 * Uint8Array chunks, gzip / deflate / br bodies decoded, the request's AbortSignal (before and during the
 * body: the rejection or the body's error is the signal's reason), a failed connection rejected as
 * `TypeError('fetch failed', { cause })` and a body cut midway failing as `TypeError('terminated')`, as
 * undici does (provider.ts reads their causes). Anything else — a redirect, another protocol, a body that
 * is not text or bytes, fetch options it does not know — is left to the global fetch (a redirect answer
 * carries no work done, so the request is sent again there and followed as fetch follows it).
 */
import type { IncomingMessage } from 'node:http';
import { LiteHeaders, type LiteHeadersInit } from './lite-headers';

type FetchInit = RequestInit & Record<string, unknown>;

/** Init fields this transport understands; any other (a `dispatcher`, `redirect: 'manual'`…) goes to fetch. */
const KNOWN_INIT = new Set(['method', 'headers', 'body', 'signal', 'duplex', 'redirect']);

/** A fetch Response's surface, over a node:http response. */
export interface NodeResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly url: string;
  readonly redirected: false;
  readonly headers: LiteHeaders;
  readonly body: AsyncIterable<Uint8Array>;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<unknown>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** The error undici gives for a body cut midway (its cause says what happened to the connection). */
function terminated(cause: unknown): TypeError {
  const inner = cause instanceof Error && cause.message !== 'aborted' ? cause : Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', cause });
  return new TypeError('terminated', { cause: inner });
}

export async function nodeFetch(input: string | URL | Request, init: FetchInit = {}): Promise<NodeResponse | Response> {
  const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : null;
  const body = init.body;
  const simple =
    url !== null &&
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    (body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array) &&
    (init.redirect === undefined || init.redirect === 'follow') &&
    Object.keys(init).every((k) => KNOWN_INIT.has(k));
  if (!simple) return fetch(input, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) throw abortReason(signal);

  const headers: Record<string, string> = {};
  new LiteHeaders(init.headers as LiteHeadersInit).forEach((v, k) => {
    headers[k] = v;
  });
  // What fetch sends unless told otherwise.
  headers['accept-encoding'] ??= 'gzip, deflate, br';
  headers.accept ??= '*/*';
  const payload = body === undefined || body === null ? undefined : typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (payload) headers['content-length'] = String(payload.length);
  const method = (init.method ?? 'GET').toUpperCase();

  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = (url.protocol === 'https:' ? require('node:https') : require('node:http')) as typeof import('node:http');
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = mod.request(url, { method, headers });
    const onAbort = (): void => {
      const reason = abortReason(signal!);
      req.destroy(reason instanceof Error ? reason : undefined);
      reject(reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    // `on`, not `once`: a socket can fail again after the first error (the promise settles once).
    req.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: err }));
    });
    req.once('response', (r) => {
      signal?.removeEventListener('abort', onAbort);
      resolve(r);
    });
    req.end(payload);
  });

  // Errors of an unread body surface through its iterator (or not at all), never as an unhandled event.
  res.on('error', () => undefined);
  const status = res.statusCode ?? 0;
  if (status >= 300 && status < 400 && res.headers.location) {
    res.destroy();
    return fetch(input, init);
  }

  const responseHeaders = new LiteHeaders();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);

  let stream: NodeJS.ReadableStream = res;
  const coding = (res.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (coding === 'gzip' || coding === 'x-gzip' || coding === 'deflate' || coding === 'br') {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const zlib = require('node:zlib') as typeof import('node:zlib');
    const flush = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
    const decoder = coding === 'br' ? zlib.createBrotliDecompress() : coding === 'deflate' ? zlib.createInflate(flush) : zlib.createGunzip(flush);
    res.on('error', (err) => decoder.destroy(err));
    decoder.on('error', () => undefined);
    stream = res.pipe(decoder);
  }

  let ended = false;
  let used = false;
  const destroy = (err?: unknown): void => {
    if (ended) return;
    ended = true;
    const e = err instanceof Error ? err : undefined;
    res.destroy(e);
    if (stream !== res) (stream as unknown as { destroy(e?: Error): void }).destroy(e);
  };
  const onAbort = (): void => destroy(abortReason(signal!));
  signal?.addEventListener('abort', onAbort, { once: true });
  const done = (): void => {
    ended = true;
    signal?.removeEventListener('abort', onAbort);
  };

  const iterable: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      used = true;
      const it = chunksOf(stream, done, (err) => {
        done();
        return signal?.aborted ? abortReason(signal) : terminated(err);
      });
      return {
        next: it.next,
        async return() {
          it.stop();
          // The reader stopped early (the stream's `[DONE]`): a response the server already finished is
          // drained, so its connection goes back to the pool for the next request (a TLS handshake saved);
          // one still running is cut.
          if (stream === res && res.complete) {
            ended = true;
            res.resume();
          } else destroy();
          done();
          return { done: true, value: undefined };
        },
      };
    },
  };

  const collect = async (): Promise<Buffer> => {
    const parts: Buffer[] = [];
    for await (const c of iterable) parts.push(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
    return Buffer.concat(parts);
  };
  return {
    status,
    statusText: res.statusMessage ?? '',
    ok: status >= 200 && status < 300,
    url: url.href,
    redirected: false,
    headers: responseHeaders,
    body: iterable,
    get bodyUsed() {
      return used;
    },
    text: async () => (await collect()).toString('utf8'),
    json: async () => JSON.parse((await collect()).toString('utf8')) as unknown,
    arrayBuffer: async () => {
      const b = await collect();
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    },
  };
}

/**
 * A readable's chunks as an iterator, from its `data` events: one promise per chunk when the reader waits,
 * none when chunks are already queued. Node's own `readable[Symbol.asyncIterator]()` goes through
 * `readable`/`read()` and a `nextTick` for every chunk, a good part of the CPU a paced model reply costs
 * (500 reads; issue 24). What arrived while the reader was busy comes as one chunk, as `read()` gives it. Ends and failures come from `stream.finished`, as with Node's iterator (a
 * response cut midway fails with its error, or a premature close). A chunk nobody waits for pauses the
 * stream until the reader asks for more. `onEnd` is told of the end as the reader sees it; `failed` turns
 * a failure into the error the reader gets.
 */
function chunksOf(stream: NodeJS.ReadableStream, onEnd: () => void, failed: (err: unknown) => unknown): { next(): Promise<IteratorResult<Buffer>>; stop(): void } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { finished } = require('node:stream') as typeof import('node:stream');
  const queue: Buffer[] = [];
  let over = false;
  let failure: { err: unknown } | undefined;
  let waiter: { resolve(r: IteratorResult<Buffer>): void; reject(e: unknown): void } | undefined;
  const onData = (chunk: Buffer): void => {
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w.resolve({ done: false, value: chunk });
      return;
    }
    // Nobody is reading: the stream stops until the reader asks, so what arrives meanwhile waits in the
    // socket and comes in one read (a fast stream takes few, large reads, as with Node's iterator).
    queue.push(chunk);
    stream.pause();
  };
  stream.on('data', onData);
  const cleanup = finished(stream as NodeJS.ReadableStream & import('node:stream').Readable, (err) => {
    over = true;
    if (err) failure = { err };
    if (!waiter) return;
    const w = waiter;
    waiter = undefined;
    if (failure) w.reject(failed(failure.err));
    else {
      onEnd();
      w.resolve({ done: true, value: undefined });
    }
  });
  return {
    next(): Promise<IteratorResult<Buffer>> {
      if (queue.length > 0) {
        // Everything that arrived since the last read, as one chunk (as Node's iterator gives it): the paused
        // stream's own buffer too (`read()` hands it all to `onData`).
        if (!over && stream.isPaused()) (stream as NodeJS.ReadableStream & { read(): unknown }).read();
        const value = queue.length === 1 ? queue[0] : Buffer.concat(queue);
        queue.length = 0;
        if (!over) stream.resume();
        return Promise.resolve({ done: false, value });
      }
      if (failure) return Promise.reject(failed(failure.err));
      if (over) {
        onEnd();
        return Promise.resolve({ done: true, value: undefined });
      }
      return new Promise((resolve, reject) => {
        waiter = { resolve, reject };
      });
    },
    stop(): void {
      stream.removeListener('data', onData);
      cleanup();
      queue.length = 0;
    },
  };
}
