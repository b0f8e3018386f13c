/**
 * Where fetch may go (issue 18, item 14): loopback, link-local, private and other non-public addresses
 * are refused unless their host is listed in `fetch_allow_hosts`. IP literals in every spelling the URL
 * parser accepts (`2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) are normalised by it first; names are
 * resolved and every address they resolve to is checked. Each redirect hop is checked the same way.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import { ToolError } from './errors';

/** IPv4 ranges that are not the public internet: [first octets as a number, prefix length, what]. */
const V4_BLOCKED: [string, number, string][] = [
  ['0.0.0.0', 8, '"this network"'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

function v4ToInt(ip: string): number {
  return ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

function v4Reason(ip: string): string | null {
  const n = v4ToInt(ip);
  for (const [base, len, what] of V4_BLOCKED) {
    const size = 2 ** (32 - len);
    const b = v4ToInt(base);
    if (n >= b && n < b + size) return what;
  }
  return null;
}

/** The 8 groups of an IPv6 address (an embedded dotted IPv4 tail included). */
function v6Groups(ip: string): number[] | null {
  let s = ip.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const n = v4ToInt(dotted[1]);
    s = s.slice(0, -dotted[1].length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = s.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const fill = s.includes('::') ? 8 - h.length - t.length : 0;
  const groups = [...h, ...Array<string>(fill).fill('0'), ...t].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

function embeddedV4(g: number[], from: number): string {
  return [g[from] >> 8, g[from] & 0xff, g[from + 1] >> 8, g[from + 1] & 0xff].join('.');
}

/** Why `ip` (an IPv4 or IPv6 literal, no brackets) is not a public address, or null when it is. */
export function blockedReason(ip: string): string | null {
  const kind = net.isIP(ip);
  if (kind === 4) return v4Reason(ip);
  if (kind !== 6) return 'not an IP address';
  const g = v6Groups(ip);
  if (!g) return 'malformed';
  const zeros = (a: number, b: number) => g.slice(a, b).every((x) => x === 0);
  if (zeros(0, 8)) return 'unspecified';
  if (zeros(0, 7) && g[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::a.b.c.d): the IPv4 inside decides.
  if (zeros(0, 5) && g[5] === 0xffff) return v4Reason(embeddedV4(g, 6)) ?? null;
  if (zeros(0, 6)) return v4Reason(embeddedV4(g, 6)) ?? 'IPv4-compatible';
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4Reason(embeddedV4(g, 6));
  if (g[0] === 0x2002) return v4Reason(embeddedV4(g, 1)); // 6to4
  if ((g[0] & 0xfe00) === 0xfc00) return 'unique local (private)';
  if ((g[0] & 0xffc0) === 0xfe80) return 'link-local';
  if ((g[0] & 0xffc0) === 0xfec0) return 'site-local (private)';
  if ((g[0] & 0xff00) === 0xff00) return 'multicast';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'documentation';
  return null;
}

/** `host` is listed in `allow` (exact, case-insensitive; `*.example.com` matches its subdomains). */
export function hostAllowed(host: string, allow: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return allow.some((a) => {
    const e = a.toLowerCase().trim().replace(/^\[|\]$/g, '').replace(/\.$/, '');
    if (e.startsWith('*.')) return h.endsWith(e.slice(1));
    if (net.isIP(e) === 6 && net.isIP(h) === 6) return v6Groups(e)?.join(':') === v6Groups(h)?.join(':');
    return e === h;
  });
}

export type Lookup = (host: string) => Promise<string[]>;

const systemLookup: Lookup = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Refuses `url` when its host is, or resolves to, a non-public address that `allow` does not list.
 * `hop` says which redirect this is (0 = the URL the model gave). A name that does not resolve is left
 * to the request (it fails there with network_error).
 */
export async function assertPublicDestination(url: URL, allow: readonly string[], hop = 0, lookup: Lookup = systemLookup): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (hostAllowed(host, allow)) return;
  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = await lookup(host);
    } catch {
      return;
    }
  }
  for (const a of addresses) {
    const why = blockedReason(a);
    // The list names hosts as written in URLs: listing 127.0.0.1 does not allow every name resolving to it.
    if (why === null) continue;
    const via = hop > 0 ? ` (redirect ${hop} led there)` : '';
    const resolved = a === host ? '' : ` (${host} resolves to ${a})`;
    throw new ToolError('permission_denied', `fetch refused ${url.href}${via}: ${a} is a ${why} address${resolved}; loopback, link-local and private addresses are not fetched unless listed in fetch_allow_hosts.`, {
      suggestedAction: 'Fetch a public URL, or ask the user to add this host to fetch_allow_hosts in setup().',
      details: { host, address: a, reason: why, hop },
    });
  }
}

/** The error a connection gets when its name resolves to a refused address at connect time. */
export const BLOCKED_CODE = 'CABOOSE_BLOCKED_ADDRESS';

/**
 * A `lookup` for net/tls connections that checks every address at connect time (the address the socket
 * really uses), so a name cannot resolve to a public address for the check and to a private one for the
 * connection (DNS rebinding).
 */
export function guardedLookup(allow: readonly string[], lookup: Lookup = systemLookup): net.LookupFunction {
  return ((hostname: string, options: { all?: boolean } | number | undefined, callback: (...args: unknown[]) => void) => {
    const all = typeof options === 'object' && options !== null && options.all === true;
    lookup(hostname).then(
      (addresses) => {
        const bad = hostAllowed(hostname, allow) ? undefined : addresses.find((a) => blockedReason(a) !== null);
        if (bad !== undefined || addresses.length === 0) {
          const err = Object.assign(new Error(`${hostname} resolves to ${bad ?? 'no address'} (${bad ? blockedReason(bad) : 'none'}) at connect time`), {
            code: bad !== undefined ? BLOCKED_CODE : 'ENOTFOUND',
            address: bad,
          });
          return callback(err);
        }
        const list = addresses.map((address) => ({ address, family: net.isIP(address) === 6 ? 6 : 4 }));
        if (all) callback(null, list);
        else callback(null, list[0].address, list[0].family);
      },
      (err: unknown) => callback(err),
    );
  }) as unknown as net.LookupFunction;
}
