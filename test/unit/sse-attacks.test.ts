/**
 * The SSE decoder (src/agent/stream.ts SseDecoder, fed by src/agent/node-fetch.ts's body) against the odd
 * streams real providers send: the recorded provider streams of test/fixtures/streams (sources and licences
 * in test/fixtures/streams/SOURCE.md) with LF, CRLF and lone-CR line endings, re-chunked at every byte
 * boundary (one byte a read: every boundary is a read's end, including inside a multi-byte UTF-8
 * character and between a CR and its LF), compared with the same bytes decoded in one read and with the
 * openai SDK's own decoder (openai/core/streaming `_iterSSEMessages`) on the same bytes. Then synthetic
 * streams, split at every pair of boundaries: comments, `data:` without a space, `retry:`/`id:` lines,
 * `event: error`, multi-line data, NUL bytes, a final event without its blank line, a 1 MB line.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { SseDecoder, type SseItem } from '../../src/agent/stream';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { _iterSSEMessages } = require('openai/core/streaming') as {
  _iterSSEMessages: (r: Response, c: AbortController) => AsyncIterable<{ event: string | null; data: string }>;
};

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'streams');
const fixtures = fs
  .readdirSync(FIXTURES)
  .filter((d) => fs.statSync(path.join(FIXTURES, d)).isDirectory())
  .flatMap((d) => fs.readdirSync(path.join(FIXTURES, d)).filter((f) => f.endsWith('.sse')).map((f) => path.join(d, f)));

const decode = (chunks: Iterable<Uint8Array>): SseItem[] => {
  const d = new SseDecoder();
  const out: SseItem[] = [];
  for (const c of chunks) out.push(...d.push(c));
  out.push(...d.end());
  return out;
};
function* bytesOneByOne(b: Buffer): Iterable<Uint8Array> {
  for (let i = 0; i < b.length; i++) yield b.subarray(i, i + 1);
}
const withEol = (lf: string, eol: string) => lf.replace(/\n/g, eol);

/** The openai SDK's decoder on the same bytes, its events mapped through our items (one canonical LF event each). */
async function sdkItems(bytes: Buffer): Promise<SseItem[]> {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array(bytes));
      c.close();
    },
  });
  const out: SseItem[] = [];
  for await (const ev of _iterSSEMessages(new Response(body), new AbortController())) {
    const canonical = `${ev.event ? `event: ${ev.event}\n` : ''}${ev.data.split('\n').map((l) => `data: ${l}`).join('\n')}\n\n`;
    out.push(...decode([Buffer.from(canonical)]));
  }
  return out;
}

test('recorded provider streams: every byte boundary a read (LF, CRLF, lone CR) decodes as the whole stream does, and as the openai SDK decodes it', async () => {
  assert.ok(fixtures.length >= 20, `precondition: the recorded streams are there (${fixtures.length})`);
  let multiByte = 0;
  for (const f of fixtures) {
    const lf = fs.readFileSync(path.join(FIXTURES, f), 'utf8').replace(/\r\n?/g, '\n');
    const reference = decode([Buffer.from(lf)]);
    assert.ok(reference.length > 0, `${f}: items`);
    assert.ok(!reference.some((i) => i.kind === 'invalid'), `${f}: no invalid item in one read`);
    if (/[^\x00-\x7f]/.test(lf)) multiByte++;
    for (const eol of ['\n', '\r\n', '\r']) {
      const bytes = Buffer.from(withEol(lf, eol));
      const what = `${f} with ${JSON.stringify(eol)}`;
      assert.deepEqual(decode([bytes]), reference, `${what}: one read`);
      assert.deepEqual(decode(bytesOneByOne(bytes)), reference, `${what}: one byte a read`);
      // The SDK's decoder does not dispatch a last event without its blank line and drops llama.cpp's bare
      // `error:` line (not an SSE field); ours keeps both (stream.ts): compared on the other streams.
      if (lf.endsWith('\n\n') && !/^error:/m.test(lf)) assert.deepEqual(await sdkItems(bytes), reference, `${what}: as the openai SDK decodes it`);
    }
  }
  assert.ok(multiByte >= 3, `precondition: streams with multi-byte UTF-8 were among them (${multiByte})`);
});

/** Every split of `bytes` into three reads (all pairs of boundaries) decodes as one read. */
function assertEverySplit(bytes: Buffer, expected: SseItem[], what: string): void {
  for (let i = 0; i <= bytes.length; i++) {
    for (let j = i; j <= bytes.length; j++) {
      const got = decode([bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]);
      assert.deepEqual(got, expected, `${what}: reads split at ${i} and ${j}`);
    }
  }
}

const chunk = (content: string) => JSON.stringify({ choices: [{ index: 0, delta: { content } }] });

test('odd streams, split at every pair of boundaries: comments, data without a space, retry and id lines, event: error, multi-line data, CRLF and CR, UTF-8 split', () => {
  const text = 'héllo — 世界 🙂';
  const lf =
    ': keep-alive\n\n' +
    'retry: 3000\n' +
    'id: 7\n' +
    `data:${chunk(text)}\n\n` +
    ': OPENROUTER PROCESSING\n\n' +
    `data: ${chunk('a')}\n` +
    '\n' +
    'event: error\n' +
    'data: {"error":{"message":"Overloaded","code":"overloaded_error"}}\n\n' +
    'data: {"choices":[{"index":0,\n' +
    'data: "delta":{"content":"b"}}]}\n\n' +
    'data: [DONE]\n\n';
  const expected: SseItem[] = [
    { kind: 'data', data: JSON.parse(chunk(text)) },
    { kind: 'data', data: JSON.parse(chunk('a')) },
    { kind: 'error', error: { message: 'Overloaded', code: 'overloaded_error' } },
    { kind: 'data', data: JSON.parse(chunk('b')) },
    { kind: 'done' },
  ];
  for (const eol of ['\n', '\r\n', '\r']) {
    const bytes = Buffer.from(withEol(lf, eol));
    assert.deepEqual(decode([bytes]), expected, `${JSON.stringify(eol)}: one read`);
    assertEverySplit(bytes, expected, JSON.stringify(eol));
  }
});

test('the end of a stream: a last event without its blank line counts (also after a CR), a cut-off JSON is invalid (not data), an unfinished multi-byte character is replaced', () => {
  for (const tail of ['', '\n', '\r', '\r\n']) {
    assert.deepEqual(decode([Buffer.from(`data: ${chunk('x')}${tail}`)]), [{ kind: 'data', data: JSON.parse(chunk('x')) }], JSON.stringify(tail));
    assert.deepEqual(decode([Buffer.from(`data: [DONE]${tail}`)]), [{ kind: 'done' }]);
  }
  const cut = decode([Buffer.from(`data: ${chunk('x').slice(0, -3)}`)]);
  assert.equal(cut.length, 1);
  assert.equal(cut[0]!.kind, 'invalid');
  // A stream cut in the middle of a 4-byte character inside a JSON string: not data, no exception.
  const emoji = Buffer.from(`data: ${chunk('🙂')}`);
  const at = emoji.indexOf(Buffer.from('🙂')) + 2;
  const cutInChar = decode([emoji.subarray(0, at)]);
  assert.equal(cutInChar.length, 1);
  assert.equal(cutInChar[0]!.kind, 'invalid');
});

test('NUL bytes: in a JSON string escaped (data), raw inside the line (invalid, not a crash), in an id line (ignored)', () => {
  const esc = `data: ${chunk('a\u0000b')}\n\n`;
  assert.deepEqual(decode(bytesOneByOne(Buffer.from(esc))), [{ kind: 'data', data: JSON.parse(chunk('a\u0000b')) }]);
  const raw = decode([Buffer.from('data: {"choices":[{"index":0,"delta":{"content":"a\u0000b"}}]}\n\n')]);
  assert.deepEqual(raw.map((i) => i.kind), ['invalid']);
  assert.deepEqual(decode([Buffer.from(`id: 1\u00002\ndata: ${chunk('c')}\n\n`)]), [{ kind: 'data', data: JSON.parse(chunk('c')) }]);
});

test('a 1 MB single line in 1,000 reads of odd sizes decodes to the same one event', () => {
  const big = 'x'.repeat(1 << 20) + 'é';
  const bytes = Buffer.from(`data: ${chunk(big)}\r\n\r\ndata: [DONE]\r\n\r\n`);
  const reads: Uint8Array[] = [];
  for (let i = 0, n = 1; i < bytes.length; i += n, n = (n * 7 + 3) % 2039 + 1) reads.push(bytes.subarray(i, i + n));
  assert.ok(reads.length > 1000, `precondition: many reads (${reads.length})`);
  assert.deepEqual(decode(reads), [{ kind: 'data', data: JSON.parse(chunk(big)) }, { kind: 'done' }]);
});

test('a UTF-8 byte order mark at the start of the stream (split over reads too) is not part of the first field', () => {
  const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`data: ${chunk('x')}\r\n\r\ndata: [DONE]\r\n\r\n`)]);
  const expected: SseItem[] = [{ kind: 'data', data: JSON.parse(chunk('x')) }, { kind: 'done' }];
  assert.deepEqual(decode([body]), expected);
  assert.deepEqual(decode(bytesOneByOne(body)), expected);
});
