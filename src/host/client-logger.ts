/**
 * A stand-in for node-client's `neovim/lib/utils/logger`, whose module loads winston (~40 ms) at require
 * time only to build a default logger we never use (we pass our own). The unbundled host seeds the
 * module cache with it (main.ts); the bundled host (scripts/bundle-host.mjs) is built with it in place of
 * the original. Either way node-client's modules get the logger main.ts sets here.
 */
export interface ClientLogger {
  level: string;
  debug(m: string, ...a: unknown[]): void;
  info(m: string, ...a: unknown[]): void;
  warn(m: string, ...a: unknown[]): void;
  error(m: string, ...a: unknown[]): void;
}

const silent: ClientLogger = { level: 'info', debug() {}, info() {}, warn() {}, error() {} };
let current: ClientLogger = silent;

export function setClientLogger(l: ClientLogger): void {
  current = l;
}

export function getLogger(): ClientLogger {
  return current;
}
