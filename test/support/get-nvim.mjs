#!/usr/bin/env node
// Provides Neovim 0.12 and 0.10 for the test suite, without touching the system.
//
// Debian bookworm ships only Neovim 0.7, so the wanted versions are taken from newer Debian suites
// (forky: 0.12, trixie: 0.10) through apt with a private state (own sources.list, lists, cache and an
// empty dpkg status), unpacked with `dpkg-deb -x` together with that suite's glibc and the libraries
// neovim needs. The unpacked nvim is then pointed at its own dynamic loader and libraries with that
// suite's `patchelf` (--set-interpreter, --force-rpath --set-rpath), so it runs as an ordinary
// program: no LD_LIBRARY_PATH reaches child processes, and v:progpath is the real binary (Neovim's
// TUI starts its server as `v:progpath --embed`, which would break if nvim ran under ld.so directly).
//
// Layout (all under <repo>/.cache/nvim/, git-ignored):
//   <minor>/root/           unpacked packages (usr/bin/nvim, usr/share/nvim/runtime, usr/lib/...)
//   <minor>/bin/nvim        sh wrapper: sets VIMRUNTIME and VIM, execs the real binary with "$@"
//   <minor>/.complete.json  stamp written last: { suite, package, version, root }
//   manifest.json           { "version": 1, "nvim": [{ "version", "path", "source" }, ...] }, newest first
//
// A usable `nvim` on PATH (>= 0.10) stands in for the target of the same minor version.
// Usage: node test/support/get-nvim.mjs [--force] [--only <minor>] [--print-path] [--plan]
//   --force         drops the cache and fetches again
//   --only 0.12     provides that version only (scripts/caboose-nvim runs one Neovim: it fetches one);
//                   the manifest keeps the other versions already there
//   --print-path    prints the path of the newest provided Neovim on stdout, and nothing on stderr unless
//                   something had to be fetched (a warm launch is silent)
//   --plan          prints the Debian suites it would fetch, one a line, and fetches nothing
// CABOOSE_NVIM_CACHE overrides the cache folder (default <repo>/.cache/nvim).
// Only Debian's package mirror is contacted (the one this machine's apt sources use).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** A path with its symlinks resolved as far as it exists (a .cache linked to another checkout's stays that one's). */
function realish(p) {
  const rest = [];
  let cur = p;
  for (;;) {
    try {
      return path.join(fs.realpathSync(cur), ...rest);
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return p;
      rest.unshift(path.basename(cur));
      cur = parent;
    }
  }
}
// Resolved, so stamps, wrappers and the manifest name the real folder: a cache reached through a symlink is
// found as it is, never fetched again over the other checkout's copy.
const CACHE = realish(process.env.CABOOSE_NVIM_CACHE ? path.resolve(process.env.CABOOSE_NVIM_CACHE) : path.join(REPO, '.cache', 'nvim'));
const MANIFEST = path.join(CACHE, 'manifest.json');
const STAMP = '.complete.json';
const MIN_MINOR = 10;
const ALL_TARGETS = [
  { minor: '0.12', suite: 'forky' },
  { minor: '0.10', suite: 'trixie' },
];
const DEFAULT_MIRROR = 'http://deb.debian.org/debian';
const KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg';
const ARCHES = {
  amd64: { triplet: 'x86_64-linux-gnu', loader: 'ld-linux-x86-64.so.2' },
  arm64: { triplet: 'aarch64-linux-gnu', loader: 'ld-linux-aarch64.so.1' },
};

const argv = process.argv.slice(2);
const ONLY = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : null;
const PRINT_PATH = argv.includes('--print-path');
const PLAN = argv.includes('--plan');
const TARGETS = ONLY ? ALL_TARGETS.filter((t) => t.minor === ONLY) : ALL_TARGETS;

/** With --print-path, nothing is said unless something is fetched (then everything is). */
let quiet = PRINT_PATH;
function log(msg) {
  if (!quiet) process.stderr.write(`get-nvim: ${msg}\n`);
}

function shellQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Runs a command, resolves with stdout; rejects with the command and the tail of its stderr. */
function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e) => reject(new Error(`${cmd}: ${e.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve(out);
      else {
        const tail = err.trim().split('\n').slice(-8).join('\n');
        reject(new Error(`${cmd} ${args.slice(-3).join(' ')} failed (${signal ?? code}):\n${tail}`));
      }
    });
  });
}

/** "NVIM v0.12.4" / "NVIM v0.12.0-dev-123+g..." -> "0.12.4" / "0.12.0" */
function parseNvimVersion(text) {
  const m = /NVIM v(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}

function minorOf(version) {
  return version.split('.').slice(0, 2).join('.');
}

function compareVersions(a, b) {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i] - pb[i];
  return 0;
}

function isSupported(version) {
  const [major, minor] = version.split('.').map(Number);
  return major > 0 || minor >= MIN_MINOR;
}

/** The first `nvim` on PATH that is not one of our own wrappers, if it is >= 0.10. */
function probePathNvim() {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, 'nvim');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
    } catch {
      continue;
    }
    if (path.resolve(candidate).startsWith(CACHE + path.sep)) continue;
    const res = spawnSync(candidate, ['--version'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] });
    const version = res.status === 0 ? parseNvimVersion(res.stdout) : null;
    if (!version) continue;
    if (!isSupported(version)) {
      log(`ignoring ${candidate} (${version} < 0.${MIN_MINOR})`);
      return null;
    }
    return { version, path: path.resolve(candidate), source: 'PATH' };
  }
  return null;
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

/** A finished install of `suite` in the cache (any minor dir), or null. */
function findCached(suite) {
  let entries = [];
  try {
    entries = fs.readdirSync(CACHE, { withFileTypes: true });
  } catch {
    return null;
  }
  for (const e of entries) {
    if (!e.isDirectory() || e.name.startsWith('.')) continue;
    const dir = path.join(CACHE, e.name);
    const stamp = readJson(path.join(dir, STAMP));
    if (!stamp || stamp.suite !== suite || stamp.root !== path.join(dir, 'root')) continue;
    const wrapper = path.join(dir, 'bin', 'nvim');
    if (!fs.existsSync(wrapper) || !fs.existsSync(path.join(dir, 'root', 'usr', 'bin', 'nvim'))) continue;
    return { version: stamp.version, path: wrapper, source: `debian ${suite} neovim ${stamp.package}` };
  }
  return null;
}

/** The Debian mirror URI this machine's apt uses for its own release (falls back to deb.debian.org). */
function detectMirror() {
  if (process.env.CABOOSE_DEBIAN_MIRROR) return process.env.CABOOSE_DEBIAN_MIRROR;
  const files = ['/etc/apt/sources.list'];
  try {
    for (const f of fs.readdirSync('/etc/apt/sources.list.d')) files.push(path.join('/etc/apt/sources.list.d', f));
  } catch {
    /* no sources.list.d */
  }
  const isDebianMain = (uri, suites) =>
    /\/debian\/?$/.test(uri) && !/security/.test(uri) && suites.some((s) => !/security/.test(s));
  for (const file of files) {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1].trim().split(/\s+/) ?? [];
        if (!field('Types').includes('deb')) continue;
        const suites = field('Suites');
        const uri = field('URIs').find((u) => isDebianMain(u, suites));
        if (uri) return uri.replace(/\/$/, '');
      }
    } else {
      for (const line of text.split('\n')) {
        const m = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line);
        if (m && isDebianMain(m[1], [m[2]])) return m[1].replace(/\/$/, '');
      }
    }
  }
  return DEFAULT_MIRROR;
}

function dpkgArch() {
  const res = spawnSync('dpkg', ['--print-architecture'], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error('dpkg not found: this script needs a Debian-based machine (apt-get, dpkg-deb)');
  return res.stdout.trim();
}

/** apt options that keep every piece of state inside `aptDir`. */
function aptOptions(aptDir, arch) {
  const o = {
    'Dir::State': path.join(aptDir, 'state'),
    'Dir::State::Lists': path.join(aptDir, 'state', 'lists'),
    'Dir::State::status': path.join(aptDir, 'status'),
    'Dir::Cache': path.join(aptDir, 'cache'),
    'Dir::Etc::SourceList': path.join(aptDir, 'sources.list'),
    'Dir::Etc::SourceParts': path.join(aptDir, 'sources.list.d'),
    'Dir::Etc::Preferences': path.join(aptDir, 'preferences'),
    'Dir::Etc::PreferencesParts': path.join(aptDir, 'preferences.d'),
    'Dir::Log': path.join(aptDir, 'log'),
    'APT::Architecture': arch,
    'APT::Architectures': arch,
    'Acquire::Languages': 'none',
    'Acquire::Retries': '3',
    'APT::Sandbox::User': 'root',
  };
  return Object.entries(o).flatMap(([k, v]) => ['-o', `${k}=${v}`]);
}

function writeWrapper(dir, version, suite) {
  const root = path.join(dir, 'root');
  const body = [
    '#!/bin/sh',
    `# Generated by test/support/get-nvim.mjs: Neovim ${version} from Debian ${suite}, with its own glibc`,
    '# (the binary is patched to use the loader and libraries under root/, so nothing leaks to children).',
    `VIMRUNTIME=${shellQuote(path.join(root, 'usr', 'share', 'nvim', 'runtime'))}`,
    `VIM=${shellQuote(path.join(root, 'usr', 'share', 'nvim'))}`,
    'export VIMRUNTIME VIM',
    `exec ${shellQuote(path.join(root, 'usr', 'bin', 'nvim'))} "$@"`,
    '',
  ].join('\n');
  const wrapper = path.join(dir, 'bin', 'nvim');
  fs.mkdirSync(path.dirname(wrapper), { recursive: true });
  fs.writeFileSync(wrapper, body, { mode: 0o755 });
  fs.chmodSync(wrapper, 0o755);
  return wrapper;
}

/** Checks `nvim --version` and a headless Lua call; returns the full version. */
async function verify(wrapper, minor) {
  const env = { ...process.env, NVIM_APPNAME: 'caboose-get-nvim' };
  const version = parseNvimVersion(await run(wrapper, ['--version'], { env, timeout: 30_000 }));
  if (!version || minorOf(version) !== minor) throw new Error(`${wrapper} --version reports ${version}, expected ${minor}.x`);
  const out = await run(wrapper, ['--headless', '-u', 'NONE', '-i', 'NONE', '-n', '+lua io.stdout:write(vim.version().minor)', '+qa!'], {
    env,
    timeout: 30_000,
  });
  if (out.trim() !== minor.split('.')[1]) throw new Error(`${wrapper} --headless lua check printed ${JSON.stringify(out)}`);
  return version;
}

/** Downloads neovim from `suite` and makes it runnable under CACHE/<minor>/. */
async function provide({ suite }, mirror, arch) {
  const archInfo = ARCHES[arch];
  if (!archInfo) throw new Error(`unsupported architecture ${arch}`);
  fs.mkdirSync(CACHE, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(CACHE, `.tmp-${suite}-`));
  try {
    const aptDir = path.join(tmp, 'apt');
    for (const d of ['state/lists/partial', 'cache/archives/partial', 'sources.list.d', 'preferences.d', 'log', 'debs']) {
      fs.mkdirSync(path.join(aptDir, d), { recursive: true });
    }
    fs.writeFileSync(path.join(aptDir, 'status'), '');
    fs.writeFileSync(path.join(aptDir, 'preferences'), '');
    const signedBy = fs.existsSync(KEYRING) ? ` [signed-by=${KEYRING}]` : '';
    fs.writeFileSync(path.join(aptDir, 'sources.list'), `deb${signedBy} ${mirror} ${suite} main\n`);
    const opts = aptOptions(aptDir, arch);

    log(`${suite}: apt-get update (${mirror})`);
    await run('apt-get', [...opts, '--error-on=any', '-q', 'update']);
    const show = await run('apt-cache', [...opts, 'show', '--no-all-versions', 'neovim']);
    const debVersion = /^Version:\s*(\S+)/m.exec(show)?.[1];
    const upstream = /^(?:\d+:)?(\d+\.\d+\.\d+)/.exec(debVersion ?? '')?.[1];
    if (!upstream) throw new Error(`${suite}: no neovim package found`);
    if (!isSupported(upstream)) throw new Error(`${suite}: neovim ${debVersion} is older than 0.${MIN_MINOR}`);
    const minor = minorOf(upstream);

    const deps = await run('apt-cache', [
      ...opts, 'depends', '--recurse', '--no-recommends', '--no-suggests', '--no-conflicts',
      '--no-breaks', '--no-replaces', '--no-enhances', 'neovim', 'patchelf',
    ]);
    const pkgs = [...new Set(deps.split('\n').filter((l) => /^[a-z0-9]/.test(l)).map((l) => l.trim()))].sort();
    log(`${suite}: downloading neovim ${debVersion} + ${pkgs.length - 1} packages`);
    const debsDir = path.join(aptDir, 'debs');
    await run('apt-get', [...opts, '-q', 'download', ...pkgs], { cwd: debsDir });

    const stage = path.join(tmp, 'root');
    for (const deb of fs.readdirSync(debsDir).filter((f) => f.endsWith('.deb'))) {
      await run('dpkg-deb', ['-x', path.join(debsDir, deb), stage]);
    }
    fs.rmSync(aptDir, { recursive: true, force: true });

    // Patch the binary for its final location, then move the staged tree there.
    const finalDir = path.join(CACHE, minor);
    const finalRoot = path.join(finalDir, 'root');
    const libDirs = [path.join('usr', 'lib', archInfo.triplet), path.join('lib', archInfo.triplet)];
    const loaderRel = [...libDirs, 'usr/lib64', 'lib64']
      .map((d) => path.join(d, archInfo.loader))
      .find((p) => fs.existsSync(path.join(stage, p)) && !fs.lstatSync(path.join(stage, p)).isSymbolicLink());
    if (!loaderRel) throw new Error(`${suite}: ${archInfo.loader} not found in the unpacked libc6`);
    const stageLibPath = libDirs.map((d) => path.join(stage, d)).join(':');
    await run(path.join(stage, loaderRel), [
      '--library-path', stageLibPath, path.join(stage, 'usr', 'bin', 'patchelf'),
      '--set-interpreter', path.join(finalRoot, loaderRel),
      '--force-rpath', '--set-rpath', libDirs.map((d) => path.join(finalRoot, d)).join(':'),
      path.join(stage, 'usr', 'bin', 'nvim'),
    ]);

    fs.rmSync(finalDir, { recursive: true, force: true });
    fs.mkdirSync(finalDir, { recursive: true });
    fs.renameSync(stage, finalRoot);
    const wrapper = writeWrapper(finalDir, upstream, suite);
    let version;
    try {
      version = await verify(wrapper, minor);
    } catch (e) {
      fs.rmSync(finalDir, { recursive: true, force: true });
      throw e;
    }
    fs.writeFileSync(path.join(finalDir, STAMP), JSON.stringify({ suite, package: debVersion, version, root: finalRoot }, null, 2) + '\n');
    return { version, path: wrapper, source: `debian ${suite} neovim ${debVersion}` };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function writeManifest(entries) {
  const text = JSON.stringify({ version: 1, nvim: entries }, null, 2) + '\n';
  fs.mkdirSync(CACHE, { recursive: true });
  if (readJson(MANIFEST) && fs.readFileSync(MANIFEST, 'utf8') === text) return;
  const tmp = `${MANIFEST}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, MANIFEST);
}

/** Removes staging dirs left by an interrupted run (older than 10 minutes, so a concurrent run's are kept). */
function removeStaleStaging() {
  let names = [];
  try {
    names = fs.readdirSync(CACHE).filter((n) => n.startsWith('.tmp-'));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = path.join(CACHE, name);
    try {
      if (Date.now() - fs.statSync(dir).mtimeMs > 10 * 60_000) fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      /* raced with its owner: fine */
    }
  }
}

async function main() {
  if (ONLY && TARGETS.length === 0) {
    quiet = false;
    log(`--only ${ONLY}: not one of ${ALL_TARGETS.map((t) => t.minor).join(', ')}`);
    process.exit(2);
  }
  if (argv.includes('--force')) fs.rmSync(CACHE, { recursive: true, force: true });
  const onPath = probePathNvim();
  const found = [];
  const todo = [];
  for (const target of TARGETS) {
    if (onPath && minorOf(onPath.version) === target.minor) found.push(onPath);
    else {
      const cached = findCached(target.suite);
      if (cached) found.push(cached);
      else todo.push(target);
    }
  }

  if (PLAN) {
    for (const t of todo) process.stdout.write(`${t.suite}\n`);
    return;
  }
  const failures = [];
  if (todo.length > 0) {
    quiet = false;
    const started = Date.now();
    removeStaleStaging();
    const mirror = detectMirror();
    const arch = dpkgArch();
    const results = await Promise.allSettled(todo.map((t) => provide(t, mirror, arch)));
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') found.push(r.value);
      else failures.push(`${todo[i].minor} (Debian ${todo[i].suite}): ${r.reason instanceof Error ? r.reason.message : r.reason}`);
    });
    log(`fetched in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }
  for (const f of failures) log(`could not provide Neovim ${f}`);
  if (found.length === 0 && onPath) found.push(onPath);

  const seen = new Set();
  const entries = found
    .filter((e) => !seen.has(e.path) && seen.add(e.path))
    .sort((a, b) => compareVersions(b.version, a.version));
  if (entries.length === 0) {
    quiet = false;
    log(`no Neovim >= 0.${MIN_MINOR} available: install one on PATH or make Debian's package mirror reachable.`);
    process.exit(1);
  }
  // --only: the other versions already provided stay listed (the test suite uses them).
  const kept = ONLY
    ? (readJson(MANIFEST)?.nvim ?? []).filter((e) => e && typeof e.version === 'string' && minorOf(e.version) !== ONLY && fs.existsSync(e.path) && !seen.has(e.path))
    : [];
  writeManifest([...entries, ...kept].sort((a, b) => compareVersions(b.version, a.version)));
  for (const e of entries) log(`nvim ${e.version}  ${e.path}  (${e.source})`);
  if (PRINT_PATH) process.stdout.write(`${entries[0].path}\n`);
  const missing = TARGETS.filter((t) => !entries.some((e) => minorOf(e.version) === t.minor)).map((t) => t.minor);
  if (missing.length > 0) log(`warning: Neovim ${missing.join(', ')} not available; tests run with the versions above`);
}

main().catch((e) => {
  quiet = false;
  log(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
