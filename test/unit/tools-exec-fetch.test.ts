import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createFetchTool, classifyContentType, type FetchResult } from '../../src/tools/fetch';
import { htmlToText, decodeEntities } from '../../src/tools/html-to-text';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolContext } from '../../src/tools/tool';
import { MAX_OUTPUT_BYTES } from '../../src/tools/output';
import { testToolContext } from '../support/tool-context';
import { closedPort, startLocalHttp, type LocalHttp } from '../support/local-http';

const makeCtx = (extra: Partial<ToolContext> = {}): ToolContext => testToolContext(undefined, extra);

const PAGE = `<!DOCTYPE html><html><head><title>Test &amp; Page</title><style>body{color:red}</style>
<script>var secret = "do not show";</script></head>
<body><h1>Hello&nbsp;world</h1><p>First   paragraph with <a href="/docs?a=1&amp;b=2">the docs</a>.</p>
<noscript>enable js</noscript>
<ul><li>one</li><li>two &lt;b&gt;</li></ul><div>caf&eacute; &#233; &#x263A;</div><pre>  keep
    indent</pre></body></html>`;

let local: LocalHttp;
let base: string;
/** Resolved each time the /slow route receives a request. */
let onSlow: (() => void) | undefined;
let hugeBytesSent = 0;

before(async () => {
  local = await startLocalHttp((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/page.html':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(PAGE);
        return;
      case '/data.json':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"a":1,"b":[true,null]}');
        return;
      case '/plain.txt':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('just text\n  spaced\n');
        return;
      case '/latin1':
        res.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' });
        res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
        return;
      case '/binary':
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
        return;
      case '/untyped-binary':
        res.end(Buffer.from([0x41, 0, 0x42, 0]));
        return;
      case '/untyped-text':
        res.end('no content type here');
        return;
      case '/lines':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join('\n'));
        return;
      case '/huge': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(64 * 1024, 'a');
        let sent = 0;
        hugeBytesSent = 0;
        const pump = (): void => {
          while (sent < 50 * 1024 * 1024) {
            sent += chunk.length;
            hugeBytesSent = sent;
            if (!res.write(chunk)) {
              res.once('drain', pump);
              return;
            }
          }
          res.end();
        };
        res.on('close', () => undefined);
        pump();
        return;
      }
      case '/slow':
        onSlow?.();
        return; // never answers
      case '/redirect':
        res.writeHead(302, { location: '/plain.txt' });
        res.end();
        return;
      case '/missing':
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('no such thing');
        return;
      case '/echo': {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (c: string) => (body += c));
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ method: req.method, body, custom: req.headers['x-custom'] ?? null }));
        });
        return;
      }
      default:
        res.writeHead(500);
        res.end();
    }
  });
  base = local.base;
});

after(() => local.close());

const registry = new ToolRegistry([createFetchTool()]);

async function get(args: Record<string, unknown>, ctx = makeCtx()): Promise<FetchResult> {
  const res = await registry.call('fetch', args, ctx);
  if (!res.ok) assert.fail(`fetch failed: ${JSON.stringify(res.error)}`);
  return res.data as FetchResult;
}

async function fails(args: Record<string, unknown>, ctx = makeCtx()): Promise<{ kind: string; message: string }> {
  const res = await registry.call('fetch', args, ctx);
  if (res.ok) assert.fail(`expected an error, got ${JSON.stringify(res.data)}`);
  return res.error;
}

describe('fetch: content handling', () => {
  test('HTML is reduced to text', async () => {
    const r = await get({ url: `${base}/page.html` });
    assert.equal(r.status, 200);
    assert.equal(r.contentType, 'text/html; charset=utf-8');
    assert.equal(r.truncated, false);
    assert.ok(r.content.startsWith('Test & Page\n'));
    assert.match(r.content, /# Hello world/);
    assert.match(r.content, /First paragraph with the docs \(http:\/\/127\.0\.0\.1:\d+\/docs\?a=1&b=2\)\./);
    assert.match(r.content, /^- one$/m);
    assert.match(r.content, /^- two <b>$/m);
    assert.match(r.content, /café é ☺/);
    assert.match(r.content, /  keep\n    indent/);
    assert.ok(!r.content.includes('secret'));
    assert.ok(!r.content.includes('color:red'));
    assert.ok(!r.content.includes('enable js'));
    assert.ok(!r.content.includes('<'.concat('p>')));
  });

  test('JSON is pretty-printed', async () => {
    const r = await get({ url: `${base}/data.json` });
    assert.equal(r.content, '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}');
  });

  test('plain text is returned as is', async () => {
    const r = await get({ url: `${base}/plain.txt` });
    assert.equal(r.content, 'just text\n  spaced\n');
  });

  test('the charset of the content type is honoured', async () => {
    const r = await get({ url: `${base}/latin1` });
    assert.equal(r.content, 'café');
  });

  test('text without a content type is sniffed as text', async () => {
    const r = await get({ url: `${base}/untyped-text` });
    assert.equal(r.content, 'no content type here');
  });

  test('binary responses are binary_file errors', async () => {
    assert.equal((await fails({ url: `${base}/binary` })).kind, 'binary_file');
    assert.equal((await fails({ url: `${base}/untyped-binary` })).kind, 'binary_file');
  });

  test('redirects are followed and the final URL reported', async () => {
    const r = await get({ url: `${base}/redirect` });
    assert.equal(r.url, `${base}/plain.txt`);
    assert.equal(r.content, 'just text\n  spaced\n');
  });

  test('a 404 is a result with its status, not an error', async () => {
    const r = await get({ url: `${base}/missing` });
    assert.equal(r.status, 404);
    assert.equal(r.content, 'no such thing');
  });

  test('POST sends the body and headers', async () => {
    const r = await get({
      url: `${base}/echo`,
      method: 'POST',
      headers: { 'X-Custom': 'yes', 'Content-Type': 'text/plain' },
      body: 'payload',
    });
    assert.deepEqual(JSON.parse(r.content), { method: 'POST', body: 'payload', custom: 'yes' });
  });

  test('preview names the method and URL', async () => {
    const tool = createFetchTool();
    assert.deepEqual(await tool.preview!({ url: `${base}/x` }, makeCtx()), { kind: 'text', text: `GET ${base}/x` });
    assert.deepEqual(await tool.preview!({ url: `${base}/x`, method: 'POST' }, makeCtx()), { kind: 'text', text: `POST ${base}/x` });
  });
});

describe('fetch: limits and failures', () => {
  test('long text is capped to the output limit with a notice', async () => {
    const r = await get({ url: `${base}/lines` });
    assert.equal(r.truncated, true);
    assert.ok(r.content.startsWith('line 1\nline 2\n'));
    assert.match(r.content, /\[output truncated: 3000 of 5000 lines/);
    assert.ok(!r.content.includes('line 2001\n'));
  });

  test('the download stops at maxBytes', async () => {
    const r = await get({ url: `${base}/huge`, maxBytes: 100_000 });
    assert.equal(r.truncated, true);
    assert.ok(Buffer.byteLength(r.content) <= MAX_OUTPUT_BYTES + 300);
    assert.ok(r.content.startsWith('aaaa'));
    assert.ok(hugeBytesSent < 50 * 1024 * 1024, 'the server was not read to the end');
  });

  test('a short download cap is reported in the content', async () => {
    const r = await get({ url: `${base}/plain.txt`, maxBytes: 4 });
    assert.equal(r.truncated, true);
    assert.match(r.content, /^just\n\[download stopped at 4 bytes/);
  });

  test('timeout', async () => {
    const started = Date.now();
    const e = await fails({ url: `${base}/slow`, timeoutMs: 200 });
    assert.equal(e.kind, 'timeout');
    assert.ok(Date.now() - started < 5000);
  });

  test('abort through ctx.signal is cancelled', async () => {
    const controller = new AbortController();
    onSlow = () => controller.abort();
    try {
      const e = await fails({ url: `${base}/slow` }, makeCtx({ signal: controller.signal }));
      assert.equal(e.kind, 'cancelled');
    } finally {
      onSlow = undefined;
    }
  });

  test('connection refused is network_error', async () => {
    const port = await closedPort();
    const e = await fails({ url: `http://127.0.0.1:${port}/` });
    assert.equal(e.kind, 'network_error');
    assert.match(e.message, /ECONNREFUSED/);
  });

  test('only absolute http(s) URLs are accepted', async () => {
    assert.equal((await fails({ url: 'file:///etc/passwd' })).kind, 'invalid_arguments');
    assert.equal((await fails({ url: 'not a url' })).kind, 'invalid_arguments');
    assert.equal((await fails({ url: `${base}/echo`, body: 'x' })).kind, 'invalid_arguments');
    assert.equal((await fails({ url: `${base}/echo`, method: 'PUT' })).kind, 'invalid_arguments');
  });
});

describe('html-to-text helpers', () => {
  test('decodeEntities handles named, decimal and hex references and leaves unknown ones', () => {
    assert.equal(decodeEntities('&lt;a&gt; &amp;&amp; &#65;&#x42; &bogus; &#0;'), '<a> && AB &bogus; &#0;');
  });

  test('links whose text is the URL are not repeated; fragment links keep their text only', () => {
    assert.equal(htmlToText('<p><a href="https://e.x/">https://e.x/</a> <a href="#top">top</a></p>'), 'https://e.x/ top');
  });

  test('tables become rows, images their alt text', () => {
    const t = htmlToText('<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table><img src="x.png" alt="logo">');
    assert.match(t, /^a\s+b$/m);
    assert.match(t, /^1\s+2$/m);
    assert.match(t, /\[image: logo\]/);
  });

  test('content types are classified', () => {
    assert.equal(classifyContentType('text/html; charset=utf-8'), 'html');
    assert.equal(classifyContentType('application/vnd.api+json'), 'json');
    assert.equal(classifyContentType('application/xml'), 'text');
    assert.equal(classifyContentType('image/png'), 'binary');
    assert.equal(classifyContentType(''), 'unknown');
  });
});

test('html-to-text: Latin-1 entities are case-sensitive; &nbsp; becomes a plain space', () => {
  assert.equal(decodeEntities('&Eacute;&eacute;&szlig;&yuml;&divide;&times;&nbsp;|'), 'Ééßÿ÷× |');
});
