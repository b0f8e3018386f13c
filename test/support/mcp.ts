/** The test MCP server (test/support/mcp-server.mjs): stdio configs for the host, HTTP instances as children. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const MCP_SERVER_SCRIPT = path.join(__dirname, 'mcp-server.mjs');

/** A stdio server entry for `mcp.servers` (node runs the script; any extra flags). */
export function stdioServer(extra: Record<string, unknown> = {}, flags: string[] = []): Record<string, unknown> {
  return { command: process.execPath, args: [MCP_SERVER_SCRIPT, ...flags], ...extra };
}

export interface HttpMcpServer {
  url: string;
  proc: ChildProcess;
  /** Ends the server at once (SIGKILL): what a crash looks like from the client. */
  kill(): void;
  close(): Promise<void>;
}

/** Starts the HTTP variant on 127.0.0.1 (a random port) and waits until it listens. */
export async function startHttpMcpServer(flags: string[] = []): Promise<HttpMcpServer> {
  const proc = spawn(process.execPath, [MCP_SERVER_SCRIPT, '--http', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`the HTTP MCP server exited (${code}): ${stderr}`)));
  });
  const exited = new Promise<void>((resolve) => (proc.exitCode !== null ? resolve() : proc.once('exit', () => resolve())));
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    proc,
    kill: () => proc.kill('SIGKILL'),
    async close() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
