/**
 * The RPC channel over stdio and the host's logger: shared by the host (main.ts) and the first-request
 * bundle (first-main.ts), which attaches the channel before the rest of the host has loaded.
 */
import Module from 'node:module';
import { getLogger, setClientLogger } from './client-logger';
import { createFileLogger, isLogLevel, type Logger } from './logger';

/** True in the one-file host that scripts/bundle-host.mjs builds (it defines this constant). */
declare const __CABOOSE_BUNDLED__: boolean | undefined;
const BUNDLED = typeof __CABOOSE_BUNDLED__ !== 'undefined' && __CABOOSE_BUNDLED__;

export function makeLogger(): Logger {
  const level = process.env.CABOOSE_LOG_LEVEL;
  return createFileLogger(process.env.CABOOSE_LOG_FILE || null, isLogLevel(level) ? level : 'info');
}

/** Adapts our logger to the node-client's, so it does not build its own winston logger. */
export function clientLogger(log: Logger) {
  return {
    level: 'info',
    debug: (m: string, ...a: unknown[]) => log.debug(m, ...a),
    info: (m: string, ...a: unknown[]) => log.debug(m, ...a),
    warn: (m: string, ...a: unknown[]) => log.warn(m, ...a),
    error: (m: string, ...a: unknown[]) => log.error(m, ...a),
  };
}

/**
 * node-client's logger module loads winston (~40 ms) at require time, only to build a default logger we
 * never use (we pass our own). Seeding the module cache with a stand-in keeps it out of start-up (in the
 * bundled host the stand-in is built in: scripts/bundle-host.mjs).
 */
export function skipClientDefaultLogger(log: Logger): void {
  setClientLogger(clientLogger(log));
  if (BUNDLED) return;
  const id = require.resolve('neovim/lib/utils/logger');
  if (require.cache[id]) return;
  const stub = new Module(id);
  stub.filename = id;
  stub.loaded = true;
  stub.exports = { getLogger };
  require.cache[id] = stub;
}

/**
 * node-client's NeovimClient, minus its start-up handshake: it asks Neovim for `nvim_get_api_info` and holds
 * every request and notification that arrives until the answer (the whole API's metadata, ~100 KB of
 * msgpack) is in and decoded. The host only sends notifications and requests by name, so it needs none of
 * it: on a cold start that round trip waited for Neovim's main loop — busy opening the chat — before the
 * first message could even be read. The channel id it would learn is not used (the Lua side knows the job).
 */
export function hostClientClass(): typeof import('neovim/lib/api/client').NeovimClient {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { NeovimClient } = require('neovim/lib/api/client') as typeof import('neovim/lib/api/client');
  return class HostClient extends NeovimClient {
    override requestApi(): Promise<unknown[]> {
      return Promise.resolve([0, {}]);
    }
  };
}

export function attachStdio(log: Logger) {
  const HostClient = hostClientClass();
  const nvim = new HostClient({ logger: clientLogger(log) as never });
  nvim.attach({ reader: process.stdin, writer: process.stdout });
  return nvim;
}


/**
 * Ends the host through `dispose` when Neovim goes (its channel, stdin, or the SIGTERM/SIGHUP Neovim sends its
 * jobs when it quits), so exit hooks (the bash tool's, which SIGKILLs what commands left running) still run;
 * and logs what would otherwise end the process unseen.
 */
export function exitWithEditor(nvim: { on(event: 'disconnect', cb: () => void): unknown }, log: Logger, dispose: () => void): void {
  const shutdown = (why: string) => {
    log.info('host exiting: %s', why);
    dispose();
    process.exit(0);
  };
  nvim.on('disconnect', () => shutdown('disconnect'));
  process.stdin.on('end', () => shutdown('stdin closed'));
  for (const sig of ['SIGTERM', 'SIGHUP'] as const) process.once(sig, () => shutdown(sig));
  process.on('uncaughtException', (err) => log.error('uncaught: %s', err.stack ?? String(err)));
  process.on('unhandledRejection', (err) => log.error('unhandled rejection: %s', err instanceof Error ? err.stack : String(err)));
}
