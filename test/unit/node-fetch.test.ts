/**
 * src/agent/node-fetch.ts: the model client's fetch over node:http keeps what the SDK and the provider rely
 * on from Node's fetch (issue 24).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { nodeFetch } from '../../src/agent/node-fetch';

let server: http.Server;
let base = '';
const seen: { method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url === '/json') {
        res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'r1' });
        res.end(JSON.stringify({ got: body }));
      } else if (req.url === '/gzip') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync('décompressé'));
      } else if (req.url === '/redirect') {
        res.writeHead(307, { location: '/json' });
        res.end();
      } else if (req.url === '/error') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
        res.end('{"error":{"message":"slow down"}}');
      } else if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: one\n\n');
        setTimeout(() => res.write('data: two\n\n'), 20);
        setTimeout(() => res.end(), 40);
      } else if (req.url === '/many') {
        // 40 events, one write each, a turn of the loop apart; then the end.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let i = 0;
        const next = (): void => {
          if (i === 40) return void res.end();
          res.write(`data: ${i++}\n\n`);
          setImmediate(next);
        };
        next();
      } else if (req.url === '/cut') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: one\n\n');
        setTimeout(() => res.socket?.destroy(), 20);
      } else if (req.url === '/hang') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: one\n\n');
      } else {
        res.writeHead(404);
        res.end('nope');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const text = async (raw: unknown): Promise<string> => {
  const body = raw as AsyncIterable<Uint8Array>;
  let s = '';
  for await (const c of body) s += Buffer.from(c).toString('utf8');
  return s;
};

test('a POST with a Headers object: status, headers, json, the body and the headers fetch sends', async () => {
  const r = await nodeFetch(`${base}/json`, { method: 'post', headers: new Headers({ Authorization: 'Bearer k', 'Content-Type': 'application/json' }), body: '{"a":"é"}' });
  assert.equal(r.status, 200);
  assert.equal(r.ok, true);
  assert.equal(r.url, `${base}/json`);
  assert.equal(r.headers.get('x-request-id'), 'r1');
  assert.deepEqual(await r.json(), { got: '{"a":"é"}' });
  const req = seen[seen.length - 1];
  assert.equal(req.method, 'POST');
  assert.equal(req.headers.authorization, 'Bearer k');
  assert.equal(req.headers['content-length'], String(Buffer.byteLength('{"a":"é"}')));
  assert.equal(req.headers['accept-encoding'], 'gzip, deflate, br');
});

test('a gzip body is decoded; an error status keeps its headers and text', async () => {
  assert.equal(await (await nodeFetch(`${base}/gzip`)).text(), 'décompressé');
  const e = await nodeFetch(`${base}/error`, { method: 'POST', body: '{}' });
  assert.equal(e.ok, false);
  assert.equal(e.status, 429);
  assert.equal(e.headers.get('retry-after'), '3');
  assert.equal(await e.text(), '{"error":{"message":"slow down"}}');
});

test('a redirect is left to fetch, which follows it', async () => {
  const r = await nodeFetch(`${base}/redirect`, { method: 'POST', body: 'x' });
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { got: 'x' });
});

test('the body comes as the server writes it', async () => {
  assert.equal(await text((await nodeFetch(`${base}/stream`)).body), 'data: one\n\ndata: two\n\n');
});

test('a reader that falls behind gets what arrived meanwhile in one chunk: in order, nothing lost, up to the end', async () => {
  const r = await nodeFetch(`${base}/many`);
  const it = (r.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const reads: string[] = [];
  for (;;) {
    const n = await it.next();
    if (n.done) break;
    reads.push(Buffer.from(n.value).toString('utf8'));
    // A busy reader: the server's next writes arrive meanwhile.
    await new Promise((res) => setTimeout(res, 15));
  }
  assert.equal(reads.join(''), Array.from({ length: 40 }, (_, i) => `data: ${i}\n\n`).join(''));
  assert.ok(reads.length < 40, `${reads.length} reads for 40 writes`);
  const after = await it.next();
  assert.equal(after.done, true, 'the end is reported again');
});

test('a refused connection rejects as fetch does: TypeError "fetch failed" whose cause has the code', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const err = await nodeFetch(`http://127.0.0.1:${port}/x`).then(
    () => assert.fail('no error'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TypeError);
  assert.equal(err.message, 'fetch failed');
  assert.equal((err.cause as { code?: string }).code, 'ECONNREFUSED');
});

test('a body cut midway fails as TypeError "terminated"', async () => {
  const r = await nodeFetch(`${base}/cut`);
  const err = await text(r.body).then(
    () => assert.fail('no error'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TypeError);
  assert.equal(err.message, 'terminated');
  assert.ok(err.cause instanceof Error);
});

test('the signal: aborted before the request, and during the body, rejects with its reason', async () => {
  const early = new AbortController();
  early.abort();
  await assert.rejects(nodeFetch(`${base}/json`, { signal: early.signal }), (e: unknown) => e instanceof Error && e.name === 'AbortError');
  const late = new AbortController();
  const r = await nodeFetch(`${base}/hang`, { signal: late.signal });
  const reading = text(r.body);
  setTimeout(() => late.abort(), 20);
  await assert.rejects(reading, (e: unknown) => e instanceof Error && e.name === 'AbortError');
});

test('a reader that stops at the end of a finished response leaves the connection to the next request', async () => {
  const ports: number[] = [];
  const onRequest = (req: http.IncomingMessage): void => {
    ports.push(req.socket.remotePort ?? -1);
  };
  server.on('request', onRequest);
  try {
    for (let i = 0; i < 2; i++) {
      const r = await nodeFetch(`${base}/stream`, { method: 'POST', body: '{}' });
      const it = (r.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      let seen = '';
      while (!seen.includes('two')) {
        const n = await it.next();
        if (n.done) break;
        seen += Buffer.from(n.value).toString('utf8');
      }
      // As the provider does at `[DONE]`: stop reading (the server ends the response right after).
      await new Promise((res) => setTimeout(res, 60));
      await it.return?.();
      // The socket goes back to the pool once the drained response has ended (a turn of the loop later).
      await new Promise((res) => setTimeout(res, 20));
    }
    assert.equal(ports.length, 2);
    assert.equal(ports[0], ports[1], 'the second request reused the first one\'s connection');
  } finally {
    server.off('request', onRequest);
  }
});

test('header injection from the config (an API key or extra header with CR/LF, NUL, a zero-width space): refused with a TypeError before any byte is sent, the key not in the message', async () => {
  for (const headers of [
    { Authorization: 'Bearer sk-secret\r\nX-Evil: 1' },
    { 'X-Title': 'caboose\nX-Evil: 1' },
    { Authorization: 'Bearer sk-secret\u0000' },
    { Authorization: 'Bearer sk-secret\u200b' },
    [['Authorization', 'Bearer sk-secret'], ['X-Evil\r\nHost', 'x']],
  ] as Record<string, string>[]) {
    const n = seen.length;
    await assert.rejects(
      nodeFetch(`${base}/json`, { method: 'post', headers, body: '{}' }),
      (e: unknown) => e instanceof TypeError && !String((e as Error).message).includes('sk-secret'),
      JSON.stringify(headers),
    );
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(seen.length, n, 'no request reached the server');
  }
});
