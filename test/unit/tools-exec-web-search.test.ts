import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createWebSearchTool, searxngBackend, type WebSearchResult } from '../../src/tools/web_search';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolContext } from '../../src/tools/tool';
import { testToolContext } from '../support/tool-context';
import { closedPort, startLocalHttp, type LocalHttp } from '../support/local-http';

const makeCtx = (extra: Partial<ToolContext> = {}): ToolContext => testToolContext(undefined, extra);

/** A fake SearXNG: /search?q=…&format=json, plus misbehaving instances under other prefixes. */
let local: LocalHttp;
let base: string;
const seen: URL[] = [];
let onHang: (() => void) | undefined;

const HITS = Array.from({ length: 12 }, (_, i) => ({
  title: `Result ${i + 1}`,
  url: `https://example.test/${i + 1}`,
  content: `Snippet   number\n${i + 1}`,
  engine: 'fake',
}));

before(async () => {
  local = await startLocalHttp((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push(url);
    if (url.pathname === '/search' || url.pathname === '/searx/search') {
      if (url.searchParams.get('format') !== 'json') {
        res.writeHead(400);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ query: url.searchParams.get('q'), results: [{ title: 'no url' }, ...HITS] }));
      return;
    }
    if (url.pathname === '/forbidden/search') {
      res.writeHead(403);
      res.end('Forbidden');
      return;
    }
    if (url.pathname === '/html/search') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>not json</html>');
      return;
    }
    if (url.pathname === '/hang/search') {
      onHang?.();
      return;
    }
    res.writeHead(404);
    res.end();
  });
  base = local.base;
});

after(() => local.close());

function registryFor(url: string, timeoutMs?: number): ToolRegistry {
  return new ToolRegistry([createWebSearchTool({ backend: searxngBackend({ url }), timeoutMs })]);
}

describe('web_search (SearXNG)', () => {
  test('queries <url>/search with format=json and maps results', async () => {
    seen.length = 0;
    const res = await registryFor(base).call('web_search', { query: 'neovim lua' }, makeCtx());
    assert.ok(res.ok);
    const data = res.data as WebSearchResult;
    assert.equal(seen.length, 1);
    assert.equal(seen[0].pathname, '/search');
    assert.equal(seen[0].searchParams.get('q'), 'neovim lua');
    assert.equal(seen[0].searchParams.get('format'), 'json');
    assert.equal(data.results.length, 8, 'default maxResults');
    assert.deepEqual(data.results[0], { title: 'Result 1', url: 'https://example.test/1', snippet: 'Snippet number 1' });
  });

  test('maxResults limits the results; results without a url are skipped', async () => {
    const res = await registryFor(`${base}/searx/`).call('web_search', { query: 'x', maxResults: 3 }, makeCtx());
    assert.ok(res.ok);
    assert.deepEqual(
      (res.data as WebSearchResult).results.map((r) => r.title),
      ['Result 1', 'Result 2', 'Result 3'],
    );
  });

  test('maxResults above the limit is invalid_arguments', async () => {
    const res = await registryFor(base).call('web_search', { query: 'x', maxResults: 1000 }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'invalid_arguments');
  });

  test('403 (JSON format disabled) is a network_error with a hint', async () => {
    const res = await registryFor(`${base}/forbidden`).call('web_search', { query: 'x' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) {
      assert.equal(res.error.kind, 'network_error');
      assert.match(res.error.suggestedAction ?? '', /search\.formats/);
    }
  });

  test('a non-JSON answer is a network_error', async () => {
    const res = await registryFor(`${base}/html`).call('web_search', { query: 'x' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'network_error');
  });

  test('an unreachable engine is a network_error', async () => {
    const port = await closedPort();
    const res = await registryFor(`http://127.0.0.1:${port}`).call('web_search', { query: 'x' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'network_error');
  });

  test('a hanging engine times out', async () => {
    const res = await registryFor(`${base}/hang`, 200).call('web_search', { query: 'x' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'timeout');
  });

  test('abort through ctx.signal is cancelled', async () => {
    const controller = new AbortController();
    onHang = () => controller.abort();
    try {
      const res = await registryFor(`${base}/hang`).call('web_search', { query: 'x' }, makeCtx({ signal: controller.signal }));
      assert.equal(res.ok, false);
      if (!res.ok) assert.equal(res.error.kind, 'cancelled');
    } finally {
      onHang = undefined;
    }
  });

  test('preview shows the query', async () => {
    const tool = createWebSearchTool({ backend: searxngBackend({ url: base }) });
    assert.deepEqual(await tool.preview!({ query: 'abc' }, makeCtx()), { kind: 'text', text: 'Search the web (searxng): abc' });
  });
});
