/**
 * Issue 24: src/agent/lite-headers.ts stands in for Node's `Headers` (and the SDK's `instanceof FormData`)
 * in the openai SDK's request building and in node-fetch.ts, so the cold path never loads undici. It must
 * answer as Node's Headers does for everything the SDK and the transport use.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FormDataCheck, LiteHeaders } from '../../src/agent/lite-headers';

type Op = ['append' | 'set', string, string] | ['delete', string];

const SCRIPTS: { init?: unknown; ops: Op[] }[] = [
  { ops: [['append', 'Content-Type', 'application/json'], ['append', 'X-A', '1'], ['append', 'x-a', '2'], ['set', 'Accept', '*/*']] },
  { init: { Authorization: 'Bearer k', 'X-Stainless-Lang': 'js', 'x-b': '  padded\t' }, ops: [['delete', 'authorization'], ['append', 'X-B', 'more']] },
  { init: [['Set-Cookie', 'a=1'], ['set-cookie', 'b=2'], ['Via', 'x'], ['via', 'y']], ops: [['append', 'Z', 'last'], ['append', 'a', 'first']] },
  { init: [['retry-after', '1'], ['Retry-After-Ms', '250'], ['x-request-id', 'req_1']], ops: [['set', 'retry-after', '2'], ['delete', 'nope']] },
  { ops: [['append', 'empty', ''], ['append', 'Sp', '  a b  ']] },
];

function apply(h: Headers | LiteHeaders, ops: Op[]): void {
  for (const op of ops) {
    if (op[0] === 'delete') h.delete(op[1]);
    else h[op[0]](op[1], op[2]);
  }
}

function view(h: Headers | LiteHeaders): unknown {
  const each: [string, string][] = [];
  h.forEach((v, k) => each.push([k, v]));
  return {
    entries: [...h.entries()],
    iter: [...h],
    keys: [...h.keys()],
    values: [...h.values()],
    each,
    get: ['content-type', 'X-A', 'set-cookie', 'via', 'authorization', 'missing', 'retry-after', 'empty', 'sp'].map((n) => [h.get(n), h.has(n)]),
    cookies: h.getSetCookie(),
  };
}

test('answers as Node’s Headers for the same operations (names, combining, Set-Cookie, order, trimming)', () => {
  for (const s of SCRIPTS) {
    const real = new Headers(s.init as ConstructorParameters<typeof Headers>[0]);
    const lite = new LiteHeaders(s.init as Record<string, string>);
    apply(real, s.ops);
    apply(lite, s.ops);
    assert.deepEqual(view(lite), view(real), JSON.stringify(s));
    // Built from another Headers (the SDK and node-fetch copy them) and given to Node's (fetch's fallback).
    assert.deepEqual(view(new LiteHeaders(lite)), view(real));
    assert.deepEqual(view(new Headers(lite as unknown as ConstructorParameters<typeof Headers>[0])), view(real));
  }
});

test('refuses what Node’s Headers refuses: a bad name, CR/LF/NUL in a value, a pair that is not a pair', () => {
  const bad: [() => void, () => void][] = [
    [() => new Headers().append('bad name', 'x'), () => new LiteHeaders().append('bad name', 'x')],
    [() => new Headers().append('x', 'a\r\nInjected: 1'), () => new LiteHeaders().append('x', 'a\r\nInjected: 1')],
    [() => new Headers().set('x', 'a\0b'), () => new LiteHeaders().set('x', 'a\0b')],
    [() => new Headers().get('bad:name'), () => new LiteHeaders().get('bad:name')],
    [() => new Headers([['a', 'b', 'c']] as unknown as ConstructorParameters<typeof Headers>[0]), () => new LiteHeaders([['a', 'b', 'c']])],
    // Values are byte strings: an API key pasted with a zero-width space, or any character above U+00FF.
    [() => new Headers({ Authorization: 'Bearer sk-abc\u200b' }), () => new LiteHeaders({ Authorization: 'Bearer sk-abc\u200b' })],
    [() => new Headers().set('x-title', '世界'), () => new LiteHeaders().set('x-title', '世界')],
    [() => new Headers({ a: Symbol('x') } as unknown as Record<string, string>), () => new LiteHeaders({ a: Symbol('x') } as unknown as Record<string, string>)],
  ];
  for (const [real, lite] of bad) {
    assert.throws(real, TypeError);
    assert.throws(lite, TypeError, String(lite));
  }
  // Latin-1 and the controls the Fetch standard allows pass in both.
  for (const v of ['café', '\u0001a', 'a\tb', '\u000ba', 'a\u007f', '\u00ff']) {
    assert.equal(new LiteHeaders({ x: v }).get('x'), new Headers({ x: v }).get('x'), JSON.stringify(v));
  }
});

test('FormDataCheck is `instanceof FormData` without reading the global for other values', () => {
  const plain = [{}, 'x', null, undefined, new Uint8Array(1), new URLSearchParams('a=1'), { [Symbol.toStringTag]: 'Other' }];
  for (const v of plain) assert.equal(v instanceof (FormDataCheck as unknown as typeof FormData), false);
  assert.equal(new FormData() instanceof (FormDataCheck as unknown as typeof FormData), true);
  // A value that only claims to be one is not.
  assert.equal({ [Symbol.toStringTag]: 'FormData' } instanceof (FormDataCheck as unknown as typeof FormData), false);
});
