/**
 * Whether a config lets the first-request path (first-request.ts) take a cold start's first message at
 * all, and the marker that remembers a "no" between starts: with it, rplugin/node/caboose/index.js loads
 * the host at once instead of the first-request bundle first (which would only cost that start its own
 * loading: ≈ 13 ms measured). The host removes the marker when it starts with a config that allows the
 * path again. A cache: deleting it only costs one start that loading.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { HostConfig } from './protocol';
import { configuredProviders, defaultProviderName } from './provider-config';

/** The marker's name in CABOOSE_CACHE_DIR (index.js reads the same name). */
export const FIRST_OFF_MARKER = 'first-request.off';

/** Why this config never lets the first-request path take a message (null: it may). */
export function configBlocker(config: HostConfig): string | null {
  if (Object.keys(config.mcp?.servers ?? {}).length > 0) return 'MCP servers configured';
  const p = configuredProviders(config).get(defaultProviderName(config));
  if (!p) return 'no provider';
  if (!p.api_key && p.api_key_cmd) return 'api_key_cmd';
  return null;
}

function markerPath(): string | null {
  const dir = process.env.CABOOSE_CACHE_DIR;
  return dir && path.isAbsolute(dir) ? path.join(dir, FIRST_OFF_MARKER) : null;
}

/** Remembers (`why`) or forgets (null) that the config keeps the first-request path off. Never throws. */
export function rememberFirstOff(why: string | null): void {
  const file = markerPath();
  if (!file) return;
  try {
    if (why === null) fs.rmSync(file, { force: true });
    else {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      fs.writeFileSync(file, `${why}\n`, { mode: 0o600 });
    }
  } catch {
    // only a cache
  }
}
