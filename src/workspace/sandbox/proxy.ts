/**
 * The host-side filtering proxy for `sandbox.network.allow = { 'host', … }`: an HTTP proxy (CONNECT for
 * https, absolute-form requests for http) that only reaches the listed hosts. It listens on a unix socket
 * (Linux: bound into the sandbox, whose network namespace has nothing else; a bridge inside turns
 * 127.0.0.1:3128 into that socket) or on 127.0.0.1 (macOS: the Seatbelt profile allows only that port).
 * A refused host gets `403` with a body the model can read.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { hostAllowed } from './policy';

export interface FilteringProxy {
  /** The unix socket path (or `127.0.0.1:<port>` for a TCP proxy). */
  address: string;
  port?: number;
  /** Hosts refused so far (for tests and the log). */
  refused: string[];
  close(): Promise<void>;
}

const REFUSAL = (host: string): string =>
  `blocked by the caboose sandbox: ${host} is not in sandbox.network.allow (ask the user to allow it, or call bash with escalate: true)\n`;

function splitHostPort(s: string, defPort: number): { host: string; port: number } | null {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(s) ?? /^([^:]+)(?::(\d+))?$/.exec(s);
  if (!m) return null;
  const port = m[2] ? Number(m[2]) : defPort;
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return null;
  return { host: m[1], port };
}

/** Starts the proxy; `tcp` listens on a random loopback port instead of a unix socket. */
export async function startFilteringProxy(hosts: readonly string[], o: { tcp?: boolean } = {}): Promise<FilteringProxy> {
  const refused: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('the caboose sandbox proxy takes absolute http:// URLs and CONNECT\n');
      return;
    }
    if (url.protocol !== 'http:' || !hostAllowed(url.hostname, hosts)) {
      refused.push(url.hostname);
      res.writeHead(403, { 'content-type': 'text/plain' }).end(REFUSAL(url.hostname));
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    headers.connection = 'close';
    const up = http.request({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80), method: req.method, path: url.pathname + url.search, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', (e) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`caboose sandbox proxy: ${e.message}\n`);
    });
    req.pipe(up);
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const target = splitHostPort(req.url ?? '', 443);
    if (!target || !hostAllowed(target.host, hosts)) {
      refused.push(target?.host ?? String(req.url));
      const body = REFUSAL(target?.host ?? String(req.url));
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    const up = net.connect(target.port, target.host.replace(/^\[|\]$/g, ''), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.on('error', (e) => {
      if (client.writable) client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\ncaboose sandbox proxy: ${e.message}\n`);
    });
  });
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  let dir: string | null = null;
  let address: string;
  let port: number | undefined;
  if (o.tcp) {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
    port = (server.address() as net.AddressInfo).port;
    address = `127.0.0.1:${port}`;
  } else {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-net-'));
    address = path.join(dir, 'proxy.sock');
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(address, () => resolve()));
  }
  server.unref();
  return {
    address,
    ...(port === undefined ? {} : { port }),
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          if (dir) fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

/**
 * The bridge that runs inside the sandbox (as `node -e`): listens on 127.0.0.1:<port> of the sandbox's
 * own network namespace, forwards each connection to the proxy's unix socket, then runs the command
 * (argv after the script's two arguments) with the same stdio and exits with its status.
 */
export const BRIDGE_SCRIPT = [
  "const net=require('net'),{spawn}=require('child_process');",
  'const [sock,port,cmd,...args]=process.argv.slice(1);',
  "const srv=net.createServer(c=>{const u=net.connect(sock);u.on('error',()=>c.destroy());c.on('error',()=>u.destroy());c.pipe(u).pipe(c);});",
  "srv.listen(Number(port),'127.0.0.1',()=>{const ch=spawn(cmd,args,{stdio:'inherit'});",
  "for(const s of ['SIGTERM','SIGINT','SIGHUP'])process.on(s,()=>ch.kill(s));",
  "ch.on('error',e=>{process.stderr.write(String(e.message)+'\\n');process.exit(127);});",
  "ch.on('exit',(code,sig)=>process.exit(code===null?128+(require('os').constants.signals[sig]||9):code));});",
].join('');
