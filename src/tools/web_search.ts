import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import { deadline } from './deadline';
import type { ToolDefinition } from './tool';

export const DEFAULT_SEARCH_RESULTS = 8;
export const MAX_SEARCH_RESULTS = 20;
export const DEFAULT_SEARCH_TIMEOUT_MS = 15_000;
/** Longest snippet kept per result. */
const MAX_SNIPPET_CHARS = 500;

export const webSearchParameters = z.object({
  query: z.string().min(1).describe('What to search the web for, as you would type it in a search engine.'),
  maxResults: z
    .number()
    .int()
    .min(1)
    .max(MAX_SEARCH_RESULTS)
    .optional()
    .describe(`How many results to return (default ${DEFAULT_SEARCH_RESULTS}, at most ${MAX_SEARCH_RESULTS}).`),
});

export interface WebSearchHit {
  title: string;
  url: string;
  snippet: string;
}

export interface WebSearchResult {
  results: WebSearchHit[];
}

/** A search engine behind web_search. Only SearXNG exists today; others implement the same interface. */
export interface SearchBackend {
  readonly name: string;
  search(query: string, maxResults: number, signal: AbortSignal): Promise<WebSearchHit[]>;
}

export interface SearxngOptions {
  /** Base URL of the SearXNG instance, e.g. "http://localhost:8888" (JSON output must be enabled there). */
  url: string;
  /** Injected for tests; defaults to the global fetch. */
  fetchImpl?: typeof fetch;
}

const searxngResponse = z.object({
  results: z
    .array(
      z.looseObject({
        title: z.string().optional(),
        url: z.string().optional(),
        content: z.string().optional(),
      }),
    )
    .default([]),
});

/** Queries `<url>/search?q=…&format=json`. */
export function searxngBackend(opts: SearxngOptions): SearchBackend {
  const base = opts.url.endsWith('/') ? opts.url : `${opts.url}/`;
  return {
    name: 'searxng',
    async search(query, maxResults, signal) {
      const url = new URL('search', base);
      url.searchParams.set('q', query);
      url.searchParams.set('format', 'json');
      const doFetch = opts.fetchImpl ?? fetch;
      const res = await doFetch(url, { headers: { Accept: 'application/json' }, signal });
      if (!res.ok) {
        const hint =
          res.status === 403
            ? 'The SearXNG instance refuses JSON output: add "json" to search.formats in its settings.yml.'
            : 'Check that the configured SearXNG instance is running.';
        throw new ToolError('network_error', `The search engine answered HTTP ${res.status}.`, { suggestedAction: hint });
      }
      let json: unknown;
      try {
        json = await res.json();
      } catch {
        throw new ToolError('network_error', 'The search engine returned something that is not JSON.', {
          suggestedAction: 'Check that the configured URL points to a SearXNG instance.',
        });
      }
      const parsed = searxngResponse.safeParse(json);
      if (!parsed.success) {
        throw new ToolError('network_error', 'The search engine returned JSON without a results list.');
      }
      const hits: WebSearchHit[] = [];
      for (const r of parsed.data.results) {
        if (!r.url) continue;
        const snippet = (r.content ?? '').replace(/\s+/g, ' ').trim();
        hits.push({
          title: (r.title ?? '').trim() || r.url,
          url: r.url,
          snippet: snippet.length > MAX_SNIPPET_CHARS ? `${snippet.slice(0, MAX_SNIPPET_CHARS - 1)}…` : snippet,
        });
        if (hits.length >= maxResults) break;
      }
      return hits;
    },
  };
}

export const WEB_SEARCH_DESCRIPTION = [
  'Search the web and return a list of results (title, url, snippet).',
  'Use it to find documentation, error messages or recent information; then read a page with fetch.',
].join(' ');

export interface WebSearchToolOptions {
  backend: SearchBackend;
  /** Default 15 s. */
  timeoutMs?: number;
}

export function createWebSearchTool(opts: WebSearchToolOptions): ToolDefinition<typeof webSearchParameters, WebSearchResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_SEARCH_TIMEOUT_MS;
  return {
    name: 'web_search',
    description: WEB_SEARCH_DESCRIPTION,
    parameters: webSearchParameters,
    policy: 'exec',

    async preview(args) {
      return { kind: 'text', text: `Search the web (${opts.backend.name}): ${args.query}` };
    },

    async execute(args, ctx) {
      if (ctx.signal.aborted) throw new ToolError('cancelled', 'The search was cancelled.');
      const limit = deadline(ctx.signal, timeoutMs);
      try {
        const results = await opts.backend.search(args.query, args.maxResults ?? DEFAULT_SEARCH_RESULTS, limit.signal);
        return { results };
      } catch (err) {
        if (limit.timedOut()) throw new ToolError('timeout', `The search engine did not answer within ${timeoutMs} ms.`);
        if (ctx.signal.aborted) throw new ToolError('cancelled', 'The search was cancelled.');
        if (err instanceof ToolError) throw err;
        const cause = err instanceof Error ? ((err as Error & { cause?: unknown }).cause ?? err) : err;
        throw new ToolError('network_error', `The search failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
          suggestedAction: 'Check that the configured search engine is reachable; meanwhile use fetch on a known URL.',
        });
      } finally {
        limit.dispose();
      }
    },
  };
}
