/**
 * The model's connection opened ahead (issue 24): as soon as host.init names the provider, its TCP (and for
 * https the TLS) connection is opened while the host does everything else a first message needs, and the
 * first request to that origin goes out on it. For a real provider this overlaps the handshake (often
 * 50–150 ms) with the host's start; for a local one the connect.
 *
 * How: the socket is made by Node's own global agent (node:http / node:https `globalAgent`, the one
 * node-fetch.ts's requests use) exactly as that agent would make it for that origin (its `createConnection`,
 * with the options and key its `createSocket` computes), and the agent is given it the first time it asks
 * for a connection with that same key. From there the agent owns it as any socket it made: kept alive and
 * reused by the next requests, closed when idle. A pre-opened socket that failed or was closed before a
 * request wanted it is dropped (that request connects as always); one nobody asked for is closed after the
 * agent's own idle time for a free socket (5 s), or by `dropPreconnect` at the host's exit.
 *
 * Not done when a proxy may apply: Node's own HTTP proxy support (`NODE_USE_ENV_PROXY` / `--use-env-proxy`
 * with HTTP(S)_PROXY) sends requests elsewhere than the origin.
 */
import type { Socket } from 'node:net';

interface AgentInternals {
  options: Record<string, unknown>;
  getName(options: Record<string, unknown>): string;
  createConnection(options: Record<string, unknown>, cb?: (err: Error | null, s?: Socket) => void): Socket | undefined;
}

interface Pending {
  agent: AgentInternals;
  /** Gives the agent its own createConnection back. */
  restore(): void;
  key: string;
  socket: Socket;
  timer: NodeJS.Timeout;
  /** The origin as logged (host:port, never a URL's credentials). */
  host: string;
}

let pending: Pending | null = null;

/** How long a pre-opened socket nobody asked for stays open: the global agent's own idle time for a free socket. */
export const PRECONNECT_IDLE_MS = 5000;

/** Whether Node itself may send this process's requests through a proxy (then nothing is opened ahead). */
export function proxyMayApply(env: NodeJS.ProcessEnv = process.env, execArgv: readonly string[] = process.execArgv): boolean {
  const flag = (s: string | undefined): boolean => (s ?? '').split(/\s+/).includes('--use-env-proxy');
  const on = Boolean(env.NODE_USE_ENV_PROXY && env.NODE_USE_ENV_PROXY !== '0') || execArgv.includes('--use-env-proxy') || flag(env.NODE_OPTIONS);
  return on && ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy'].some((k) => Boolean(env[k]));
}

/**
 * Opens the connection a request to `baseURL` will want, unless one is already waiting, the URL is not
 * http(s), or a proxy may apply. Returns the origin opened (host:port) or null. Never throws.
 */
export function preconnect(baseURL: string, opts: { idleMs?: number; env?: NodeJS.ProcessEnv; onTaken?: () => void } = {}): string | null {
  if (pending) return null;
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return null;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || proxyMayApply(opts.env)) return null;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const net = require('node:net') as typeof import('node:net');
    const https = url.protocol === 'https:';
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const agent = (https ? require('node:https') : require('node:http')).globalAgent as unknown as AgentInternals;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const port = url.port ? Number(url.port) : https ? 443 : 80;
    // What the agent's createSocket computes for a request to this origin (ClientRequest's host and port,
    // the agent's options, the server name for TLS: none for an IP address).
    const options: Record<string, unknown> = { host, port, ...agent.options };
    if (https) options.servername = net.isIP(host) ? '' : host;
    const key = agent.getName(options);
    options._agentKey = key;
    options.encoding = null;
    const socket = agent.createConnection(options);
    if (!socket) return null;
    const origin = `${url.hostname}:${port}`;
    const drop = (): void => {
      if (pending?.socket === socket) release();
    };
    // Failed or closed before anyone asked: dropped (the request connects as always).
    socket.on('error', drop);
    socket.once('close', drop);
    socket.unref();
    const timer = setTimeout(() => {
      if (pending?.socket === socket) dropPreconnect();
    }, opts.idleMs ?? PRECONNECT_IDLE_MS);
    timer.unref();
    const original = agent.createConnection;
    const hadOwn = Object.prototype.hasOwnProperty.call(agent, 'createConnection');
    const restore = (): void => {
      if (hadOwn) agent.createConnection = original;
      else delete (agent as unknown as Record<string, unknown>).createConnection;
    };
    agent.createConnection = function (this: AgentInternals, o: Record<string, unknown>, cb?: (err: Error | null, s?: Socket) => void): Socket | undefined {
      const p = pending;
      if (p && p.agent === agent && o._agentKey === p.key && !p.socket.destroyed) {
        release();
        p.socket.ref();
        // Told once the request is on its way (nothing more on its path).
        if (opts.onTaken) setImmediate(opts.onTaken);
        return p.socket;
      }
      return original.call(this, o, cb);
    } as AgentInternals['createConnection'];
    pending = { agent, restore, key, socket, timer, host: origin };
    function release(): void {
      const p = pending;
      if (!p) return;
      pending = null;
      clearTimeout(p.timer);
      p.socket.removeListener('error', drop);
      p.socket.removeListener('close', drop);
      p.restore();
    }
    return origin;
  } catch {
    return null;
  }
}

/** Closes a pre-opened socket nobody used (the host exits, or it stayed unused). */
export function dropPreconnect(): void {
  const p = pending;
  if (!p) return;
  // A socket destroyed after its 'error' listener is removed must not throw: one last no-op listener.
  p.socket.on('error', () => undefined);
  p.socket.destroy();
  // Its `close` comes later: released now.
  if (pending === p) {
    pending = null;
    clearTimeout(p.timer);
    p.restore();
  }
}

/**
 * Resolves once the socket opened ahead has connected (or failed, or is gone), at most after `maxMs`. A
 * request made after it is written at once: a socket whose connection the event loop has not seen complete
 * yet holds the request back until the loop gets there, which a cold start's busy first turn delays.
 */
export function preconnectSettled(maxMs = 2): Promise<void> {
  const p = pending;
  if (!p || !p.socket.connecting) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      p.socket.removeListener('connect', done);
      p.socket.removeListener('close', done);
      resolve();
    };
    const timer = setTimeout(done, maxMs);
    p.socket.once('connect', done);
    p.socket.once('close', done);
  });
}

/** The origin (host:port) whose socket is waiting, if any (tests). */
export function preconnected(): string | null {
  return pending?.host ?? null;
}
