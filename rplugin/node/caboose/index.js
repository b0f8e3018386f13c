// Host entry. Run directly (jobstart with rpc = true) it serves Neovim over stdio; required by
// Neovim's classic node remote-plugin host it exports the plugin function instead.
//
// It loads the one-file host (dist/host.bundle.js, built by `npm run build`) when it is there, else the
// compiled modules (CABOOSE_HOST_UNBUNDLED=1 forces those). Compiling the bundle is most of a cold
// start, so its compiled code is cached: by Node itself where it can (22+, module.enableCompileCache),
// else in CABOOSE_CACHE_DIR (Neovim's stdpath('cache')/caboose, set by the plugin), written once the
// host has served its first requests and rewritten whenever V8 rejects it (a new bundle or Node).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const nodeModule = require('node:module');

const dist = path.join(__dirname, '..', '..', '..', 'dist');
const bundle = path.join(dist, 'host.bundle.js');

function loadWithCodeCache(file, cacheDir) {
  const vm = require('node:vm');
  const source = fs.readFileSync(file, 'utf8');
  const st = fs.statSync(file);
  // One cache per bundle (the host's and the first-request one): `<bundle name>-<node>-<size>-<mtime>`.
  const prefix = `${path.basename(file, '.js')}-`;
  const cacheFile = path.join(cacheDir, `${prefix}${process.version}-${st.size}-${Math.floor(st.mtimeMs)}.v8cache`);
  let cachedData;
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  const script = new vm.Script(nodeModule.wrap(source), { filename: file, cachedData });
  const mod = { exports: {}, filename: file, id: file, loaded: false };
  script.runInThisContext().call(mod.exports, mod.exports, nodeModule.createRequire(file), mod, file, path.dirname(file));
  // Written a few seconds after a start that found no usable cache, and at exit whenever this host
  // compiled more than the cache holds (the first message loads the agent: its code is then cached too).
  let written = false;
  const write = (data) => {
    written = true;
    try {
      fs.mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, data, { mode: 0o600 });
      fs.renameSync(tmp, cacheFile);
      for (const name of fs.readdirSync(cacheDir)) {
        const stale = name.startsWith(prefix) || /^host-v\d/.test(name); // host-v…: the one-bundle cache's old name
        if (stale && name.endsWith('.v8cache') && path.join(cacheDir, name) !== cacheFile) fs.rmSync(path.join(cacheDir, name), { force: true });
      }
    } catch {
      // no cache: only slower
    }
  };
  const usable = cachedData !== undefined && !script.cachedDataRejected;
  if (!usable) setTimeout(() => write(script.createCachedData()), 5000).unref();
  process.once('exit', () => {
    if (written && usable) return;
    try {
      const data = script.createCachedData();
      if (!usable || data.length > cachedData.length * 1.1) write(data);
    } catch {
      // no cache: only slower
    }
  });
  return mod.exports;
}

function loadBundle(file) {
  if (typeof nodeModule.enableCompileCache === 'function') {
    try {
      nodeModule.enableCompileCache();
    } catch {
      // no cache: only slower
    }
    return require(file);
  }
  const cacheDir = process.env.CABOOSE_CACHE_DIR;
  if (cacheDir && path.isAbsolute(cacheDir)) {
    try {
      return loadWithCodeCache(file, cacheDir);
    } catch {
      // fall through to a plain require
    }
  }
  return require(file);
}

function loadHost() {
  if (process.env.CABOOSE_HOST_UNBUNDLED || !fs.existsSync(bundle)) return require(path.join(dist, 'host', 'main.js'));
  return loadBundle(bundle);
}

// Over stdio, a cold start loads the small first-request bundle first (src/host/first-main.ts): it answers
// host.init and sends the first message's model request, then loads the host (CABOOSE_FIRST_REQUEST=0: the
// host at once, as before).
const firstBundle = path.join(dist, 'host-first.bundle.js');
// A config the first-request path never applies to (MCP servers, api_key_cmd) leaves a marker in the cache
// folder: the host loads at once (src/host/first-eligibility.ts).
const cacheDir = process.env.CABOOSE_CACHE_DIR;
const firstOff = cacheDir && path.isAbsolute(cacheDir) && fs.existsSync(path.join(cacheDir, 'first-request.off'));
if (require.main === module && !process.env.CABOOSE_HOST_UNBUNDLED && process.env.CABOOSE_FIRST_REQUEST !== '0' && !firstOff && fs.existsSync(firstBundle) && fs.existsSync(bundle)) {
  loadBundle(firstBundle).runFirst(() => loadBundle(bundle));
} else {
  const host = loadHost();
  if (require.main === module) {
    host.runStdio();
  } else {
    module.exports = host.remotePlugin;
  }
}
