/**
 * The sandbox of one workspace: whether one is available here, the policy, and the command line that runs
 * a program inside it (bwrap on Linux, sandbox-exec on macOS). See policy.ts for what is allowed.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  DEFAULT_DENY_READ,
  SANDBOX_PROXY_PORT,
  SANDBOX_PROXY_SOCKET,
  bwrapArgs,
  tmpFoldersNamed,
  expandHome,
  networkPolicy,
  proxyEnv,
  seatbeltProfile,
  type NetworkPolicy,
  type SandboxConfig,
  type SandboxMode,
  type SandboxPolicy,
} from './policy';
import type { FilteringProxy } from './proxy';

/** The proxy module (http, net) loads only for a network allow-list. */
// node:child_process loaded when a process is started, not with the module (a cold start's first request
// reads the remembered trial only: issue 24).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const childProcess = (): typeof import('node:child_process') => require('node:child_process') as typeof import('node:child_process');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const proxyModule = (): typeof import('./proxy') => require('./proxy') as typeof import('./proxy');

export type SandboxSupport =
  | { available: true; kind: 'bwrap' | 'seatbelt'; path: string }
  | { available: false; reason: string; fix: string };

/** How a command would run: inside the sandbox, or outside it (asked for, sandbox off, or none available). */
export type Confinement = 'sandboxed' | 'escalated' | 'unsandboxed' | 'unavailable';

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(path.delimiter)) {
    const p = path.join(dir || '.', name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

const BWRAP_FIX =
  'install bubblewrap (Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap); ' +
  'if it is installed, unprivileged user namespaces may be off (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0)';

let cached: SandboxSupport | null = null;
let cachedFor = '';

/**
 * Whether commands can be sandboxed here. On Linux, bwrap runs a trial (`true` under the same namespaces
 * and capability drop as a real command), once per host. `CABOOSE_BWRAP` names another bwrap binary
 * (`none`: behave as if there were none, for tests).
 */
export function detectSandbox(): SandboxSupport {
  const override = process.env.CABOOSE_BWRAP ?? '';
  if (cached && cachedFor === override) return cached;
  cachedFor = override;
  cached = probe(override);
  return cached;
}

let probing: { override: string; done: Promise<SandboxSupport> } | null = null;

/**
 * How many trial bwrap runs this process started, by kind: `sync` blocks the host (detectSandbox, a
 * `support` asked before the sandbox was made ready), `async` runs as a child process (detectSandboxAsync).
 * For tests: a host's commands must never need a synchronous trial.
 */
export const sandboxTrials = { sync: 0, async: 0 };

/**
 * detectSandbox() without blocking the host: the trial bwrap run (7–20 ms of fork, exec and namespace
 * set-up) runs as a child process while the host goes on (the first request's tool definitions wait for
 * it, not the loading before them). Same trial, same result, same cache as detectSandbox().
 */
export function detectSandboxAsync(): Promise<SandboxSupport> {
  const override = process.env.CABOOSE_BWRAP ?? '';
  if (cached && cachedFor === override) return Promise.resolve(cached);
  if (probing && probing.override === override) return probing.done;
  const done = probeAsync(override).then((support) => {
    // A synchronous detection that ran meanwhile (or another override) keeps its own answer.
    if (probing?.done === done) probing = null;
    if (!(cached && cachedFor === override) && (process.env.CABOOSE_BWRAP ?? '') === override) {
      cachedFor = override;
      cached = support;
    }
    return support;
  });
  probing = { override, done };
  return done;
}

const TRIAL_ARGS = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', 'true'];

function probeAsync(override: string): Promise<SandboxSupport> {
  if (process.platform !== 'linux') return Promise.resolve(probe(override));
  const bwrap = override === 'none' ? null : override !== '' ? override : onPath('bwrap');
  if (!bwrap) return Promise.resolve(probe(override));
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const finish = (s: SandboxSupport): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(s);
    };
    const failed = (why: string): SandboxSupport => ({ available: false, reason: `bwrap (${bwrap}) cannot create a sandbox: ${why}`, fix: BWRAP_FIX });
    sandboxTrials.async++;
    const child = childProcess().spawn(bwrap, TRIAL_ARGS, { stdio: ['ignore', 'ignore', 'pipe'] });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(failed('the trial run did not finish within 10 s'));
    }, 10_000);
    timer.unref();
    child.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 4096) stderr += d.toString('utf8');
    });
    child.once('error', (e) => finish(failed(e.message)));
    child.once('close', (code, signal) => finish(code === 0 ? { available: true, kind: 'bwrap', path: bwrap } : failed(stderr.trim() || (signal ? `killed by ${signal}` : `exit ${code}`))));
  });
}

function probe(override: string): SandboxSupport {
  if (process.platform === 'darwin') {
    const p = '/usr/bin/sandbox-exec';
    return fs.existsSync(p) ? { available: true, kind: 'seatbelt', path: p } : { available: false, reason: `${p} not found`, fix: 'sandbox-exec ships with macOS; check /usr/bin' };
  }
  if (process.platform !== 'linux') {
    return { available: false, reason: `no sandbox for ${process.platform}`, fix: 'commands run unsandboxed here: every command asks (or set sandbox.mode = "off" to run them freely in chug mode)' };
  }
  const bwrap = override === 'none' ? null : override !== '' ? override : onPath('bwrap');
  if (!bwrap) return { available: false, reason: 'bubblewrap (bwrap) not found on PATH', fix: BWRAP_FIX };
  sandboxTrials.sync++;
  const r = childProcess().spawnSync(bwrap, TRIAL_ARGS, {
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 10_000,
  });
  if (r.error || r.status !== 0) {
    const why = r.error ? r.error.message : (r.stderr?.toString('utf8').trim() || `exit ${r.status}`);
    return { available: false, reason: `bwrap (${bwrap}) cannot create a sandbox: ${why}`, fix: BWRAP_FIX };
  }
  return { available: true, kind: 'bwrap', path: bwrap };
}

// ---------------------------------------------------------------------------------------------------------
// The trial's answer remembered between hosts (issue 24): the first request describes the sandbox from it
// instead of waiting for a trial run; the trial still runs in the background, and only its own answer
// decides how a command runs.

/** The file in the data folder that holds the last trial's answer and what it depended on. */
export const TRIAL_FILE = 'sandbox-trial.json';
const TRIAL_FILE_MAX = 16 * 1024;
const TRIAL_FORMAT = 1;

/**
 * A small file's text, or null (missing, not a regular file, over `max` bytes, refused by `accept`). /proc
 * files say size 0: read to EOF.
 */
function readSmall(p: string, max: number, accept: (st: fs.Stats) => boolean = () => true): string | null {
  let fd: number | null = null;
  try {
    fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > max || !accept(st)) return null;
    const buf = Buffer.alloc(max + 1);
    let off = 0;
    while (off < buf.length) {
      const n = fs.readSync(fd, buf, off, buf.length - off, null);
      if (n <= 0) break;
      off += n;
    }
    return off > max ? null : buf.subarray(0, off).toString('utf8');
  } catch {
    return null;
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}

/** A kernel setting that can allow or forbid the namespaces bwrap needs (null where the kernel has none). */
const TRIAL_SYSCTLS = [
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
  '/proc/sys/kernel/unprivileged_userns_apparmor_policy',
  '/proc/sys/user/max_pid_namespaces',
  '/proc/sys/user/max_net_namespaces',
  '/proc/sys/user/max_mnt_namespaces',
];

/**
 * What decides the trial's answer on this machine, as one string: the bwrap binary (path, device, inode,
 * size, mode, owner, mtime, ctime), the kernel (release and version), the user (uid, gid, the user namespace's
 * uid map) and the kernel settings for unprivileged user namespaces. Null when no trial would run (not
 * Linux, bwrap missing, CABOOSE_BWRAP=none).
 */
export function trialKey(override = process.env.CABOOSE_BWRAP ?? ''): { key: string; bwrap: string } | null {
  if (process.platform !== 'linux') return null;
  const bwrap = override === 'none' ? null : override !== '' ? override : onPath('bwrap');
  if (!bwrap) return null;
  let st: fs.Stats;
  let real: string;
  try {
    real = fs.realpathSync(bwrap);
    st = fs.statSync(real);
  } catch {
    return null;
  }
  const sysctls = TRIAL_SYSCTLS.map((p) => [p, readSmall(p, 256)?.trim() ?? null]);
  const key = JSON.stringify({
    format: TRIAL_FORMAT,
    bwrap,
    real,
    file: [st.dev, st.ino, st.size, st.mode, st.uid, st.gid, st.mtimeMs, st.ctimeMs],
    kernel: [os.release(), os.version()],
    user: [process.getuid?.() ?? null, process.getgid?.() ?? null, readSmall('/proc/self/uid_map', 4096)],
    sysctls,
    args: TRIAL_ARGS,
  });
  return { key, bwrap };
}

/**
 * The answer the last trial gave, if everything it depended on (trialKey) is unchanged; null otherwise and
 * for a missing, unreadable, oversized or malformed file, one owned by another user or writable by others. Only what the file says about *whether* the trial
 * passed is taken from it: the bwrap path is always the one found now, the fix text always ours.
 */
export function rememberedTrial(dataDir: string, current = trialKey()): SandboxSupport | null {
  if (!current) return null;
  // This user's own answer only: a file another user owns, or one others could have written, is ignored.
  const uid = process.getuid?.();
  const text = readSmall(path.join(dataDir, TRIAL_FILE), TRIAL_FILE_MAX, (st) => (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0);
  if (text === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (o.key !== current.key || typeof o.available !== 'boolean') return null;
  if (o.available) return { available: true, kind: 'bwrap', path: current.bwrap };
  if (typeof o.reason !== 'string' || o.reason.length === 0 || o.reason.length > 4096) return null;
  return { available: false, reason: o.reason, fix: BWRAP_FIX };
}

/** Whether a host starting here must run the trial to know (no remembered answer for this machine). */
export function trialNeeded(dataDir: string): boolean {
  return rememberedTrial(dataDir) === null;
}

/** Remembers a trial's answer (atomically, 0600; a cache: a failure to write only costs the next start a wait). */
export async function rememberTrial(dataDir: string, current: { key: string }, s: SandboxSupport): Promise<void> {
  if (s.available && s.kind !== 'bwrap') return;
  const body = JSON.stringify(s.available ? { key: current.key, available: true } : { key: current.key, available: false, reason: s.reason.slice(0, 4096) });
  const file = path.join(dataDir, TRIAL_FILE);
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    await fs.promises.mkdir(dataDir, { recursive: true, mode: 0o700 });
    await fs.promises.writeFile(tmp, body, { mode: 0o600, flag: 'wx' });
    await fs.promises.rename(tmp, file);
  } catch {
    await fs.promises.rm(tmp, { force: true }).catch(() => {});
  }
}

/** For tests: forget the probe's result. */
export function resetSandboxDetection(): void {
  cached = null;
  probing = null;
}

export interface SandboxOptions {
  /** The workspace root. */
  root: string;
  /** The plugin's data folder (hidden and read-only inside). */
  dataDir?: string;
  config?: SandboxConfig | null;
  /** The home folder whose secrets are hidden (default os.homedir()). */
  home?: string;
  /** Overrides detection (tests). */
  support?: SandboxSupport;
}

/** A program to run, after wrapping. */
export interface Wrapped {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Removes what the wrap created (a private temp folder on macOS). */
  dispose(): void;
}

const MAX_SCAN_ENTRIES = 500_000;

export class Sandbox {
  readonly mode: SandboxMode;
  readonly network: NetworkPolicy;
  private supportValue: SandboxSupport | null;
  /** The answer an earlier host's trial gave (same bwrap, kernel, user and settings): for describing only. */
  private remembered: SandboxSupport | null = null;
  private pendingCheck: (() => Promise<SandboxSupport>) | null = null;
  private readonly root: string;
  private readonly dataDir?: string;
  private readonly home: string;
  private readonly config: SandboxConfig;
  private gitDirs: string[] | null = null;
  private scanning: Promise<string[]> | null = null;
  private proxy: Promise<FilteringProxy> | null = null;

  constructor(o: SandboxOptions) {
    this.config = o.config ?? {};
    this.mode = this.config.mode ?? 'workspace-write';
    // Detected on first use (a trial bwrap run): not on the host's start-up path.
    this.supportValue = o.support ?? (this.mode === 'off' ? { available: false, reason: 'sandbox.mode is "off"', fix: '' } : null);
    this.root = safeRealpath(o.root);
    this.dataDir = o.dataDir ? path.resolve(o.dataDir) : undefined;
    this.home = o.home ?? os.homedir();
    this.network = networkPolicy(this.config.network?.allow);
  }

  /**
   * Detects the sandbox in the background (see detectSandboxAsync); `support` is then known without the
   * synchronous trial. Never rejects.
   */
  async prepare(): Promise<void> {
    if (this.supportValue) return;
    const current = this.dataDir ? trialKey() : null;
    const remembered = this.dataDir && current ? rememberedTrial(this.dataDir, current) : null;
    const check = (): Promise<SandboxSupport> =>
      detectSandboxAsync().then((s) => {
        this.supportValue ??= s;
        // Remembered for the next host when it says something else than the file (or the file said nothing).
        if (this.dataDir && current && !sameAnswer(remembered, s)) void rememberTrial(this.dataDir, current, s);
        return s;
      });
    if (remembered) {
      // The model is told about the sandbox from the remembered answer; the trial that confirms it runs at
      // recheck() (after the first request left), and commands use the trial's answer only.
      this.remembered = remembered;
      this.pendingCheck = check;
      return;
    }
    await check();
  }

  private readying: Promise<SandboxSupport> | null = null;

  /**
   * The trial's own answer, found without blocking the host (prepare, then the confirming trial a
   * remembered answer waits for, both as child processes; shared with a trial already running). After it
   * settles, `support`, `active`, `confinement` and `wrap` never run the synchronous trial. For the
   * commands that run before any model request (ACP terminals, MCP servers with `sandbox = true`).
   */
  ready(): Promise<SandboxSupport> {
    this.readying ??= (async () => {
      await this.prepare();
      this.recheck();
      this.supportValue ??= await detectSandboxAsync();
      return this.supportValue;
    })();
    return this.readying;
  }

  /**
   * Starts the trial that confirms or corrects a remembered answer (see prepare; nothing to do otherwise).
   * Until its answer is in, a command that asks how it would run runs the trial itself (`support`).
   */
  recheck(): void {
    const check = this.pendingCheck;
    this.pendingCheck = null;
    if (check) void check();
  }

  /**
   * What the model is told about the sandbox (bash's description): the trial's answer, or until it is in,
   * the one remembered from an earlier host. Never used to decide how a command runs (`support`, `active`,
   * `confinement`, `wrap` use the trial's answer only).
   */
  get describedActive(): boolean {
    if (this.mode === 'off') return false;
    return (this.supportValue ?? this.remembered ?? this.support).available;
  }

  /** Whether (and how) a sandbox can run here. */
  get support(): SandboxSupport {
    if (!this.supportValue) this.supportValue = detectSandbox();
    return this.supportValue;
  }

  /** Commands run inside a sandbox. */
  get active(): boolean {
    return this.mode !== 'off' && this.support.available;
  }

  /** A sandbox was wanted (mode not off) but none can run here: every command asks. */
  get unavailable(): boolean {
    return this.mode !== 'off' && !this.support.available;
  }

  confinement(escalate: boolean | undefined): Confinement {
    if (this.mode === 'off') return 'unsandboxed';
    if (!this.support.available) return 'unavailable';
    return escalate ? 'escalated' : 'sandboxed';
  }

  /** One line for the model, the approval float and the chat: what the sandbox allows. */
  describe(): string {
    if (this.mode === 'off') return 'sandbox off (sandbox.mode = "off"): commands run with your full rights';
    if (!this.support.available) return `no sandbox available (${this.support.reason}): commands run with your full rights`;
    const net = this.network.kind === 'none' ? 'no network' : this.network.kind === 'all' ? 'network on' : `network only to ${this.network.hosts.join(', ')}`;
    const fsPart = this.mode === 'read-only' ? 'read-only filesystem' : 'writes only in the workspace (not .git)';
    return `sandbox ${this.mode}: ${fsPart}, private /tmp, secrets hidden, ${net}`;
  }

  /** The policy for the next command (scans for `.git` folders once, then keeps the list fresh after each command). */
  async policy(): Promise<SandboxPolicy> {
    // A scan still running (started when the last command ended) is waited for: a .git that command made
    // is protected from the next command on.
    const gitDirs = this.scanning ? await this.scanning : (this.gitDirs ?? (await this.scanGit()));
    const exists = (p: string): fs.Stats | null => {
      try {
        return fs.lstatSync(p);
      } catch {
        return null;
      }
    };
    const hidden: { path: string; dir: boolean }[] = [];
    const seen = new Set<string>();
    const hide = (raw: string): void => {
      const p = safeRealpath(raw);
      const st = exists(p);
      if (!st || seen.has(p) || p === '/' || (st.isDirectory() && (this.root === p || this.root.startsWith(p + path.sep)))) return;
      seen.add(p);
      hidden.push({ path: p, dir: st.isDirectory() });
    };
    for (const d of DEFAULT_DENY_READ) hide(path.join(this.home, d));
    for (const d of this.config.deny_read ?? []) hide(expandHome(d, this.home));
    if (this.dataDir) hide(this.dataDir);
    return {
      mode: this.mode === 'read-only' ? 'read-only' : 'workspace-write',
      root: this.root,
      writable: (this.config.writable ?? []).map((w) => safeRealpath(expandHome(w, this.home))).filter((w) => exists(w)?.isDirectory()),
      readOnly: gitDirs.filter((g) => exists(g) !== null),
      hidden,
      network: this.network,
    };
  }

  /**
   * The command line and environment that run `command args` in `cwd` inside the sandbox. `env` is the
   * environment the program would have had; the sandbox adds TMPDIR and, with an allow-list, the proxy.
   */
  async wrap(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<Wrapped> {
    if (!this.support.available) throw new Error('no sandbox available');
    const policy = await this.policy();
    const proxy = policy.network.kind === 'allow' ? await this.startProxy() : null;
    if (this.support.kind === 'bwrap') {
      const inner = proxy ? [process.execPath, '-e', proxyModule().BRIDGE_SCRIPT, SANDBOX_PROXY_SOCKET, String(SANDBOX_PROXY_PORT), command, ...args] : [command, ...args];
      const visibleInTmp = tmpFoldersNamed(inner).filter(isRealFolder);
      const pre = bwrapArgs(policy, { cwd, visibleInTmp, ...(proxy ? { proxySocket: proxy.address } : {}) });
      return {
        command: this.support.path,
        args: [...pre, '--', ...inner],
        env: { ...env, TMPDIR: '/tmp', ...(proxy ? proxyEnv(`http://127.0.0.1:${SANDBOX_PROXY_PORT}`) : {}) },
        dispose: () => {},
      };
    }
    const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-cmd-')));
    const profile = seatbeltProfile(policy, { tmp, ...(proxy?.port ? { proxyPort: proxy.port } : {}) });
    return {
      command: this.support.path,
      args: ['-p', profile, command, ...args],
      env: { ...env, TMPDIR: tmp, ...(proxy?.port ? proxyEnv(`http://127.0.0.1:${proxy.port}`) : {}) },
      dispose: () => fs.rmSync(tmp, { recursive: true, force: true }),
    };
  }

  /** After a command: look again for `.git` folders (in the background; the next command waits for the scan if it still runs). */
  rescan(): void {
    void this.scanGit();
  }

  async dispose(): Promise<void> {
    const p = this.proxy;
    this.proxy = null;
    if (p) await (await p).close().catch(() => {});
  }

  private startProxy(): Promise<FilteringProxy> {
    if (!this.proxy) {
      const hosts = this.network.kind === 'allow' ? this.network.hosts : [];
      this.proxy = proxyModule().startFilteringProxy(hosts, { tcp: this.support.available && this.support.kind === 'seatbelt' });
      this.proxy.catch(() => (this.proxy = null));
    }
    return this.proxy;
  }

  private scanGit(): Promise<string[]> {
    if (this.scanning) return this.scanning;
    this.scanning = findGitEntries(this.root).then(
      (found) => {
        this.gitDirs = found;
        this.scanning = null;
        return found;
      },
      () => {
        this.scanning = null;
        return this.gitDirs ?? [];
      },
    );
    return this.scanning;
  }
}

function sameAnswer(a: SandboxSupport | null, b: SandboxSupport): boolean {
  if (!a || a.available !== b.available) return false;
  return a.available || b.available || a.reason === b.reason;
}

function safeRealpath(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Every `.git` (folder or file) under `root`, at any depth; symlinks are not followed. */
export async function findGitEntries(root: string): Promise<string[]> {
  const out: string[] = [];
  const stack = [root];
  let entries = 0;
  while (stack.length > 0 && entries < MAX_SCAN_ENTRIES) {
    const dir = stack.pop() as string;
    let list: fs.Dirent[];
    try {
      list = await fs.promises.readdir(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    entries += list.length;
    for (const e of list) {
      if (e.name === '.git') {
        if (e.isDirectory() || e.isFile()) out.push(path.join(dir, e.name));
        else if (e.isSymbolicLink()) {
          // A .git that links elsewhere in the workspace protects its target (outside, all is read-only).
          const target = await fs.promises.realpath(path.join(dir, e.name)).catch(() => null);
          if (target && target.startsWith(root + path.sep)) out.push(target);
        }
        continue;
      }
      if (e.isDirectory()) stack.push(path.join(dir, e.name));
    }
  }
  return out.sort();
}

/** A folder that is not a symlink (a link in /tmp could point anywhere, e.g. at a hidden secret). */
function isRealFolder(p: string): boolean {
  try {
    return fs.lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}
