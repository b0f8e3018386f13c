/**
 * A `Headers` for the model client's requests and responses that does not load Node's fetch (issue 24).
 *
 * Node's global `Headers` is a lazy getter: its first use loads undici (10–30 ms on the cold path), which
 * the model client no longer needs since its requests go over node:http (node-fetch.ts). The openai SDK
 * builds every request's headers with the global `Headers` (openai/internal/headers.js `buildHeaders`: `new
 * Headers()`, `append`, `delete`, `entries`; client.js: `get`, `has`, `set`); scripts/bundle-host.mjs gives
 * those SDK modules this class instead, and node-fetch.ts uses it for what it sends and receives.
 *
 * Same behaviour as the Fetch standard's Headers for what is implemented: names are case-insensitive and
 * must be HTTP tokens, values are trimmed of HTTP whitespace and must not hold NUL, CR, LF or a character above U+00FF (a TypeError
 * otherwise, as with Node's Headers), repeated names are combined with ", " (Set-Cookie kept apart, see
 * getSetCookie), iteration is sorted by lower-case name. test/unit/lite-headers.test.ts compares it with
 * Node's Headers operation by operation.
 */

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// NUL, CR, LF (header injection), and anything that is not a byte (WebIDL ByteString: a key pasted with a
// zero-width space is refused here, as Node's Headers does, not half-way down in node:http).
// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\0\r\n\u0100-\uffff]/;
const HTTP_WS = /^[\t\n\r ]+|[\t\n\r ]+$/g;

export type LiteHeadersInit = Iterable<readonly [string, string] | readonly string[]> | Record<string, string> | LiteHeaders | null | undefined;

function name(n: unknown): string {
  const s = String(n);
  if (!TOKEN.test(s)) throw new TypeError(`Headers: invalid header name: "${s}"`);
  return s.toLowerCase();
}

function value(v: unknown, n: string): string {
  if (typeof v === 'symbol') throw new TypeError(`Headers: invalid value for header "${n}"`);
  const s = String(v).replace(HTTP_WS, '');
  if (BAD_VALUE.test(s)) throw new TypeError(`Headers: invalid value for header "${n}"`);
  return s;
}

export class LiteHeaders implements Iterable<[string, string]> {
  /** lower-case name → its values in the order they were appended. */
  readonly #map = new Map<string, string[]>();

  constructor(init?: LiteHeadersInit) {
    if (init === undefined || init === null) return;
    if (typeof init !== 'object') throw new TypeError('Headers: init must be an object');
    if (Symbol.iterator in init) {
      for (const pair of init as Iterable<readonly string[]>) {
        if (typeof pair !== 'object' || pair === null || pair.length !== 2) throw new TypeError('Headers: each header must be a [name, value] pair');
        this.append(pair[0], pair[1]);
      }
      return;
    }
    for (const [k, v] of Object.entries(init)) this.append(k, v);
  }

  append(n: string, v: string): void {
    const key = name(n);
    const val = value(v, key);
    const list = this.#map.get(key);
    if (list) list.push(val);
    else this.#map.set(key, [val]);
  }

  set(n: string, v: string): void {
    const key = name(n);
    this.#map.set(key, [value(v, key)]);
  }

  delete(n: string): void {
    this.#map.delete(name(n));
  }

  get(n: string): string | null {
    const list = this.#map.get(name(n));
    return list ? list.join(', ') : null;
  }

  has(n: string): boolean {
    return this.#map.has(name(n));
  }

  getSetCookie(): string[] {
    return [...(this.#map.get('set-cookie') ?? [])];
  }

  forEach(cb: (value: string, key: string, parent: LiteHeaders) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) cb.call(thisArg, v, k, this);
  }

  *entries(): IterableIterator<[string, string]> {
    for (const k of [...this.#map.keys()].sort()) {
      const list = this.#map.get(k);
      if (!list) continue;
      if (k === 'set-cookie') for (const v of list) yield [k, v];
      else yield [k, list.join(', ')];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return 'Headers';
  }
}

/**
 * `x instanceof FormData` for the SDK's request building (openai/client.js `buildBody` tests every body
 * against the global FormData, whose first read loads undici): true exactly when it is Node's FormData,
 * and the global is read only for a value that says it is one.
 */
export const FormDataCheck = {
  [Symbol.hasInstance](v: unknown): boolean {
    return typeof v === 'object' && v !== null && Object.prototype.toString.call(v) === '[object FormData]' && v instanceof globalThis.FormData;
  },
};
