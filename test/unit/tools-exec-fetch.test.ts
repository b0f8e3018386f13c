import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createFetchTool, classifyContentType, type FetchResult } from '../../src/tools/fetch';
import { htmlToMarkdown } from '../../src/tools/html-to-markdown';
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
      case '/deep.html':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<p>top</p>${'<div>'.repeat(20_000)}deep${'</div>'.repeat(20_000)}`);
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

// The test server is on 127.0.0.1: allowed explicitly (fetch refuses loopback by default, issue 18 item 14).
const LOCAL = { allowHosts: ['127.0.0.1'] };
const registry = new ToolRegistry([createFetchTool(LOCAL)]);

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
  test('HTML is converted to Markdown', async () => {
    const r = await get({ url: `${base}/page.html` });
    assert.equal(r.status, 200);
    assert.equal(r.contentType, 'text/html; charset=utf-8');
    assert.equal(r.truncated, false);
    assert.ok(r.content.startsWith('Test & Page\n\n# Hello world\n'), r.content);
    assert.match(r.content, /First paragraph with \[the docs\]\(http:\/\/127\.0\.0\.1:\d+\/docs\?a=1&b=2\)\./);
    assert.match(r.content, /^-\s+one$/m);
    assert.match(r.content, /^-\s+two <b>$/m);
    assert.match(r.content, /café é ☺/);
    assert.match(r.content, /```\n  keep\n    indent\n```/);
    assert.ok(!r.content.includes('secret'));
    assert.ok(!r.content.includes('color:red'));
    assert.ok(!r.content.includes('enable js'));
    assert.ok(!r.content.includes('<'.concat('p>')));
  });

  test('a page too slow to convert is a timeout, and the host stays responsive meanwhile', async () => {
    const slowRegistry = new ToolRegistry([createFetchTool({ ...LOCAL, convertTimeoutMs: 1500 })]);
    const order: string[] = [];
    const deep = slowRegistry.call('fetch', { url: `${base}/deep.html` }, makeCtx()).then((r) => (order.push('deep'), r));
    // The conversion runs in a worker thread: another request is served while it works.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const plain = await get({ url: `${base}/plain.txt` });
    order.push('plain');
    assert.equal(plain.content, 'just text\n  spaced\n');
    const res = await deep;
    if (res.ok) assert.fail(`expected a timeout, got ${JSON.stringify(res.data).slice(0, 200)}`);
    assert.equal(res.error.kind, 'timeout');
    assert.match(res.error.message, /^Converting the HTML of http:\/\/127\.0\.0\.1:\d+\/deep\.html to Markdown took longer than 1500 ms\.$/);
    assert.match(res.error.suggestedAction ?? '', /smaller maxBytes/);
    assert.deepEqual(order, ['plain', 'deep']);
  });

  test('cancelling a fetch stops the conversion', async () => {
    const controller = new AbortController();
    const started = Date.now();
    // Aborted once the response is in (the body is read well within 300 ms), so while the page converts.
    const progress = (): void => void setTimeout(() => controller.abort(), 300);
    const pending = registry.call('fetch', { url: `${base}/deep.html` }, makeCtx({ signal: controller.signal, progress }));
    const res = await pending;
    assert.equal(res.ok, false);
    assert.equal((res as { error: { kind: string } }).error.kind, 'cancelled');
    assert.ok(Date.now() - started < 5000);
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
    assert.deepEqual(await tool.preview!({ url: `${base}/x` }, makeCtx()), { kind: 'text', text: `GET ${base}/x\nUser-Agent: caboose.nvim`, showsArguments: true });
    const post = await tool.preview!({ url: `${base}/x`, method: 'POST', headers: { 'X-Api-Key': 'k-123', Accept: 'text/plain' }, body: 'a\nb\u001b' }, makeCtx());
    assert.deepEqual(post, {
      kind: 'text',
      text: `POST ${base}/x\nUser-Agent: caboose.nvim\nX-Api-Key: •••• (masked, 5 characters)\nAccept: text/plain\n\nbody (4 bytes):\na\nb^[`,
      showsArguments: true,
    });
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

describe('fetch: content types', () => {
  test('content types are classified', () => {
    assert.equal(classifyContentType('text/html; charset=utf-8'), 'html');
    assert.equal(classifyContentType('application/vnd.api+json'), 'json');
    assert.equal(classifyContentType('application/xml'), 'text');
    assert.equal(classifyContentType('image/png'), 'binary');
    assert.equal(classifyContentType(''), 'unknown');
  });
});

// Cases after turndown's own suite (test/index.html) and its GFM plugin's, plus what fetch adds: absolute
// links, dropped noise, no Markdown escapes, the page title.
describe('fetch: HTML → Markdown', () => {
  const md = (html: string, baseUrl?: string): string => htmlToMarkdown(html, baseUrl);

  test('headings are ATX, with inline children kept', () => {
    assert.equal(md('<h1>One</h1><h2>Two <em>em</em></h2><h4>Four with <code>child</code></h4><h7>Seven?</h7>'),
      '# One\n\n## Two _em_\n\n#### Four with `child`\n\nSeven?');
  });

  test('nested lists keep their levels, numbering and start', () => {
    assert.equal(md('<ul><li>root</li><li>item<ol><li>nested</li><li>two<ul><li>deep</li></ul></li></ol></li><li>last</li></ul>'),
      '-   root\n-   item\n    1.  nested\n    2.  two\n        -   deep\n-   last');
    assert.equal(md('<ol start="42"><li>a</li><li>b</li></ol>'), '42.  a\n43.  b');
    assert.equal(md('<ol><li><p>para one</p><p>para two</p></li><li><p>second</p></li></ol>'), '1.  para one\n\n    para two\n\n2.  second');
  });

  test('pre/code become fenced blocks with their language; blank lines inside are kept', () => {
    assert.equal(md('<pre><code class="language-python">def f():\n    return 1\n\n\ndef g():\n    pass\n</code></pre>'),
      '```python\ndef f():\n    return 1\n\n\ndef g():\n    pass\n```');
    assert.equal(md('<pre>  keep\n    indent</pre>'), '```\n  keep\n    indent\n```');
    assert.equal(md('<pre lang="sh">ls -la</pre><pre class="lang-rb">puts 1</pre>'), '```sh\nls -la\n```\n\n```rb\nputs 1\n```');
    assert.equal(md('<div class="highlight highlight-source-js"><pre>let a = 1;</pre></div>'), '```js\nlet a = 1;\n```');
    assert.equal(md('<pre><code>def f\n  # 42 &lt; 9001\nend</code></pre>'), '```\ndef f\n  # 42 < 9001\nend\n```');
    // A fence longer than any backtick run inside.
    assert.equal(md('<pre><code>a ``` b</code></pre>'), '````\na ``` b\n````');
    assert.equal(md('<p>a</p><pre></pre><p>b</p>'), 'a\n\nb');
  });

  test('inline code, emphasis, strikethrough, blockquotes, rules and breaks', () => {
    assert.equal(md('<code>There is a literal backtick (`) here</code>'), '``There is a literal backtick (`) here``');
    assert.equal(md('<p><del>old</del> <strong>b</strong> <em>i</em></p><hr><p>line<br>break</p>'), '~~old~~ **b** _i_\n\n---\n\nline  \nbreak');
    assert.equal(md('<blockquote><h2>Header</h2><ol><li>first</li></ol><pre><code>return 1 &lt; 2;</code></pre></blockquote>'),
      '> ## Header\n> \n> 1.  first\n> \n> ```\n> return 1 < 2;\n> ```');
    assert.equal(md('<ul><li><input type="checkbox" checked> done</li><li><input type="checkbox"> todo</li></ul>'), '-   [x]  done\n-   [ ]  todo');
  });

  test('tables: a header row, pipes escaped, a table without one gets an empty header, colspan, layout tables', () => {
    assert.equal(md('<table><thead><tr><th>Name</th><th>Type</th></tr></thead><tbody><tr><td>a</td><td><code>string | null</code></td></tr><tr><td>b</td><td>multi<br>line</td></tr></tbody></table>'),
      '| Name | Type |\n| --- | --- |\n| a   | `string \\| null` |\n| b   | multi  <br>line |');
    assert.equal(md('<table><tr><td>k</td><td>v</td></tr></table>'), '|     |     |\n| --- | --- |\n| k   | v   |');
    assert.equal(md('<table><tr><th>h1</th><th>h2</th></tr><tr><td colspan="2">wide</td></tr></table>'), '| h1  | h2  |\n| --- | --- |\n| wide |     |');
    // A table holding a table is layout: its cells are read as text.
    assert.equal(md('<table><tr><td><table><tr><td>inner</td><td>x</td></tr></table></td></tr></table>'), '|     |     |\n| --- | --- |\n| inner | x   |');
  });

  test('links are made absolute; fragment, javascript: and href-less anchors keep their text only', () => {
    assert.equal(
      md('<p><a href="../up/x.html">up</a> <a href="//cdn.x/y">proto</a> <a href="?q=1">query</a> <a href="#frag">frag</a> <a href="javascript:alert(1)">js</a> <a name="n">no href</a> <a href="mailto:a@b.c">mail</a></p>', 'https://site.x/docs/page.html'),
      '[up](https://site.x/up/x.html) [proto](https://cdn.x/y) [query](https://site.x/docs/page.html?q=1) frag js no href [mail](mailto:a@b.c)',
    );
    assert.equal(md('<a href="http://example.com/code">Some <code>code</code></a>'), '[Some `code`](http://example.com/code)');
    // Spaces and parentheses would end the target early; a link whose text is its URL is written once.
    assert.equal(md('<p><a href="https://e.x/a b(c)">spaced</a> and <a href="https://e.x/">https://e.x/</a></p>'), '[spaced](https://e.x/a%20b%28c%29) and <https://e.x/>');
    // An icon link is named by its title; a link around blocks is one line.
    assert.equal(md('<a href="/print" title="Print this book"><svg></svg></a>', 'https://b.x/'), '[Print this book](https://b.x/print)');
    assert.equal(md('<a href="/card"><div><h3>Card</h3><p>desc</p></div></a>', 'https://b.x/'), '[### Card desc](https://b.x/card)');
  });

  test('images: alt text and an absolute src; no alt, no src or a data: URI are not copied', () => {
    assert.equal(md('<p><img src="/i.png" alt="A  logo"> <img src="t.gif"> <img> <img src="data:image/png;base64,AAAA" alt="inline"></p>', 'https://site.x/p/'),
      '![A logo](https://site.x/i.png)   [image: inline]');
  });

  test('entities are decoded; &nbsp; is a plain space; unknown references and bare ampersands stay', () => {
    assert.equal(md('<p>&lt;tag&gt; &amp;amp; &quot;q&quot; &#39;s&#39; &#x1F600; &copy; &Eacute;&szlig; x&nbsp;&nbsp;y &bogus; AT&T</p>'),
      '<tag> &amp; "q" \'s\' 😀 © Éß x  y &bogus; AT&T');
  });

  test('no Markdown escapes: identifiers and line starts come through as written', () => {
    assert.equal(md('<p>snake_case *args a[i] # not a heading</p><p>1. not a list</p>'), 'snake_case *args a[i] # not a heading\n\n1. not a list');
  });

  test('scripts, styles, navigation and embedded documents are dropped; comments too', () => {
    assert.equal(
      md('<body><header>Top</header><nav><a href="/a">A</a></nav><main><p>Main<!-- note --></p></main><script>evil()</script><style>.x{}</style>' +
        '<noscript>ns</noscript><template>t</template><iframe>i</iframe><svg><text>s</text></svg><canvas>c</canvas><footer>Foot</footer></body>'),
      'Top\n\nMain\n\nFoot',
    );
  });

  test('the title comes first; whitespace left between dropped elements leaves no blank-looking lines', () => {
    assert.equal(md('<html><head><title> The\n  Title </title>\n  <style>x</style>\n  <script>y</script>\n</head><body>\n <span> </span> \n<h1>H</h1></body></html>'), 'The Title\n\n# H');
  });
});
