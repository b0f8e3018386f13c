/** Issue 18, item 14: fetch refuses loopback, link-local and private destinations, on every redirect hop. */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createFetchTool } from '../../src/tools/fetch';
import { blockedReason, hostAllowed } from '../../src/tools/net-guard';
import { ToolRegistry } from '../../src/tools/registry';
import { testToolContext } from '../support/tool-context';
import { startLocalHttp, type LocalHttp } from '../support/local-http';

let local: LocalHttp;
let hits: string[] = [];
before(async () => {
  local = await startLocalHttp((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/secret') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('INTERNAL-SECRET\n');
      return;
    }
    res.writeHead(302, { location: decodeURIComponent((req.url ?? '/').replace(/^\/to\//, '')) });
    res.end();
  });
});
after(() => local.close());

const port = () => new URL(local.base).port;
const call = async (reg: ToolRegistry, url: string) => reg.call('fetch', { url }, testToolContext());

test('loopback, link-local and private addresses are refused in every spelling, names resolving there too', async () => {
  const reg = new ToolRegistry([createFetchTool()]);
  const urls = [
    `http://127.0.0.1:${port()}/secret`,
    `http://2130706433:${port()}/secret`,
    `http://0x7f.1:${port()}/secret`,
    `http://[::ffff:127.0.0.1]:${port()}/secret`,
    `http://[::1]:${port()}/secret`,
    `http://localhost:${port()}/secret`,
    'http://169.254.169.254/latest/meta-data/',
    'http://10.1.2.3/',
    'http://192.168.0.1/',
    'http://172.20.0.1/',
    'http://[fe80::1]/',
    'http://[fd00::1]/',
    'http://0.0.0.0/',
  ];
  hits = [];
  for (const url of urls) {
    const res = await call(reg, url);
    assert.ok(!res.ok, `${url} was fetched`);
    assert.equal(res.error.kind, 'permission_denied', `${url}: ${JSON.stringify(res.error)}`);
    assert.match(res.error.message, /fetch_allow_hosts/);
  }
  assert.deepEqual(hits, [], 'the test server was never reached');
});

test('a listed host is allowed; every redirect hop is checked again', async () => {
  const allowed = new ToolRegistry([createFetchTool({ allowHosts: ['127.0.0.1'] })]);
  hits = [];
  const ok = await call(allowed, `${local.base}/secret`);
  assert.ok(ok.ok, JSON.stringify(ok));
  // Allowed first hop, redirect to a loopback name not listed (the hop is refused before it is requested).
  for (const target of [`http://localhost:${port()}/secret`, `http://[::ffff:127.0.0.2]:${port()}/secret`, 'http://169.254.169.254/']) {
    hits = [];
    const res = await call(allowed, `${local.base}/to/${encodeURIComponent(target)}`);
    assert.ok(!res.ok, `redirect to ${target} followed: ${JSON.stringify(res)}`);
    assert.equal(res.error.kind, 'permission_denied');
    assert.match(res.error.message, /redirect 1/);
    assert.deepEqual(hits, [`/to/${encodeURIComponent(target)}`], 'only the first hop reached the server');
  }
  // A public page redirecting to a private one (resolution and requests faked: no network in tests).
  const requested: string[] = [];
  const fake = (async (input: string | URL) => {
    const u = String(input);
    requested.push(u);
    if (u.startsWith('http://public.example/')) return new Response(null, { status: 301, headers: { location: `http://127.0.0.1:${port()}/secret` } });
    return new Response('INTERNAL-SECRET', { status: 200, headers: { 'content-type': 'text/plain' } });
  }) as typeof fetch;
  const pub = new ToolRegistry([createFetchTool({ fetchImpl: fake, lookup: async () => ['93.184.216.34'] })]);
  const res = await call(pub, 'http://public.example/start');
  assert.ok(!res.ok && res.error.kind === 'permission_denied', JSON.stringify(res));
  assert.deepEqual(requested, ['http://public.example/start']);
  // A name resolving to a private address is refused before any request.
  const rebound = new ToolRegistry([createFetchTool({ fetchImpl: fake, lookup: async () => ['93.184.216.34', '10.0.0.5'] })]);
  requested.length = 0;
  const r2 = await call(rebound, 'http://mixed.example/');
  assert.ok(!r2.ok && r2.error.kind === 'permission_denied', JSON.stringify(r2));
  assert.deepEqual(requested, []);
});

test('address classification', () => {
  for (const ip of ['127.0.0.1', '127.255.0.1', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', 'fe80::1', 'fc00::1', 'fd12::1', '64:ff9b::7f00:1', '2002:7f00:1::', 'ff02::1']) {
    assert.notEqual(blockedReason(ip), null, ip);
  }
  for (const ip of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) assert.equal(blockedReason(ip), null, ip);
  assert.ok(hostAllowed('LocalHost', ['localhost']));
  assert.ok(hostAllowed('a.b.internal', ['*.internal']));
  assert.ok(hostAllowed('::1', ['[::1]']));
  assert.ok(!hostAllowed('evil-localhost', ['localhost']));
});

test('DNS rebinding: a name checked as public but resolving to loopback at connect time is refused; the server is never reached', async () => {
  let calls = 0;
  // The check sees a public address, the connection would get the test server's.
  const lookup = async () => (++calls === 1 ? ['93.184.216.34'] : ['127.0.0.1']);
  const reg = new ToolRegistry([createFetchTool({ lookup })]);
  hits = [];
  const res = await call(reg, `http://rebind.example:${port()}/secret`);
  assert.ok(!res.ok, JSON.stringify(res));
  assert.equal(res.error.kind, 'permission_denied', JSON.stringify(res.error));
  assert.match(res.error.message, /127\.0\.0\.1.*connect time/);
  assert.ok(calls >= 2, 'the connection resolved the name again, through the guard');
  assert.deepEqual(hits, []);
  // A name listed in fetch_allow_hosts connects (the guard lets it through).
  const allowed = new ToolRegistry([createFetchTool({ lookup: async () => ['127.0.0.1'], allowHosts: ['rebind.example'] })]);
  const ok = await call(allowed, `http://rebind.example:${port()}/secret`);
  assert.ok(ok.ok && JSON.stringify(ok.data).includes('INTERNAL-SECRET'), JSON.stringify(ok));
});

test('the pinned connection decodes gzip like fetch', async () => {
  const zlib = await import('node:zlib');
  const { startLocalHttp } = await import('../support/local-http');
  const gz = await startLocalHttp((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
    res.end(zlib.gzipSync(`compressed hello ${req.headers['accept-encoding']}\n`));
  });
  try {
    const reg = new ToolRegistry([createFetchTool({ allowHosts: ['127.0.0.1'] })]);
    const res = await call(reg, `${gz.base}/`);
    assert.ok(res.ok, JSON.stringify(res));
    assert.match((res.data as { content: string }).content, /^compressed hello gzip/);
  } finally {
    await gz.close();
  }
});
