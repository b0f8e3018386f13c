/**
 * The sandbox policy for model-chosen programs (the bash tool, MCP stdio servers that opt in), and how
 * it becomes a bubblewrap command line (Linux) or a Seatbelt profile (macOS). Pure: no I/O here.
 *
 * workspace-write (the default): the workspace is writable except every `.git` (at any depth, file or
 * folder) and the plugin's data folder; a private, empty /tmp per command; the rest of the filesystem is
 * readable except secrets (~/.ssh, ~/.gnupg, ~/.aws, ~/.config/gcloud, ~/.netrc, ~/.npmrc, the data
 * folder, the user's list), which are replaced by empty folders/files; no network unless allowed; a PID
 * namespace of its own (no view of other processes, `/proc/<pid>/environ` of the host included); every
 * capability dropped (as root, a capability would let the command remount `/` read-write).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { SandboxConfig } from './config';

// The config's schema lives in ./config.ts (zod): this module is also in the first-request bundle, which
// holds no zod (issue 24).
export type { SandboxConfig } from './config';

import type { SandboxMode } from './modes';
export { SANDBOX_MODES, type SandboxMode } from './modes';

/** Secrets never readable from inside (relative to the home folder). */
export const DEFAULT_DENY_READ = [
  '.ssh',
  '.gnupg',
  '.aws',
  '.config/gcloud',
  '.netrc',
  '.npmrc',
  // Other usual homes of credentials.
  '.docker/config.json',
  '.git-credentials',
  '.config/gh',
  '.kube',
  '.azure',
  '.password-store',
  '.local/share/keyrings',
  '.pypirc',
  '.cargo/credentials.toml',
  '.vault-token',
];

export type NetworkPolicy = { kind: 'none' } | { kind: 'all' } | { kind: 'allow'; hosts: string[] };

export interface SandboxPolicy {
  mode: Exclude<SandboxMode, 'off'>;
  /** The workspace root (real path). */
  root: string;
  /** Writable folders besides the workspace (workspace-write only). */
  writable: string[];
  /** Paths that stay read-only inside writable folders: each existing `.git` (found by a scan). */
  readOnly: string[];
  /** Paths replaced by an empty folder (or an empty file): secrets and the data folder. */
  hidden: { path: string; dir: boolean }[];
  network: NetworkPolicy;
}

/** `~/x` → the home folder's x; relative paths are relative to the home folder too. */
export function expandHome(p: string, home = os.homedir()): string {
  if (p === '~') return home;
  if (p.startsWith('~/')) return path.join(home, p.slice(2));
  return path.isAbsolute(p) ? path.normalize(p) : path.join(home, p);
}

export function networkPolicy(allow: boolean | string[] | undefined): NetworkPolicy {
  if (allow === true) return { kind: 'all' };
  if (!allow || allow.length === 0) return { kind: 'none' };
  if (allow.includes('*')) return { kind: 'all' };
  return { kind: 'allow', hosts: allow.map((h) => h.toLowerCase()) };
}

/** Whether `host` (a name or an IP literal, without port) is on the allow-list. */
export function hostAllowed(host: string, hosts: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return hosts.some((a) => {
    const pat = a.replace(/^\[|\]$/g, '');
    if (pat.startsWith('*.')) return h.endsWith(pat.slice(1)) && h.length > pat.length - 1;
    return h === pat;
  });
}

/** Where the proxy's unix socket appears inside the sandbox, and the loopback port the bridge listens on. */
export const SANDBOX_PROXY_SOCKET = '/tmp/.caboose-net.sock';
export const SANDBOX_PROXY_PORT = 3128;

/**
 * The bwrap arguments (before `--`) for a command. Order matters: later mounts cover earlier ones, so the
 * private /tmp comes before the workspace (a workspace under /tmp stays visible), the read-only `.git`
 * binds after the workspace, and the hidden paths last.
 */
export function bwrapArgs(policy: SandboxPolicy, o: { cwd: string; proxySocket?: string; visibleInTmp?: string[] }): string[] {
  const a = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp'];
  for (const v of o.visibleInTmp ?? []) a.push('--ro-bind', v, v);
  const write = policy.mode === 'workspace-write';
  const bind = write ? '--bind' : '--ro-bind';
  for (const w of write ? policy.writable : []) a.push('--bind', w, w);
  a.push(bind, policy.root, policy.root);
  for (const r of write ? policy.readOnly : []) a.push('--ro-bind', r, r);
  for (const h of policy.hidden) {
    if (h.dir) a.push('--tmpfs', h.path, '--remount-ro', h.path);
    else a.push('--ro-bind', '/dev/null', h.path);
  }
  if (o.proxySocket) a.push('--bind', o.proxySocket, SANDBOX_PROXY_SOCKET);
  a.push('--unshare-all');
  if (policy.network.kind === 'all') a.push('--share-net');
  a.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--chdir', o.cwd);
  return a;
}

/**
 * The folders of /tmp that a command line names (a program, script or its modules kept under /tmp, e.g. a
 * checkout there): shown read-only over the private /tmp, or the command could not even start. Only the
 * top-level folder of each such path; the workspace binds over it afterwards as usual.
 */
export function tmpFoldersNamed(argv: string[]): string[] {
  const out = new Set<string>();
  for (const arg of argv) {
    const m = /^\/tmp\/([^/]+)\//.exec(arg);
    if (m && m[1] !== '.' && m[1] !== '..') out.add(`/tmp/${m[1]}`);
  }
  return [...out];
}

/** A Seatbelt string literal. */
function sb(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** A regex matching a path and what is under it, for Seatbelt. */
function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * The macOS `sandbox-exec -p` profile for the same policy (untested: the project's tests run on Linux).
 * Seatbelt cannot hide other processes' environment the way a PID namespace does; it denies
 * `process-info*` on processes other than the command's own.
 */
export function seatbeltProfile(policy: SandboxPolicy, o: { tmp: string; proxyPort?: number }): string {
  const lines = ['(version 1)', '(deny default)', '(allow process-exec)', '(allow process-fork)', '(allow signal (target same-sandbox))'];
  lines.push('(allow process-info* (target same-sandbox))', '(allow sysctl-read)', '(allow mach-lookup)', '(allow ipc-posix-shm)', '(allow file-read*)');
  for (const h of policy.hidden) lines.push(`(deny file-read* (${h.dir ? 'subpath' : 'literal'} ${sb(h.path)}))`);
  lines.push('(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))');
  const writable = [o.tmp, ...(policy.mode === 'workspace-write' ? [policy.root, ...policy.writable] : [])];
  lines.push(`(allow file-write* ${writable.map((w) => `(subpath ${sb(w)})`).join(' ')})`);
  // Every .git under the root, present now or created later, and the hidden paths.
  lines.push(`(deny file-write* (regex #"^${escapeRegex(policy.root)}/(.*/)?\\.git(/|$)"))`);
  for (const h of policy.hidden) lines.push(`(deny file-write* (${h.dir ? 'subpath' : 'literal'} ${sb(h.path)}))`);
  if (policy.network.kind === 'all') lines.push('(allow network*)');
  else if (policy.network.kind === 'allow' && o.proxyPort) lines.push(`(allow network-outbound (remote ip "localhost:${o.proxyPort}"))`);
  return lines.join('\n') + '\n';
}

/** Environment variables that send HTTP clients through the sandbox's proxy (NO_PROXY cleared: loopback goes through it too). */
export function proxyEnv(url: string): Record<string, string> {
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    all_proxy: url,
    NO_PROXY: '',
    no_proxy: '',
    npm_config_proxy: url,
    npm_config_https_proxy: url,
    NODE_USE_ENV_PROXY: '1',
  };
}

/**
 * What a failed sandboxed command most likely ran into, in words the model can act on; null when its
 * output shows no sign of the sandbox.
 */
export function explainBlocked(output: string, policy: Pick<SandboxPolicy, 'mode' | 'network'>): string | null {
  const reasons: string[] = [];
  if (/read-only file system|EROFS/i.test(output)) {
    reasons.push(
      policy.mode === 'read-only'
        ? 'the sandbox is read-only: no file may be written'
        : 'writes outside the workspace, into any .git folder and into the plugin\'s data folder are not allowed (the command has a private, empty /tmp)',
    );
  }
  if (/Device or resource busy|EBUSY/.test(output)) reasons.push('protected paths (.git folders, hidden secrets) cannot be moved or removed');
  if (/blocked by the caboose sandbox/i.test(output)) reasons.push('the host is not in sandbox.network.allow');
  else if (
    policy.network.kind !== 'all' &&
    /Network is unreachable|ENETUNREACH|Could not resolve host|Temporary failure in name resolution|EAI_AGAIN|ENOTFOUND|getaddrinfo|Connection refused|ECONNREFUSED|Couldn't connect to server|Failed to connect/i.test(output)
  ) {
    reasons.push(policy.network.kind === 'none' ? 'the network is off' : 'only the allowed hosts are reachable, through the proxy in HTTP_PROXY/HTTPS_PROXY');
  }
  if (/Permission denied|EACCES|EPERM|Operation not permitted/i.test(output)) reasons.push('secrets (~/.ssh, ~/.aws, …), other processes and privileged operations are out of reach');
  if (reasons.length === 0) return null;
  return `blocked by the sandbox: ${reasons.join('; ')}. If the command really needs this, call bash again with escalate: true (the user is asked; it then runs OUTSIDE the sandbox).`;
}
