import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, test } from 'node:test';
import { dropPreconnect, preconnect, preconnected, preconnectSettled, proxyMayApply } from '../../src/agent/preconnect';
import { nodeFetch } from '../../src/agent/node-fetch';

interface Server {
  url: string;
  connections: Socket[];
  server: http.Server;
  closed: () => number;
}

const servers: http.Server[] = [];
after(() => {
  dropPreconnect();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function serve(onConnection?: (s: Socket, n: number) => void): Promise<Server> {
  const connections: Socket[] = [];
  let closed = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('connection', (s: Socket) => {
    connections.push(s);
    s.on('close', () => closed++);
    onConnection?.(s, connections.length);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, connections, server, closed: () => closed };
}

const until = async (what: () => boolean): Promise<void> => {
  for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(what(), 'condition never met');
};

function ownCreateConnection(): boolean {
  return Object.prototype.hasOwnProperty.call(http.globalAgent, 'createConnection');
}

test('the first request to the origin goes out on the pre-opened socket (one connection at the server)', async () => {
  const s = await serve();
  assert.equal(preconnect(s.url), `127.0.0.1:${new URL(s.url).port}`);
  await until(() => s.connections.length === 1);
  const r = await nodeFetch(`${s.url}/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(await r.text(), 'ok');
  assert.equal(s.connections.length, 1, 'the request opened a connection of its own');
  assert.equal(preconnected(), null);
  assert.equal(ownCreateConnection(), false, "the agent's createConnection is its own again");
  // The agent owns it now: kept alive, the next request reuses it too.
  const r2 = await nodeFetch(`${s.url}/models`);
  assert.equal(await r2.text(), 'ok');
  assert.equal(s.connections.length, 1);
});

test('a pre-opened socket the server closed is dropped: the request connects as always', async () => {
  const s = await serve((sock, n) => {
    if (n === 1) sock.destroy();
  });
  assert.ok(preconnect(s.url));
  await until(() => s.closed() === 1 && preconnected() === null);
  const r = await nodeFetch(`${s.url}/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(await r.text(), 'ok');
  assert.equal(s.connections.length, 2);
  assert.equal(ownCreateConnection(), false);
});

test('a request to another origin does not take it; unused, it is closed at dropPreconnect', async () => {
  const a = await serve();
  const b = await serve();
  assert.ok(preconnect(a.url));
  await until(() => a.connections.length === 1);
  const r = await nodeFetch(`${b.url}/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(await r.text(), 'ok');
  assert.equal(b.connections.length, 1);
  assert.ok(preconnected(), 'the other origin took the pre-opened socket');
  dropPreconnect();
  await until(() => a.closed() === 1);
  assert.equal(preconnected(), null);
  assert.equal(ownCreateConnection(), false);
  // The next request to the first origin connects anew.
  const r2 = await nodeFetch(`${a.url}/x`);
  assert.equal(await r2.text(), 'ok');
  assert.equal(a.connections.length, 2);
});

test('a pre-opened socket nobody asks for is closed after the idle time', async () => {
  const s = await serve();
  assert.ok(preconnect(s.url, { idleMs: 50 }));
  await until(() => s.connections.length === 1);
  await until(() => s.closed() === 1);
  assert.equal(preconnected(), null);
  assert.equal(ownCreateConnection(), false);
});

test('nothing is opened for a URL that is not http(s), a bad URL, or when a proxy may apply', () => {
  assert.equal(preconnect('unix:/tmp/x'), null);
  assert.equal(preconnect('not a url'), null);
  assert.equal(preconnect('http://127.0.0.1:9/v1', { env: { NODE_USE_ENV_PROXY: '1', HTTPS_PROXY: 'http://proxy:3128' } }), null);
  assert.equal(preconnected(), null);
  assert.equal(proxyMayApply({ NODE_OPTIONS: '--use-env-proxy', http_proxy: 'http://p' }, []), true);
  assert.equal(proxyMayApply({ HTTP_PROXY: 'http://p' }, ['--use-env-proxy']), true);
  assert.equal(proxyMayApply({ HTTP_PROXY: 'http://p' }, []), false);
  assert.equal(proxyMayApply({ NODE_USE_ENV_PROXY: '1' }, []), false);
});

test('https: the TLS connection opened ahead is the one the first request uses', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const https = await import('node:https');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-preconnect-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1', '-keyout', path.join(dir, 'k'), '-out', path.join(dir, 'c')], { stdio: 'ignore' });
  } catch {
    t.skip(`skipped: openssl not found at PATH=${process.env.PATH ?? ''}`);
    return;
  }
  const cert = fs.readFileSync(path.join(dir, 'c'));
  const key = fs.readFileSync(path.join(dir, 'k'));
  fs.rmSync(dir, { recursive: true, force: true });
  const connections: Socket[] = [];
  const server = https.createServer({ cert, key }, (req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('secureConnection', (s: Socket) => connections.push(s));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  // The test's CA, as an agent option (part of the agent's key for the connection).
  const agentOptions = (https.globalAgent as unknown as { options: Record<string, unknown> }).options;
  agentOptions.ca = cert;
  try {
    assert.ok(preconnect(url));
    await until(() => connections.length === 1);
    const r = await nodeFetch(`${url}/chat/completions`, { method: 'POST', body: '{}' });
    assert.equal(await r.text(), 'ok');
    assert.equal(connections.length, 1, 'the request made a TLS connection of its own');
    assert.equal(preconnected(), null);
    assert.equal(Object.prototype.hasOwnProperty.call(https.globalAgent, 'createConnection'), false);
  } finally {
    delete agentOptions.ca;
    https.globalAgent.destroy();
  }
});

test('preconnectSettled resolves once the socket opened ahead has connected (at once without one)', async () => {
  await preconnectSettled(); // nothing waiting
  const s = await serve();
  assert.ok(preconnect(s.url));
  await preconnectSettled(10_000);
  await until(() => s.connections.length === 1);
  const r = await nodeFetch(`${s.url}/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(await r.text(), 'ok');
  assert.equal(s.connections.length, 1);
  await preconnectSettled(); // taken: at once
});
