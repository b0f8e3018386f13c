// No zod here (issue 24: ≈ 11 ms of a cold start): host.init and the first send are checked by validators
// generated at build time from the host's zod schemas (first-validate-gen.ts → dist/host/first-validators.js);
// what they refuse, and any params holding other than plain data, go to the host, which validates with zod.
import { guardConsole, type Logger } from './logger';
import { LuaUi, type NvimNotifier } from './lua-ui';
import { CALL_NOTIFICATION, EVENTS, HOST_VERSION, METHODS } from './protocol-names';
import type { FirstInitData, FirstSendData } from './first-validate-gen';
import type { HostConfig } from './protocol';
import { resolveProvider, setEditorApiKey } from './provider-config';
import { dropPreconnect, preconnect } from '../agent/preconnect';
import { FirstRequest, firstBlocker, type FirstInit } from './first-request';
import { configBlocker, rememberFirstOff } from './first-eligibility';
import { attachStdio, exitWithEditor, makeLogger, skipClientDefaultLogger } from './stdio-client';
import type { FirstStart } from './server';

/** The host's server as the first-request bundle routes to it (main.ts `adopt`). */
export interface HostRouter {
  handle(method: string, params: unknown): Promise<unknown>;
  call(raw: unknown): void;
  dispose(): void;
}

/** The host bundle's exports this bundle uses. */
export interface HostModule {
  adopt(h: { nvim: NvimNotifier; log: Logger; first: FirstStart | null }): HostRouter;
  /** An error as the RPC channel reports it (server.ts errorMessage). */
  errorMessage(err: unknown): string;
}

/** The generated validators (first-validate-gen.ts), as the build wrote them next to this module. */
type FirstValidators = typeof import('./first-validators.js');
let validators: FirstValidators | undefined;
function firstValidators(): FirstValidators {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (validators ??= require('./first-validators.js') as FirstValidators);
}

/**
 * Whether `v` is plain data as msgpack maps, arrays and scalars decode (the generated validators' domain:
 * JSON Schema's `object` would also take a Buffer or an editor handle, which zod's records refuse).
 */
export function isPlainData(v: unknown, depth = 0): boolean {
  if (v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') return true;
  if (typeof v !== 'object' || depth > 64) return false;
  if (Array.isArray(v)) return Object.getPrototypeOf(v) === Array.prototype && v.every((x) => isPlainData(x, depth + 1));
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  if (Object.getOwnPropertySymbols(v).length > 0) return false;
  return Object.values(v).every((x) => isPlainData(x, depth + 1));
}

/** host.init's params when the generated validator takes them (with `config` defaulted), else null. */
export function checkFirstInit(params: unknown, v: FirstValidators = firstValidators()): FirstInitData | null {
  return isPlainData(params) && v.init(params) ? (params as FirstInitData) : null;
}
/** The send's params when the generated validator takes them, else null. */
export function checkFirstSend(params: unknown, v: FirstValidators = firstValidators()): FirstSendData | null {
  return isPlainData(params) && v.send(params) ? (params as FirstSendData) : null;
}

/** How long the rest of the host waits for the first reply's first event before it loads anyway. */
const REST_AFTER_MS = 30;

interface RawCall {
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

/**
 * The host's entry when its first-request bundle is built (rplugin/node/caboose/index.js, stdio only):
 * attaches the RPC channel, answers host.init, and when the first message comes with it sends that
 * message's model request (first-request.ts) before loading the rest of the host (`loadHost`, the full
 * bundle). The rest loads once the reply's first event arrived (or after REST_AFTER_MS), or at once when
 * there is no such message; every call is then handed to the host's server in arrival order.
 */
export function runFirst(loadHost: () => HostModule): void {
  const log = makeLogger();
  guardConsole(log); // our own process: stdout belongs to msgpack
  skipClientDefaultLogger(log);
  const nvim = attachStdio(log) as unknown as NvimNotifier & { on(ev: string, fn: (...a: never[]) => void): void };
  const ui = new LuaUi(nvim, log);
  // The events of the first request go as the first session's do (its scope, 0).
  const firstUi = ui.scope(0);

  let server: HostRouter | null = null;
  /** Work for the server, in arrival order, once it exists. */
  const queue: ((s: HostRouter) => void)[] = [];
  let loading = false;
  let init: { raw: unknown; parsed: FirstInit } | null = null;
  let callsAfterInit = 0;
  /** The first message's call (answered by the server) and its request, when the first-request path took it. */
  let firstCall: RawCall | null = null;
  let first: FirstRequest | null = null;
  /** The first request is being built: the rest waits for it to leave. */
  let building = false;

  let errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  const loadNow = (): void => {
    let host: HostModule;
    try {
      host = loadHost();
    } catch (err) {
      // As when the host itself cannot load: the process ends, and Neovim reports its stderr.
      const why = err instanceof Error ? (err.stack ?? err.message) : String(err);
      log.error('the host could not load: %s', why);
      first?.abort();
      process.stderr.write(`caboose: the host could not load: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
    errorMessage = host.errorMessage;
    ui.flush();
    const f = first;
    const shown = f ? f.handOver() : [];
    const mode = init?.parsed.config.mode ?? 'create';
    const s = host.adopt({
      nvim,
      log,
      first: f
        ? {
            sessionId: f.sessionId,
            shown,
            reply: f,
            rules: f.rules,
            failed: () => {
              // The session could not start (its store did not open): the reply shown stops here; the
              // error is the message's answer, as without the first-request path.
              firstUi.emit(EVENTS.assistantEnd, { interrupted: shown.some((e) => e.name === EVENTS.assistantDelta) });
              firstUi.emit(EVENTS.state, { state: 'idle', previous: 'streaming', mode, session: f.sessionId, grants: [] });
            },
          }
        : null,
    });
    server = s;
    if (init) s.handle(METHODS.init, init.raw).catch((err: unknown) => log.warn('host.init (handed over) failed: %s', err instanceof Error ? err.message : String(err)));
    if (firstCall) s.call(firstCall);
    for (const q of queue.splice(0)) q(s);
  };
  const load = (): void => {
    if (loading) return;
    loading = true;
    setImmediate(loadNow);
  };
  const toServer = (fn: (s: HostRouter) => void): void => {
    if (server) return fn(server);
    queue.push(fn);
    if (!building) load();
  };

  const reply = (id: unknown, result: unknown): void => ui.emit(EVENTS.reply, { id, ok: true, result });

  const onInit = (c: RawCall): boolean => {
    // Validated on a copy: the host validates the params as they came (the validator fills `config`'s default).
    const raw: unknown = Array.isArray(c.params) && c.params.length === 0 ? {} : (c.params ?? {});
    const d = isPlainData(raw) ? checkFirstInit(structuredClone(raw)) : null;
    if (!d) {
      // A config naming MCP servers (validated by the host); the next starts load the host at once.
      const mcp = (raw as { config?: { mcp?: unknown } } | undefined)?.config?.mcp;
      if (mcp !== undefined && isPlainData(mcp) && !firstValidators().mcp(mcp)) rememberFirstOff('MCP servers configured');
      return false; // the server answers it, as always
    }
    // `mcp.servers` is [] or {} here (no server either way; Lua sends an empty table as []): the rest of
    // the config is HostConfig's input, which is its output but for the keys zod strips.
    const config = d.config as HostConfig;
    const never = configBlocker(config);
    if (never) rememberFirstOff(never);
    if (d.log_file) log.setFile(d.log_file);
    if (d.log_level) log.setLevel(d.log_level);
    if (d.env_api_key) setEditorApiKey(d.env_api_key);
    init = { raw: c.params, parsed: { config, cwd: d.cwd, dataDir: d.data_dir } };
    reply(c.id, { version: HOST_VERSION, pid: process.pid });
    // The provider's connection opens now (its TCP and TLS handshakes overlap the rest of the start); the
    // first request to it, this bundle's or the host's, goes out on it (agent/preconnect.ts). Not for a
    // key that needs a command (resolving the provider would run it here).
    if (!never)
      resolveProvider(config).then(
        (p) => {
          const origin = preconnect(p.baseURL, { onTaken: () => log.info('the first request to the model went out on the connection opened ahead') });
          if (origin) log.info('pre-connecting to the model at %s', origin);
        },
        () => undefined,
      );
    // No message with it (the chat opened first, the user types): the rest loads now, as the host's warm-up.
    setImmediate(() => {
      if (!building && !first) load();
    });
    return true;
  };

  const tryFirst = (c: RawCall, at: FirstInit): boolean => {
    const p = checkFirstSend(c.params ?? {});
    if (!p) return false;
    const why = firstBlocker(at, p);
    if (why) {
      log.info('first request: usual path (%s)', why);
      return false;
    }
    const f = new FirstRequest((name, payload) => firstUi.emit(name, payload), log);
    firstCall = c;
    building = true;
    f.start(at, p.text).then(
      () => {
        first = f;
        building = false;
        log.info('first request sent before the session loaded');
        // The rest loads once the reply begins (the chat shows its first text first), or soon anyway.
        let timer: NodeJS.Timeout | undefined;
        void Promise.race([f.firstItem, new Promise<void>((resolve) => (timer = setTimeout(resolve, REST_AFTER_MS)))]).then(() => {
          clearTimeout(timer);
          load();
        });
      },
      (err: unknown) => {
        // Nothing was shown yet (start() shows only once the request can go): the usual path.
        building = false;
        f.abort();
        log.info('first request: usual path (%s)', err instanceof Error ? err.message : String(err));
        load();
      },
    );
    return true;
  };

  nvim.on('notification', (method: string, args: unknown[]) => {
    if (method === CALL_NOTIFICATION && !server && (args?.[0] as RawCall | undefined)?.method === METHODS.ping) {
      return reply((args[0] as RawCall).id, ping());
    }
    if (method === CALL_NOTIFICATION && !loading) {
      const c = (args?.[0] ?? {}) as RawCall;
      if (c.method === METHODS.init && !init && typeof c.id === 'number' && onInit(c)) return;
      if (c.method === METHODS.send && init && callsAfterInit === 0 && !firstCall && typeof c.id === 'number') {
        callsAfterInit++;
        if (tryFirst(c, init.parsed)) return;
      }
      callsAfterInit++;
    }
    toServer((s) => {
      if (method === CALL_NOTIFICATION) return s.call(args?.[0]);
      s.handle(method, args?.[0]).catch((err: unknown) => log.warn('notification %s failed: %s', method, errorMessage(err)));
    });
  });
  // host.ping needs nothing of the host (the same answer as server.ts's): answered here, before it loads.
  const ping = () => ({ version: HOST_VERSION, pid: process.pid, node: process.version });
  nvim.on('request', (method: string, args: unknown[], resp: { send(v: unknown, isError?: boolean): void }) => {
    if (method === METHODS.ping && !server) return resp.send(ping());
    toServer((s) =>
      s.handle(method, args?.[0]).then(
        (result) => resp.send(result ?? null),
        (err: unknown) => {
          log.warn('request %s failed: %s', method, err instanceof Error ? err.stack : String(err));
          resp.send(errorMessage(err), true);
        },
      ),
    );
  });
  exitWithEditor(nvim, log, () => {
    first?.abort();
    dropPreconnect();
    server?.dispose();
  });
  log.info('host started pid=%d node=%s (first-request bundle)', process.pid, process.version);
}
