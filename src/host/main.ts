// First: zod's setting must be in place before any schema is built (zod-jitless.ts).
import './zod-jitless';
import Module from 'node:module';
import { getLogger, setClientLogger } from './client-logger';
import { createFileLogger, guardConsole, isLogLevel, type Logger } from './logger';
import { LuaUi, type NvimNotifier } from './lua-ui';
import { CALL_NOTIFICATION } from './protocol-names';
import { errorMessage, HostServer } from './server';

/** True in the one-file host that scripts/bundle-host.mjs builds (it defines this constant). */
declare const __CABOOSE_BUNDLED__: boolean | undefined;
const BUNDLED = typeof __CABOOSE_BUNDLED__ !== 'undefined' && __CABOOSE_BUNDLED__;

function makeLogger(): Logger {
  const level = process.env.CABOOSE_LOG_LEVEL;
  return createFileLogger(process.env.CABOOSE_LOG_FILE || null, isLogLevel(level) ? level : 'info');
}

/** Adapts our logger to the node-client's, so it does not build its own winston logger. */
function clientLogger(log: Logger) {
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
function skipClientDefaultLogger(log: Logger): void {
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

function attachStdio(log: Logger) {
  const HostClient = hostClientClass();
  const nvim = new HostClient({ logger: clientLogger(log) as never });
  nvim.attach({ reader: process.stdin, writer: process.stdout });
  return nvim;
}

/** Started by the Lua side with jobstart({node, <plugin>/rplugin/node/caboose}, {rpc = true}). */
export function runStdio(): void {
  const log = makeLogger();
  guardConsole(log); // our own process: stdout belongs to msgpack
  skipClientDefaultLogger(log);
  const nvim = attachStdio(log);
  const server = new HostServer(new LuaUi(nvim as unknown as NvimNotifier, log), log);
  nvim.on('request', (method: string, args: unknown[], resp: { send(v: unknown, isError?: boolean): void }) => {
    server.handle(method, args?.[0]).then(
      (result) => resp.send(result ?? null),
      (err: unknown) => {
        log.warn('request %s failed: %s', method, err instanceof Error ? err.stack : String(err));
        resp.send(errorMessage(err), true);
      },
    );
  });
  nvim.on('notification', (method: string, args: unknown[]) => {
    if (method === CALL_NOTIFICATION) return server.call(args?.[0]);
    server.handle(method, args?.[0]).catch((err: unknown) => log.warn('notification %s failed: %s', method, errorMessage(err)));
  });
  const shutdown = (why: string) => {
    log.info('host exiting: %s', why);
    server.dispose();
    process.exit(0);
  };
  nvim.on('disconnect', () => shutdown('disconnect'));
  process.stdin.on('end', () => shutdown('stdin closed'));
  // Neovim ends its jobs with SIGTERM when it quits: exit through shutdown, so exit hooks (the bash
  // tool's, which SIGKILLs what commands left running) still run.
  for (const sig of ['SIGTERM', 'SIGHUP'] as const) process.once(sig, () => shutdown(sig));
  process.on('uncaughtException', (err) => log.error('uncaught: %s', err.stack ?? String(err)));
  process.on('unhandledRejection', (err) => log.error('unhandled rejection: %s', err instanceof Error ? err.stack : String(err)));
  log.info('host started pid=%d node=%s', process.pid, process.version);
}

/** The slice of node-client's NvimPlugin the classic remote-plugin host hands us. */
interface ClassicPlugin {
  nvim: unknown;
  setOptions(o: { dev?: boolean; alwaysInit?: boolean }): void;
  registerFunction(name: string, fn: (args: unknown[]) => unknown, options?: { sync?: boolean }): void;
}

/**
 * Loaded by Neovim's classic node remote-plugin host (:UpdateRemotePlugins). Defines no commands —
 * plugin/caboose.lua owns those — only the two functions Lua's rpc layer calls in 'remote' transport.
 */
export function remotePlugin(plugin: ClassicPlugin): void {
  // The shared host process already keeps console off stdout; its console is not ours to replace.
  const log = makeLogger();
  plugin.setOptions({ dev: false });
  const server = new HostServer(new LuaUi(plugin.nvim as NvimNotifier, log), log);
  plugin.registerFunction(
    'CabooseHostRequest',
    async (args: unknown[]) => {
      const [method, params] = args as [string, unknown];
      try {
        return { ok: true, result: (await server.handle(method, params)) ?? null };
      } catch (err) {
        return { ok: false, error: errorMessage(err) };
      }
    },
    { sync: true },
  );
  plugin.registerFunction(
    'CabooseHostNotify',
    (args: unknown[]) => {
      const [method, params] = args as [string, unknown];
      if (method === CALL_NOTIFICATION) return server.call(params);
      server.handle(method, params).catch((err: unknown) => log.warn('notify %s failed: %s', method, errorMessage(err)));
    },
    { sync: false },
  );
}
