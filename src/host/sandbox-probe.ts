/**
 * :checkhealth caboose's sandbox probe: sandboxed commands that attack the way a hostile model would
 * (write outside the workspace, read ~/.ssh and the data folder, open a socket to the host, read the
 * host's environment) and, for each, whether it was blocked. Every probe checks its effect from outside.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Sandbox } from '../workspace/sandbox/sandbox';
import type { SandboxConfig } from '../workspace/sandbox/policy';

export interface SandboxProbe {
  attack: string;
  blocked: boolean;
  detail: string;
}

export interface SandboxHealth {
  mode: 'workspace-write' | 'read-only' | 'off';
  available: boolean;
  kind?: string;
  path?: string;
  reason?: string;
  fix?: string;
  /** What the sandbox allows, in one line. */
  summary: string;
  probes?: SandboxProbe[];
  error?: string;
}

function run(sb: Sandbox, command: string, cwd: string): Promise<{ code: number | null; output: string }> {
  return sb.wrap('/bin/sh', ['-c', command], cwd, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.homedir() }).then(
    (w) =>
      new Promise((resolve) => {
        const child = spawn(w.command, w.args, { cwd, env: w.env, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')));
        child.stderr.on('data', (d: Buffer) => (output += d.toString('utf8')));
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        child.on('error', (e) => {
          clearTimeout(timer);
          w.dispose();
          resolve({ code: null, output: e.message });
        });
        child.on('close', (code) => {
          clearTimeout(timer);
          w.dispose();
          resolve({ code, output });
        });
      }),
  );
}

const sh = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export async function sandboxHealth(o: { cwd: string; dataDir: string; config?: SandboxConfig | null }): Promise<SandboxHealth> {
  const sb = new Sandbox({ root: o.cwd, dataDir: o.dataDir, config: o.config ?? null });
  // The trial as a child process: :checkhealth never blocks the host on the synchronous one.
  await sb.ready();
  const base: SandboxHealth = { mode: sb.mode, available: sb.active, summary: sb.describe() };
  if (sb.support.available) Object.assign(base, { kind: sb.support.kind, path: sb.support.path });
  else if (sb.mode !== 'off') Object.assign(base, { reason: sb.support.reason, fix: sb.support.fix });
  if (!sb.active) return base;
  // A scratch workspace of its own: the probe never writes into the user's.
  const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-probe-')));
  const probeSb = new Sandbox({ root: scratch, dataDir: o.dataDir, config: o.config ?? null });
  const probes: SandboxProbe[] = [];
  const server = net.createServer((c) => c.end('HELLO\n'));
  let connections = 0;
  server.on('connection', () => connections++);
  try {
    // 1. A write outside the workspace: a file in the home folder (removed at once if it got there).
    const target = path.join(os.homedir(), `.caboose-sandbox-probe-${randomBytes(4).toString('hex')}`);
    await run(probeSb, `echo probe > ${sh(target)}`, scratch);
    const wrote = fs.existsSync(target);
    if (wrote) fs.rmSync(target, { force: true });
    probes.push({ attack: `write outside the workspace (${target})`, blocked: !wrote, detail: wrote ? 'the file was written' : 'refused' });

    // 2. Secrets: ~/.ssh (when there is one) and the data folder.
    for (const [label, dir] of [
      ['read ~/.ssh', path.join(os.homedir(), '.ssh')],
      ['read the data folder', o.dataDir],
    ] as const) {
      let entries: string[] = [];
      try {
        entries = fs.readdirSync(dir);
      } catch {
        probes.push({ attack: label, blocked: true, detail: `${dir} does not exist here (nothing to hide)` });
        continue;
      }
      const r = await run(probeSb, `ls -A ${sh(dir)}`, scratch);
      const seen = entries.filter((e) => r.output.split('\n').includes(e));
      probes.push({
        attack: label,
        blocked: seen.length === 0,
        detail: seen.length === 0 ? `0 of ${entries.length} entries visible` : `${seen.length} of ${entries.length} entries visible`,
      });
    }

    // 3. A socket to a server on the host's 127.0.0.1.
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const client = `require('net').connect(${port},'127.0.0.1').on('data',d=>{process.stdout.write(String(d));process.exit(0)}).on('error',e=>{console.error(e.message);process.exit(1)})`;
    const r3 = await run(probeSb, `${sh(process.execPath)} -e ${sh(client)}`, scratch);
    const reached = connections > 0 || r3.output.includes('HELLO');
    const allowedLoopback = probeSb.network.kind === 'all' || (probeSb.network.kind === 'allow' && probeSb.network.hosts.includes('127.0.0.1'));
    probes.push({
      attack: 'open a socket to 127.0.0.1 on the host',
      blocked: !reached,
      detail: reached ? (allowedLoopback ? 'connected (the network is allowed by sandbox.network.allow)' : 'connected') : 'refused',
    });

    // 4. The host's environment (where the API key lives).
    const own = fs.existsSync('/proc/self/environ') ? fs.readFileSync('/proc/self/environ', 'latin1') : '';
    const r4 = await run(probeSb, `cat /proc/${process.pid}/environ; cat /proc/${process.ppid}/environ`, scratch);
    const firstVar = own.split('\0').find((v) => v.length >= 8) ?? null;
    const leaked = firstVar !== null && r4.output.includes(firstVar);
    probes.push({ attack: "read the host's /proc/<pid>/environ", blocked: !leaked, detail: leaked ? 'the host environment was readable' : 'not visible (own PID namespace)' });
    return { ...base, probes };
  } catch (e) {
    return { ...base, probes, error: e instanceof Error ? e.message : String(e) };
  } finally {
    server.close();
    await probeSb.dispose();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
