// First: zod's setting must be in place before any schema is built (zod-jitless.ts).
import './zod-jitless';
import { guardConsole, type Logger } from './logger';
import { LuaUi, type NvimNotifier } from './lua-ui';
import { CALL_NOTIFICATION } from './protocol-names';
import { errorMessage, HostServer, type FirstStart } from './server';
import { attachStdio, exitWithEditor, makeLogger, skipClientDefaultLogger } from './stdio-client';

export { hostClientClass } from './stdio-client';
export { errorMessage } from './server';

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
  exitWithEditor(nvim, log, () => server.dispose());
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

/** What the first-request bundle (first-main.ts) hands the host once it has loaded. */
export interface Handover {
  /** The RPC channel, attached (first-main.ts routes its requests and notifications to the server). */
  nvim: NvimNotifier;
  log: Logger;
  /** The first message's request, already sent (null: none; the message, if any, takes the usual path). */
  first: FirstStart | null;
}

/**
 * The host behind the first-request bundle: the same server as runStdio's, on the channel that bundle
 * attached; it is handed host.init and every call after it, in the order they arrived.
 */
export function adopt(h: Handover): HostServer {
  const server = new HostServer(new LuaUi(h.nvim, h.log), h.log);
  if (h.first) server.adoptFirst(h.first);
  return server;
}
