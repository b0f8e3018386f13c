/**
 * :CabooseDebug (issue 22): the chat's last request to the model as the host sent it (its JSON body, the
 * URL and headers) and a summary of the response (status, headers of interest, finish reason, usage,
 * timing, chunks, error body), with every secret masked: the API key (the Authorization header), any
 * configured provider's key, a header that names a credential, and whatever the redactor knows
 * (store/redact.ts) wherever it appears, message content included.
 */
import type { Exchange } from '../agent/provider';
import { redact, redactUrl } from '../store/redact';

export const MASK = '[redacted]';

export interface DebugView {
  /** null: no request in this chat yet. */
  request: null | {
    method: 'POST';
    url: string;
    headers: Record<string, string>;
    /** The body, pretty-printed (2 spaces), secrets masked: JSON.parse gives the body sent (less secrets). */
    body_json: string;
    started_at: string;
  };
  response?: {
    done: boolean;
    status?: number;
    headers: Record<string, string>;
    finish_reason?: string;
    usage?: Record<string, number>;
    headers_ms?: number;
    duration_ms?: number;
    chunks: number;
    error?: { kind: string; message: string; status?: number; body_json?: string };
  };
}

/** A header whose value is a credential whatever it holds. */
const SECRET_HEADER = /auth|key|token|secret|cookie|password|credential|signature/i;

/** `text` with `secrets` (as they are and as inside JSON strings) and every registered secret masked. */
export function maskSecrets(text: string, secrets: readonly string[]): string {
  let out = redact(text);
  for (const s of secrets) {
    if (!s || s.trim().length < 6) continue;
    for (const form of new Set([s, JSON.stringify(s).slice(1, -1)])) if (out.includes(form)) out = out.split(form).join(MASK);
  }
  return out;
}

export function debugView(ex: Exchange | undefined, secrets: readonly string[]): DebugView {
  if (!ex) return { request: null };
  const mask = (t: string) => maskSecrets(t, secrets);
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (ex.authorization) headers.Authorization = `Bearer ${MASK}`;
  for (const [k, v] of Object.entries(ex.headers ?? {})) headers[k] = SECRET_HEADER.test(k) ? MASK : mask(v);
  const responseHeaders: Record<string, string> = {};
  for (const [k, v] of Object.entries(ex.responseHeaders ?? {})) responseHeaders[k] = SECRET_HEADER.test(k) && !/^x-ratelimit-/i.test(k) ? MASK : mask(v);
  const usage = ex.usage ? (Object.fromEntries(Object.entries(ex.usage).filter(([, v]) => typeof v === 'number')) as Record<string, number>) : undefined;
  return {
    request: {
      method: 'POST',
      url: mask(redactUrl(ex.url)),
      headers,
      body_json: mask(JSON.stringify(ex.body, null, 2)),
      started_at: new Date(ex.startedAt).toISOString(),
    },
    response: {
      done: ex.done,
      ...(ex.status !== undefined ? { status: ex.status } : {}),
      headers: responseHeaders,
      ...(ex.finishReason !== undefined ? { finish_reason: ex.finishReason } : {}),
      ...(usage ? { usage } : {}),
      ...(ex.headersMs !== undefined ? { headers_ms: ex.headersMs } : {}),
      ...(ex.durationMs !== undefined ? { duration_ms: ex.durationMs } : {}),
      chunks: ex.chunks,
      ...(ex.error
        ? {
            error: {
              kind: ex.error.kind,
              message: mask(ex.error.message),
              ...(ex.error.status !== undefined ? { status: ex.error.status } : {}),
              ...(ex.error.body !== undefined ? { body_json: mask(JSON.stringify(ex.error.body, null, 2) ?? String(ex.error.body)) } : {}),
            },
          }
        : {}),
    },
  };
}
