/** A real HTTP server on 127.0.0.1 (random port) for tests of tools that reach the network. */
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

export interface LocalHttp {
  server: http.Server;
  /** e.g. http://127.0.0.1:43210 */
  base: string;
  close(): Promise<void>;
}

export async function startLocalHttp(handler: http.RequestListener): Promise<LocalHttp> {
  const server = http.createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    server,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A port on 127.0.0.1 that nothing listens on (connections are refused). */
export async function closedPort(): Promise<number> {
  const local = await startLocalHttp(() => undefined);
  const port = Number(new URL(local.base).port);
  await local.close();
  return port;
}
