// Preload for the host in bench/cold-timeline.ts (`node -r`): hrtime marks (CLOCK_MONOTONIC, Neovim's
// uv.hrtime's clock) of the host's cold start, written to $MARKS_DIR/<pid>.json as it exits. Bench only.
'use strict';
const fs = require('fs');
const marks = [];
const mark = (s) => marks.push([s, Number(process.hrtime.bigint())]);
mark('preload (node bootstrap done)');
const vm = require('vm');
const OrigScript = vm.Script;
vm.Script = class extends OrigScript { constructor(...a) { mark('vm.Script compile begin'); super(...a); mark(`vm.Script compiled (cache rejected: ${this.cachedDataRejected})`); } runInThisContext(...a) { const r = super.runInThisContext(...a); return r; } };
const Module = require('module');
const origLoad = Module._load;
Module._load = function (req, ...a) {
  if (req === 'better-sqlite3' || req.endsWith('host.bundle.js')) { mark(`require ${req.split('/').pop()} begin`); const r = origLoad.call(this, req, ...a); mark(`require ${req.split('/').pop()} end`); return r; }
  return origLoad.call(this, req, ...a);
};
const net = require('net');
const origConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...a) { const c = process.cpuUsage(); mark(`socket connect (host CPU so far ${((c.user + c.system) / 1000).toFixed(1)} ms)`); return origConnect.apply(this, a); };
// The first requests themselves (the model's connection is opened ahead at host.init: agent/preconnect.ts),
// wrapped when the host first loads node:http / node:https (not loaded here: that would move their cost).
let nreq = 0;
const wrappedHttp = new Set();
const wrapRequest = (name, m) => { if (wrappedHttp.has(m)) return; wrappedHttp.add(m); const o = m.request; m.request = function (...a) { if (++nreq <= 2) { const c = process.cpuUsage(); mark(`${name}.request #${nreq} (host CPU so far ${((c.user + c.system) / 1000).toFixed(1)} ms)`); } return o.apply(this, a); }; };
const loadBeforeHttp = Module._load;
Module._load = function (req, ...a) {
  const r = loadBeforeHttp.call(this, req, ...a);
  const name = req.replace(/^node:/, '');
  if (name === 'http' || name === 'https') wrapRequest(name, r);
  return r;
};
const cp = require('child_process');
const origSpawn = cp.spawn;
cp.spawn = function (cmd, ...a) { mark(`spawn ${cmd}`); const c = origSpawn.call(this, cmd, ...a); c.once('close', () => mark(`spawn ${cmd} closed`)); return c; };
const origSpawnSync = cp.spawnSync;
cp.spawnSync = function (cmd, ...a) { mark(`spawnSync ${cmd} begin`); const r = origSpawnSync.call(this, cmd, ...a); mark(`spawnSync ${cmd} end`); return r; };
let firstIn = false;
const origPush = require('stream').Readable.prototype.push;
require('stream').Readable.prototype.push = function (chunk, ...a) { if (this === process.stdin && chunk && !firstIn) { firstIn = true; { const c = process.cpuUsage(); mark(`stdin first data ${chunk.length} B (host CPU so far ${((c.user + c.system) / 1000).toFixed(1)} ms)`); } } return origPush.call(this, chunk, ...a); };
const origWrite = process.stdout.write.bind(process.stdout);
let sawDelta = false, nw = 0;
process.stdout.write = function (chunk, ...a) { nw++; if (nw <= 2) mark(`stdout write #${nw}`); if (!sawDelta && Buffer.isBuffer(chunk) && chunk.includes('assistant_delta')) { sawDelta = true; mark('stdout: first assistant_delta frame'); } return origWrite(chunk, ...a); };
const dir = process.env.MARKS_DIR;
if (!dir) throw new Error('host-marks.cjs: MARKS_DIR is not set');
const dump = () => { try { fs.mkdirSync(dir, { recursive: true }); fs.writeFileSync(`${dir}/${process.pid}.json`, JSON.stringify(marks)); } catch {} };
setTimeout(dump, 1500).unref();
process.on('exit', dump);
// Reading the global fetch at preload would load undici here: it is wrapped when the host first reads it.
let nf = 0;
let wrapped = null;
const wrapFetch = (origFetch) => wrapped ??= function (u, ...a) { const n = ++nf; mark(`fetch #${n} called ${String(u).slice(0, 40)}`); const p = origFetch.call(this, u, ...a); if (n <= 3) p.then(() => mark(`fetch #${n} response headers`), () => {}); return p; };
// The first use of the global Headers / fetch loads undici (lazy getters on globalThis).
for (const name of ['Headers', 'fetch', 'Request', 'Response', 'FormData']) {
  const d = Object.getOwnPropertyDescriptor(globalThis, name);
  if (!d || !d.get) continue;
  let seen = false;
  Object.defineProperty(globalThis, name, { ...d, get() { if (!seen) { seen = true; mark(`global ${name} first read (begin)${process.env.MARKS_STACK ? new Error().stack.split("\n").slice(2, 9).join(" <- ") : ""}`); const v = d.get.call(this); mark(`global ${name} first read (end)`); return name === 'fetch' ? wrapFetch(v) : v; } return name === 'fetch' ? wrapFetch(d.get.call(this)) : d.get.call(this); } });
}
// Marks the host itself sends (temporary instrumentation: process.emit('caboose:mark', text)).
process.on('caboose:mark', (s) => mark(String(s)));
