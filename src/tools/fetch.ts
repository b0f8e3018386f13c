import { z } from 'zod';
import { TextDecoder } from 'node:util';
import { ToolError } from '../workspace/errors';
import { deadline } from './deadline';
import { capText, truncationNotice } from '../workspace/output';
import type { ToolDefinition } from './tool';
import { Readable, pipeline } from 'node:stream';
import { BLOCKED_CODE, assertPublicDestination, guardedLookup, type Lookup } from './net-guard';
import { makeVisible, maskHeaderValue } from './visible';

export const DEFAULT_FETCH_MAX_BYTES = 1024 * 1024;
export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
const DEFAULT_CONVERT_TIMEOUT_MS = 20_000;
const MAX_FETCH_TIMEOUT_MS = 5 * 60_000;
const MAX_FETCH_BYTES = 20 * 1024 * 1024;

export const fetchParameters = z.object({
  url: z.string().min(1).describe('Absolute http:// or https:// URL to request.'),
  method: z.enum(['GET', 'POST']).optional().describe('HTTP method (default GET).'),
  headers: z.record(z.string(), z.string()).optional().describe('Extra request headers, e.g. {"Accept": "application/json"}.'),
  body: z.string().optional().describe('Request body for POST (sent as is; set Content-Type in headers).'),
  maxBytes: z
    .number()
    .int()
    .positive()
    .max(MAX_FETCH_BYTES)
    .optional()
    .describe('Stop downloading after this many bytes of the response body (default 1048576).'),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(MAX_FETCH_TIMEOUT_MS)
    .optional()
    .describe('Give up after this many milliseconds (default 30000).'),
});

export interface FetchResult {
  /** Final URL, after redirects. */
  url: string;
  status: number;
  contentType: string;
  /** The body as text: HTML as Markdown, JSON pretty-printed, other text as is. */
  content: string;
  /** True when the download stopped at maxBytes or the text was cut to the output cap. */
  truncated: boolean;
}

export interface FetchToolOptions {
  /** Default download cap when the model gives none (default 1 MB). */
  defaultMaxBytes?: number;
  /** Default timeout when the model gives none (default 30 s). */
  defaultTimeoutMs?: number;
  /** Longest an HTML page may take to convert to Markdown before the call fails (default 20 s). */
  convertTimeoutMs?: number;
  /** Injected for tests; defaults to the global fetch. */
  fetchImpl?: typeof fetch;
  /**
   * Hosts fetch may reach although they are (or resolve to) loopback, link-local or private addresses
   * (`fetch_allow_hosts`): names or IP literals, `*.example.com` for subdomains. Default none.
   */
  allowHosts?: readonly string[];
  /** Name resolution for the destination check (tests). */
  lookup?: Lookup;
}

/** Redirects followed at most (each hop is checked like the first URL). */
export const MAX_REDIRECTS = 10;

export const FETCH_DESCRIPTION = [
  'Make an HTTP(S) request and return the response body as text, with the status code and content type.',
  'HTML pages are converted to Markdown (headings, [links](url), lists, tables, fenced code; scripts, styles',
  'and navigation dropped), JSON is pretty-printed, other text is returned as is; binary responses are refused.',
  'Non-2xx statuses are returned, not errors.',
  'The download stops at maxBytes (default 1 MB) and the text is capped at 2,000 lines / 50 KB.',
].join(' ');

type BodyKind = 'html' | 'json' | 'text' | 'binary' | 'unknown';

function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}

export function classifyContentType(contentType: string): BodyKind {
  const t = mediaType(contentType);
  if (t === '') return 'unknown';
  if (t === 'text/html' || t === 'application/xhtml+xml') return 'html';
  if (t === 'application/json' || t.endsWith('+json')) return 'json';
  if (t.startsWith('text/')) return 'text';
  if (
    t.endsWith('+xml') ||
    ['application/xml', 'application/javascript', 'application/x-javascript', 'application/ecmascript',
      'application/x-sh', 'application/x-yaml', 'application/yaml', 'application/toml', 'application/sql',
      'application/graphql', 'application/x-www-form-urlencoded', 'application/ld+json', 'image/svg+xml',
    ].includes(t)
  ) {
    return 'text';
  }
  return 'binary';
}

function looksBinary(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, 8192);
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true;
  return false;
}

function charsetOf(contentType: string): string {
  const m = /charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return m ? m[1] : 'utf-8';
}

function decode(bytes: Uint8Array, contentType: string): string {
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(charsetOf(contentType));
  } catch {
    decoder = new TextDecoder('utf-8');
  }
  return decoder.decode(bytes);
}

/** Reads the body up to `maxBytes`; the rest is cancelled, not downloaded. */
async function readCapped(res: Response, maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }> {
  if (!res.body) return { bytes: new Uint8Array(0), truncated: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.length > maxBytes) {
      chunks.push(value.subarray(0, maxBytes - size));
      size = maxBytes;
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.length;
  }
  const bytes = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    bytes.set(c, off);
    off += c.length;
  }
  return { bytes, truncated };
}

/**
 * A minimal fetch over node:http(s) whose connections resolve names through `guardedLookup`: the address
 * connected to is the address checked (no DNS rebinding between the check and the request). No
 * redirects (the tool follows them itself), no compression asked for.
 */
export function pinnedFetch(allow: readonly string[], lookup?: Lookup): typeof fetch {
  const guard = guardedLookup(allow, lookup);
  return ((input: string | URL, init: RequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      // node:https, node:http and node:zlib are loaded at the first fetch, not at start-up (≈ 2–4 ms of a cold start, issue 24).
      const mod = (url.protocol === 'https:' ? require('node:https') : require('node:http')) as typeof import('node:http');
      const headers: Record<string, string> = {};
      new Headers(init.headers as ConstructorParameters<typeof Headers>[0]).forEach((v, k) => (headers[k] = v));
      headers['accept-encoding'] ??= 'gzip, deflate, br';
      const req = mod.request(url, { method: init.method ?? 'GET', headers, lookup: guard, signal: init.signal ?? undefined }, (res) => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) for (const x of v) h.append(k, x);
          else if (v !== undefined) h.set(k, v);
        }
        const status = res.statusCode ?? 502;
        const noBody = [204, 205, 304].includes(status) || init.method === 'HEAD';
        if (noBody) res.resume();
        // Decoded as fetch does; destroying the decoder (a download cut at maxBytes) destroys the response too.
        const enc = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
        const zlib = require('node:zlib') as typeof import('node:zlib');
        const decoder = enc === 'gzip' || enc === 'x-gzip' ? zlib.createGunzip() : enc === 'deflate' ? zlib.createInflate() : enc === 'br' ? zlib.createBrotliDecompress() : null;
        const body: Readable = decoder ? (pipeline(res, decoder, () => undefined) as Readable) : res;
        resolve(new Response(noBody ? null : (Readable.toWeb(body) as unknown as ReadableStream<Uint8Array>), { status, statusText: res.statusMessage ?? '', headers: h }));
      });
      req.on('error', reject);
      if (typeof init.body === 'string') req.write(init.body);
      req.end();
    })) as typeof fetch;
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ToolError('invalid_arguments', `"${raw}" is not a valid absolute URL.`, {
      suggestedAction: 'Pass an absolute URL starting with http:// or https://.',
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ToolError('invalid_arguments', `Only http and https URLs can be fetched, not ${url.protocol}.`, {
      suggestedAction: 'Use an http:// or https:// URL; read local files with the file tools.',
    });
  }
  return url;
}

function causeMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as Error & { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as Error & { code?: string }).code;
    return code ? `${cause.message} (${code})` : cause.message;
  }
  return err.message;
}

/**
 * HTML as Markdown, converted in a worker thread (turndown and its DOM load there, on the first HTML response).
 * A page that cannot be converted in time is an error the model can act on: fetch less of it.
 */
async function pageToMarkdown(html: string, pageUrl: string, timeoutMs: number, signal: AbortSignal): Promise<string> {
  const { convertHtmlInWorker } = require('./html-worker') as typeof import('./html-worker');
  let r: Awaited<ReturnType<typeof convertHtmlInWorker>>;
  try {
    r = await convertHtmlInWorker(html, pageUrl, { timeoutMs, signal });
  } catch {
    throw new ToolError('cancelled', 'The request was cancelled.');
  }
  if (r.ok) return r.markdown;
  const suggestedAction = 'Fetch less of the page (a smaller maxBytes) or a more specific URL (an API, the raw file).';
  if (r.reason === 'timeout') {
    throw new ToolError('timeout', `Converting the HTML of ${pageUrl} to Markdown took longer than ${timeoutMs} ms.`, { suggestedAction });
  }
  throw new ToolError('internal_error', `The HTML of ${pageUrl} could not be converted to Markdown: ${r.message}`, { suggestedAction });
}

export function createFetchTool(opts: FetchToolOptions = {}): ToolDefinition<typeof fetchParameters, FetchResult> {
  const defaultMaxBytes = opts.defaultMaxBytes ?? DEFAULT_FETCH_MAX_BYTES;
  const defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;

  return {
    name: 'fetch',
    description: FETCH_DESCRIPTION,
    parameters: fetchParameters,
    policy: 'exec',

    // Everything that will be sent: method, URL, every header with its value (credentials masked), the body.
    async preview(args) {
      const lines = [`${args.method ?? 'GET'} ${makeVisible(args.url)}`];
      const headers = { 'User-Agent': 'caboose.nvim', ...args.headers };
      for (const [k, v] of Object.entries(headers)) lines.push(`${makeVisible(k)}: ${maskHeaderValue(k, v)}`);
      if (args.body !== undefined) {
        lines.push('', `body (${Buffer.byteLength(args.body)} bytes):`, makeVisible(args.body));
      }
      if (args.maxBytes !== undefined) lines.push(`(download cap ${args.maxBytes} bytes)`);
      if (args.timeoutMs !== undefined) lines.push(`(timeout ${args.timeoutMs} ms)`);
      return { kind: 'text', text: lines.join('\n'), showsArguments: true };
    },

    async execute(args, ctx) {
      const url = parseUrl(args.url);
      const method = args.method ?? 'GET';
      if (method === 'GET' && args.body !== undefined) {
        throw new ToolError('invalid_arguments', 'A GET request cannot have a body.', {
          suggestedAction: 'Use method "POST" to send a body.',
        });
      }
      if (ctx.signal.aborted) throw new ToolError('cancelled', 'The request was cancelled.');
      const maxBytes = args.maxBytes ?? defaultMaxBytes;
      const timeoutMs = args.timeoutMs ?? defaultTimeoutMs;
      // Connections check the address they really use (pinnedFetch); tests may inject their own fetch.
      const doFetch = opts.fetchImpl ?? pinnedFetch(opts.allowHosts ?? [], opts.lookup);

      const allow = opts.allowHosts ?? [];
      await assertPublicDestination(url, allow, 0, opts.lookup);
      const limit = deadline(ctx.signal, timeoutMs);

      let res: Response;
      let body: { bytes: Uint8Array; truncated: boolean };
      let current = url;
      try {
        // Redirects are followed here, one hop at a time, each destination checked before it is requested.
        let hopMethod: string = method;
        let hopBody = args.body;
        let headers: Record<string, string> = { 'User-Agent': 'caboose.nvim', ...args.headers };
        for (let hop = 0; ; hop++) {
          res = await doFetch(current, { method: hopMethod, headers, body: hopBody, signal: limit.signal, redirect: 'manual' });
          const location = res.status >= 300 && res.status < 400 ? res.headers.get('location') : null;
          if (location === null) break;
          await res.body?.cancel().catch(() => undefined);
          if (hop + 1 > MAX_REDIRECTS) {
            throw new ToolError('network_error', `${url.href} redirected more than ${MAX_REDIRECTS} times.`, { suggestedAction: 'Fetch the final URL directly.' });
          }
          let next: URL;
          try {
            next = new URL(location, current);
          } catch {
            throw new ToolError('network_error', `${current.href} redirected to an invalid URL: ${location.slice(0, 200)}`);
          }
          if (next.protocol !== 'http:' && next.protocol !== 'https:') {
            throw new ToolError('permission_denied', `${current.href} redirected to ${next.protocol} (only http and https are fetched).`);
          }
          await assertPublicDestination(next, allow, hop + 1, opts.lookup);
          ctx.progress?.(`${res.status} → ${next.href}`);
          // As browsers do: 303 (and 301/302 after a POST) continue with a GET without the body.
          if (res.status === 303 || ((res.status === 301 || res.status === 302) && hopMethod === 'POST')) {
            hopMethod = 'GET';
            hopBody = undefined;
          }
          // Credentials never follow a redirect to another origin.
          if (next.origin !== current.origin) {
            headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !/^(authorization|cookie|proxy-authorization)$/i.test(k)));
          }
          current = next;
        }
        ctx.progress?.(`${res.status} ${res.statusText} ${res.headers.get('content-type') ?? ''}`.trim());
        body = await readCapped(res, maxBytes);
      } catch (err) {
        if (err instanceof ToolError) throw err;
        if ((err as { code?: string }).code === BLOCKED_CODE) {
          throw new ToolError('permission_denied', `fetch refused ${current.href}: ${(err as Error).message}; loopback, link-local and private addresses are not fetched unless listed in fetch_allow_hosts.`, {
            suggestedAction: 'Fetch a public URL, or ask the user to add this host to fetch_allow_hosts in setup().',
          });
        }
        if (limit.timedOut()) {
          throw new ToolError('timeout', `No complete response from ${url.href} within ${timeoutMs} ms.`, {
            suggestedAction: 'Retry with a larger timeoutMs, or try another URL.',
          });
        }
        if (ctx.signal.aborted) throw new ToolError('cancelled', 'The request was cancelled.');
        throw new ToolError('network_error', `Request to ${url.href} failed: ${causeMessage(err)}`, {
          suggestedAction: 'Check the URL (host, port, scheme); the server may be down or unreachable.',
        });
      } finally {
        limit.dispose();
      }

      const contentType = res.headers.get('content-type') ?? '';
      let kind = classifyContentType(contentType);
      if (kind === 'unknown') kind = looksBinary(body.bytes) ? 'binary' : 'text';
      if (kind === 'binary' || looksBinary(body.bytes)) {
        throw new ToolError('binary_file', `${url.href} returned binary content (${contentType || 'no content type'}).`, {
          suggestedAction: 'Fetch a text, HTML or JSON resource instead.',
          details: { status: res.status, contentType },
        });
      }

      const raw = decode(body.bytes, contentType);
      let text = raw;
      if (kind === 'html') {
        text = await pageToMarkdown(raw, current.href, opts.convertTimeoutMs ?? DEFAULT_CONVERT_TIMEOUT_MS, ctx.signal);
      } else if (kind === 'json' && !body.truncated) {
        try {
          text = JSON.stringify(JSON.parse(raw), null, 2);
        } catch {
          text = raw;
        }
      }

      let truncated = body.truncated;
      const capped = capText(text);
      if (capped.truncated) {
        truncated = true;
        const sep = capped.text.endsWith('\n') ? '' : '\n';
        text = `${capped.text}${sep}${truncationNotice(capped, 'fetch a more specific URL (or an API returning less) for the rest')}`;
      } else if (body.truncated) {
        text = `${text}\n[download stopped at ${maxBytes} bytes; pass a larger maxBytes for more]`;
      }
      return { url: current.href, status: res.status, contentType, content: text, truncated };
    },
  };
}
