/**
 * A fake OpenAI-compatible server for tests: a real `http` server on 127.0.0.1 (random port) that speaks
 * just enough of the Chat Completions API for the agent, the host and e2e tests.
 *
 *   const fake = await startFakeOpenAI();
 *   fake.script({ text: 'Hello world' }, { toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] });
 *   // point the client at fake.url ('http://127.0.0.1:<port>/v1'), any api key
 *   await fake.waitForRequest(1);
 *   fake.requests[0].body?.messages
 *   await fake.close();
 *
 * Routes:
 * - `POST /v1/chat/completions`: consumes one scripted reply per request (FIFO). Streams SSE when the body
 *   has `stream: true`, otherwise answers one `chat.completion` JSON object.
 * - `GET /v1/models`: a model list (for health checks); never consumes a scripted reply.
 * - the host's session-title request (a POST whose system message asks to name the conversation) is
 *   answered with `fake.setTitle()`'s text and recorded in `fake.titleRequests` only.
 * - anything else: 404 with an OpenAI-style error body.
 *
 * Several conversations at once (subagents): `fake.scriptFor('write a.txt', …replies)` keeps replies for the
 * requests whose first user message contains that text (a child's task). Such requests take only from their
 * own queue (the default reply once it is empty); every other request takes from the shared script.
 *
 * When the script queue is empty the server answers the default reply: `{ text: 'ok' }` unless
 * `startFakeOpenAI({ defaultReply })` or `fake.setDefaultReply()` says otherwise (e.g. `{ status: 500 }`
 * to make unexpected calls loud). `fake.unscripted` counts requests that fell back to the default.
 *
 * Every request (any route) is recorded in `fake.requests` in arrival order, with its JSON body parsed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/* ------------------------------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------------------------------- */

export interface FakeToolCall {
  /** Defaults to `call_<n>` (unique per server). */
  id?: string;
  name: string;
  /** A JSON string is sent verbatim (so malformed JSON can be scripted); objects are JSON-encoded. */
  arguments: string | Record<string, unknown>;
}

export interface FakeUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

interface StreamOptions {
  /** Milliseconds between chunks (default 2). */
  delayMs?: number;
  /** Pause the stream after `gateAfterChunks` content chunks until this promise settles. */
  gate?: Promise<unknown>;
  /** Default 1: the first chunk is visible to the client before the gate holds the rest. */
  gateAfterChunks?: number;
  /** Destroy the socket after this many content chunks (no finish chunk, no `[DONE]`). */
  cutAfterChunks?: number;
  /** Usage reported when the client asked for `stream_options.include_usage` (and in non-stream replies). */
  usage?: FakeUsage;
  /** Overrides the computed finish_reason. */
  finishReason?: 'stop' | 'tool_calls' | 'length' | 'content_filter';
}

export interface FakeTextReply extends StreamOptions {
  text: string;
  /** Explicit content chunks; default: the text split at word boundaries. */
  chunks?: string[];
}

export interface FakeToolCallsReply extends StreamOptions {
  toolCalls: FakeToolCall[];
  /** Optional text streamed before the tool calls. */
  text?: string;
  /** How many deltas each call's arguments are split into (default 3). */
  argumentChunks?: number;
}

export interface FakeErrorReply {
  status: number;
  /** JSON-encoded unless a string; default an OpenAI-style `{ error: { message, type, code } }`. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface FakeHangReply {
  /** Never answers (no headers); the request stays open until the client aborts or `close()`. */
  hang: true;
}

/**
 * A recorded stream replayed byte for byte (status 200, `text/event-stream` unless told otherwise): how real
 * providers' streams (test/fixtures/streams/) reach the client. `fake.replay(path)` loads one.
 */
export interface FakeRawReply {
  /** The body; pieces are written in turn (with `gate`, the rest waits for it after the first). */
  raw: string | string[];
  status?: number;
  headers?: Record<string, string>;
  gate?: Promise<unknown>;
}

export type FakeReplySpec = FakeTextReply | FakeToolCallsReply | FakeErrorReply | FakeHangReply | FakeRawReply;
/** A reply, or a function computing it from the request (e.g. to echo the last message). */
export type FakeReply = FakeReplySpec | ((req: FakeRequest) => FakeReplySpec);

export interface FakeMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  [key: string]: unknown;
}

export interface FakeChatBody {
  model?: string;
  messages?: FakeMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  max_tokens?: number;
  max_completion_tokens?: number;
  [key: string]: unknown;
}

export interface FakeRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; undefined when there was no body or it was not JSON (see `rawBody`). */
  body: FakeChatBody | undefined;
  rawBody: string;
  /** True once the client went away before the reply was complete (abort, timeout). */
  clientClosed: boolean;
  /** Date.now() when the request's body had arrived. */
  receivedAt: number;
}

export interface FakeOpenAIOptions {
  defaultReply?: FakeReply;
  models?: string[];
  /** Listen on this port (default: a free one), e.g. to bring an endpoint back up where it was. */
  port?: number;
}

export interface FakeOpenAI {
  /** Base URL ending in `/v1`. */
  readonly url: string;
  readonly port: number;
  readonly requests: FakeRequest[];
  /** Chat completion requests only. */
  readonly chatRequests: FakeRequest[];
  /** The host's requests for a session title: answered with `setTitle`'s text, kept out of `requests`. */
  readonly titleRequests: FakeRequest[];
  setTitle(title: string): void;
  /** Scripted replies not consumed yet. */
  readonly pending: number;
  /** Chat requests answered with the default reply because the script was empty. */
  readonly unscripted: number;
  script(...replies: FakeReply[]): void;
  /** Replies for the conversation whose first user message contains `match` (see the header). */
  scriptFor(match: string, ...replies: FakeReply[]): void;
  setDefaultReply(reply: FakeReply): void;
  /** Resolves with the n-th request (1-based, any route) once it has arrived. Rejects after `timeoutMs`. */
  waitForRequest(n: number, timeoutMs?: number): Promise<FakeRequest>;
  /** Resolves once the n-th request's client has gone away before its reply completed. */
  waitForClientClose(n: number, timeoutMs?: number): Promise<FakeRequest>;
  close(): Promise<void>;
}

/* ------------------------------------------------------------------------------------------------
 * Implementation
 * ---------------------------------------------------------------------------------------------- */

const DEFAULT_MODELS = ['fake-model'];

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const requests: FakeRequest[] = [];
  const titleRequests: FakeRequest[] = [];
  const queue: FakeReply[] = [];
  const conversations: { match: string; queue: FakeReply[] }[] = [];
  let defaultReply: FakeReply = opts.defaultReply ?? { text: 'ok' };
  let unscripted = 0;
  let callCounter = 0;
  let completionCounter = 0;
  const waiters = new Set<() => void>();
  const sockets = new Set<import('node:net').Socket>();
  const models = opts.models ?? DEFAULT_MODELS;
  let titleText = 'Fake session title';
  const titleReply = (_r: FakeRequest): string => titleText;

  const notify = (): void => {
    for (const w of [...waiters]) w();
  };

  const waitFor = (pred: () => FakeRequest | undefined, what: string, timeoutMs: number): Promise<FakeRequest> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const r = pred();
        if (r) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(r);
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`fake-openai: timed out after ${timeoutMs} ms waiting for ${what} (got ${requests.length} requests)`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: FakeChatBody | undefined;
      if (rawBody.length > 0) {
        try {
          body = JSON.parse(rawBody) as FakeChatBody;
        } catch {
          body = undefined;
        }
      }
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const record: FakeRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        headers: req.headers,
        body,
        rawBody,
        clientClosed: false,
        receivedAt: Date.now(),
      };
      if (isTitleRequest(record)) titleRequests.push(record);
      else requests.push(record);
      res.on('close', () => {
        if (!res.writableFinished) {
          record.clientClosed = true;
          notify();
        }
      });
      notify();
      void route(record, res).catch(() => {
        if (!res.destroyed) res.destroy();
      });
    });
  });

  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function route(record: FakeRequest, res: http.ServerResponse): Promise<void> {
    if (record.method === 'GET' && record.path === '/v1/models') {
      sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake-openai' })),
      });
      return;
    }
    if (record.method === 'POST' && record.path === '/v1/chat/completions') {
      // The host's side request naming a session: answered here, never from the script.
      if (isTitleRequest(record)) {
        await answerChat(record, { text: titleReply(record) }, res);
        return;
      }
      const first = firstUserText(record.body);
      const conversation = conversations.find((c) => first.includes(c.match));
      let reply = conversation ? conversation.queue.shift() : queue.shift();
      if (reply === undefined) {
        unscripted++;
        reply = defaultReply;
      }
      const spec = typeof reply === 'function' ? reply(record) : reply;
      await answerChat(record, spec, res);
      return;
    }
    sendJson(res, 404, { error: { message: `Unknown route ${record.method} ${record.path}`, type: 'invalid_request_error', code: null } });
  }

  async function answerChat(record: FakeRequest, spec: FakeReplySpec, res: http.ServerResponse): Promise<void> {
    if ('hang' in spec) return; // leave the request open
    if ('raw' in spec) {
      res.writeHead(spec.status ?? 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...(spec.headers ?? {}) });
      const pieces = typeof spec.raw === 'string' ? [spec.raw] : spec.raw;
      for (const [i, piece] of pieces.entries()) {
        if (i === 1 && spec.gate) await spec.gate;
        if (res.destroyed) return;
        res.write(piece);
      }
      res.end();
      return;
    }
    if ('status' in spec) {
      const headers = { 'content-type': 'application/json', ...(spec.headers ?? {}) };
      const payload =
        spec.body === undefined
          ? { error: { message: defaultErrorMessage(spec.status, record.body?.model), type: errorType(spec.status), code: null } }
          : spec.body;
      res.writeHead(spec.status, headers);
      res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
      return;
    }
    const id = `chatcmpl-fake-${++completionCounter}`;
    const model = record.body?.model ?? models[0];
    const calls = 'toolCalls' in spec ? spec.toolCalls.map((c) => ({ id: c.id ?? `call_${++callCounter}`, name: c.name, args: argsString(c.arguments) })) : [];
    const finishReason = spec.finishReason ?? (calls.length > 0 ? 'tool_calls' : 'stop');
    const usage = spec.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
    const usageObj = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
    const text = spec.text ?? '';

    if (record.body?.stream !== true) {
      const message: Record<string, unknown> = { role: 'assistant', content: text.length > 0 || calls.length === 0 ? text : null };
      if (calls.length > 0) {
        message.tool_calls = calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } }));
      }
      sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
        usage: usageObj,
      });
      return;
    }

    // Streaming: build the list of content deltas first, then write them paced.
    const deltas: Record<string, unknown>[] = [];
    const textChunks = 'chunks' in spec && spec.chunks ? spec.chunks : splitText(text);
    for (const t of textChunks) deltas.push({ content: t });
    const pieces = 'argumentChunks' in spec && spec.argumentChunks ? spec.argumentChunks : 3;
    calls.forEach((c, index) => {
      const parts = splitInto(c.args, pieces);
      deltas.push({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: parts[0] ?? '' } }] });
      for (const p of parts.slice(1)) deltas.push({ tool_calls: [{ index, function: { arguments: p } }] });
    });

    const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
      })}\n\n`;

    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(chunk({ role: 'assistant', content: '' }, null));
    const delayMs = spec.delayMs ?? 2;
    const gateAfter = spec.gateAfterChunks ?? 1;
    if (delayMs <= 0 && !spec.gate && spec.cutAfterChunks === undefined) {
      // As fast as it can send (bench/chat.ts's burst): the same events, one write each, without a turn of
      // this process's event loop per event (it stands for a provider's server on another machine, whose
      // CPU a real setup does not share): the next write waits only when the socket pushes back.
      const created = Math.floor(Date.now() / 1000);
      const head = `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model }).slice(0, -1)},"choices":[{"index":0,"delta":`;
      for (const delta of deltas) {
        if (res.destroyed) return;
        // The same bytes as chunk(delta, null) (that JSON's key order), the envelope serialized once.
        if (!res.write(`${head}${JSON.stringify(delta)},"finish_reason":null,"logprobs":null}]}\n\n`)) {
          await new Promise<void>((resolve) => {
            const go = (): void => {
              res.off('drain', go);
              res.off('close', go);
              resolve();
            };
            res.on('drain', go);
            res.on('close', go);
          });
        }
      }
      if (res.destroyed) return;
      res.write(chunk({}, finishReason));
      if (record.body?.stream_options?.include_usage === true) {
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [], usage: usageObj })}\n\n`);
      }
      res.end('data: [DONE]\n\n');
      return;
    }
    for (let i = 0; i < deltas.length; i++) {
      if (res.destroyed) return;
      if (spec.cutAfterChunks !== undefined && i >= spec.cutAfterChunks) {
        res.socket?.destroy();
        return;
      }
      if (spec.gate && i === gateAfter) await spec.gate.catch(() => undefined);
      else if (i > 0 && delayMs > 0) await sleep(delayMs);
      if (res.destroyed) return;
      await write(res, chunk(deltas[i], null));
    }
    if (spec.cutAfterChunks !== undefined && deltas.length <= spec.cutAfterChunks) {
      // Cut requested at (or beyond) the end: still cut before the finish chunk.
      res.socket?.destroy();
      return;
    }
    if (spec.gate && deltas.length <= gateAfter) await spec.gate.catch(() => undefined);
    if (res.destroyed) return;
    res.write(chunk({}, finishReason));
    if (record.body?.stream_options?.include_usage === true) {
      res.write(
        `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [], usage: usageObj })}\n\n`,
      );
    }
    res.end('data: [DONE]\n\n');
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    titleRequests,
    setTitle(title: string) {
      titleText = title;
    },
    get chatRequests() {
      return requests.filter((r) => r.path === '/v1/chat/completions');
    },
    get pending() {
      return queue.length + conversations.reduce((n, c) => n + c.queue.length, 0);
    },
    get unscripted() {
      return unscripted;
    },
    script(...replies: FakeReply[]) {
      queue.push(...replies);
    },
    scriptFor(match: string, ...replies: FakeReply[]) {
      const c = conversations.find((x) => x.match === match);
      if (c) c.queue.push(...replies);
      else conversations.push({ match, queue: [...replies] });
    },
    setDefaultReply(reply: FakeReply) {
      defaultReply = reply;
    },
    waitForRequest(n: number, timeoutMs = 5000) {
      return waitFor(() => requests[n - 1], `request #${n}`, timeoutMs);
    },
    waitForClientClose(n: number, timeoutMs = 5000) {
      return waitFor(() => (requests[n - 1]?.clientClosed ? requests[n - 1] : undefined), `client close of request #${n}`, timeoutMs);
    },
    close() {
      return new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
    },
  };
}

/* ------------------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------------------- */

/** The host's title request starts with this system instruction (src/host/session-title.ts). */
const TITLE_MARKER = 'Name this coding conversation';

function isTitleRequest(r: FakeRequest): boolean {
  const first = r.body?.messages?.[0] as { role?: string; content?: unknown } | undefined;
  return r.method === 'POST' && first?.role === 'system' && typeof first.content === 'string' && first.content.startsWith(TITLE_MARKER);
}

function sendJson(res: http.ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

/** Resolves once the data was handed to the socket, so a following cut does not swallow it. */
function write(res: http.ServerResponse, data: string): Promise<void> {
  return new Promise((resolve) => {
    res.write(data, () => resolve());
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The text of a chat request's first user message ('' when there is none). */
function firstUserText(body: FakeChatBody | undefined): string {
  const content = body?.messages?.find((m) => m.role === 'user')?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('');
  return '';
}

function argsString(a: string | Record<string, unknown>): string {
  return typeof a === 'string' ? a : JSON.stringify(a);
}

/** "Hello big world" → ["Hello", " big", " world"]. */
export function splitText(text: string): string[] {
  if (text.length === 0) return [];
  const parts = text.match(/\s*\S+\s*$|\s*\S+/g);
  return parts && parts.join('') === text ? parts : [text];
}

/** Splits a string into at most n non-empty pieces of similar length (one piece for short strings). */
export function splitInto(s: string, n: number): string[] {
  if (s.length === 0) return [''];
  const size = Math.max(1, Math.ceil(s.length / n));
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

function errorType(status: number): string {
  if (status === 401) return 'invalid_request_error';
  if (status === 404) return 'invalid_request_error';
  if (status === 429) return 'rate_limit_exceeded';
  return 'server_error';
}

function defaultErrorMessage(status: number, model: string | undefined): string {
  switch (status) {
    case 401:
      return 'Incorrect API key provided.';
    case 404:
      return `The model \`${model ?? 'unknown'}\` does not exist or you do not have access to it.`;
    case 429:
      return 'Rate limit reached. Please try again later.';
    default:
      return `The server had an error while processing your request (fake status ${status}).`;
  }
}
