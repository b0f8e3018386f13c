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
const origFetch = globalThis.fetch;
let nf = 0;
globalThis.fetch = function (u, ...a) { const n = ++nf; mark(`fetch #${n} called ${String(u).slice(0, 40)}`); const p = origFetch.call(this, u, ...a); if (n <= 3) p.then(() => mark(`fetch #${n} response headers`), () => {}); return p; };
const net = require('net');
const origConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...a) { mark('socket connect'); return origConnect.apply(this, a); };
const cp = require('child_process');
const origSpawn = cp.spawn;
cp.spawn = function (cmd, ...a) { mark(`spawn ${cmd}`); const c = origSpawn.call(this, cmd, ...a); c.once('close', () => mark(`spawn ${cmd} closed`)); return c; };
const origSpawnSync = cp.spawnSync;
cp.spawnSync = function (cmd, ...a) { mark(`spawnSync ${cmd} begin`); const r = origSpawnSync.call(this, cmd, ...a); mark(`spawnSync ${cmd} end`); return r; };
let firstIn = false;
const origPush = require('stream').Readable.prototype.push;
require('stream').Readable.prototype.push = function (chunk, ...a) { if (this === process.stdin && chunk && !firstIn) { firstIn = true; mark(`stdin first data ${chunk.length} B`); } return origPush.call(this, chunk, ...a); };
const origWrite = process.stdout.write.bind(process.stdout);
let sawDelta = false, nw = 0;
process.stdout.write = function (chunk, ...a) { nw++; if (nw <= 2) mark(`stdout write #${nw}`); if (!sawDelta && Buffer.isBuffer(chunk) && chunk.includes('assistant_delta')) { sawDelta = true; mark('stdout: first assistant_delta frame'); } return origWrite(chunk, ...a); };
const dir = process.env.MARKS_DIR;
if (!dir) throw new Error('host-marks.cjs: MARKS_DIR is not set');
const dump = () => { try { fs.mkdirSync(dir, { recursive: true }); fs.writeFileSync(`${dir}/${process.pid}.json`, JSON.stringify(marks)); } catch {} };
setTimeout(dump, 1500).unref();
process.on('exit', dump);
