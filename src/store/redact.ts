/**
 * Credentials never stored or logged (issue 18, item 12). The host registers the model's API key (and
 * the userinfo of a base_url such as `http://user:pw@host/v1`) once it knows them; every text written to
 * the session database, every log line and every tool result the model reads goes through `redact`.
 * Log lines also lose the userinfo of any URL (`redactForLog`).
 */

const REDACTED = '[redacted]';
/**
 * One set per process, shared by every copy of this module: the host's first-request bundle and the host's
 * bundle each hold one (src/host/first-main.ts), and a secret either registers is redacted by both (the
 * log file's writer is the first bundle's).
 */
const SECRETS = Symbol.for('caboose.redact.secrets');
const secrets: Set<string> = ((globalThis as { [SECRETS]?: Set<string> })[SECRETS] ??= new Set<string>());
/** Shorter values would blank out ordinary words; such keys (local servers' placeholders) are not secrets. */
const MIN_SECRET_LENGTH = 6;

/** Adds a value to redact from now on (the API key, a base_url password). */
export function registerSecret(value: string | null | undefined): void {
  if (!value) return;
  const v = value.trim();
  if (v.length < MIN_SECRET_LENGTH) return;
  secrets.add(v);
  // As it appears inside JSON text or a URL.
  const inJson = JSON.stringify(v).slice(1, -1);
  if (inJson !== v) secrets.add(inJson);
  const encoded = encodeURIComponent(v);
  if (encoded !== v) secrets.add(encoded);
}

/** Registers the userinfo of `url` (user:password@), when it has one. */
export function registerUrlCredentials(url: string | null | undefined): void {
  if (!url) return;
  try {
    const u = new URL(url);
    if (u.password) {
      registerSecret(u.password);
      registerSecret(decodeURIComponent(u.password));
    }
    if (u.username || u.password) registerSecret(`${u.username}:${u.password}@`);
  } catch {
    // not a URL
  }
}

/** `text` with every registered secret replaced. */
export function redact(text: string): string {
  if (secrets.size === 0 || text.length === 0) return text;
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/** A URL with its userinfo (user:password@) replaced. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#\s@]*@/i, `$1${REDACTED}@`);
}

/** A log line: registered secrets and the userinfo of every URL in it replaced. */
export function redactForLog(text: string): string {
  return redact(text).replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/?#\s@"'<>]+@/gi, `$1${REDACTED}@`);
}

/** Every string inside `value` redacted (objects and arrays copied only where something changed). */
export function redactDeep<T>(value: T): T {
  if (secrets.size === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v);
    if (Array.isArray(v)) {
      const mapped = v.map(walk);
      return mapped.some((m, i) => m !== v[i]) ? mapped : v;
    }
    if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        out[k] = walk(x);
        if (out[k] !== x) changed = true;
      }
      return changed ? out : v;
    }
    return v;
  };
  return walk(value) as T;
}

/** Test hook: forget every registered secret. */
export function clearSecrets(): void {
  secrets.clear();
}
