/**
 * Which bundled modules a cold start evaluates before the first model request, and the CPU each costs
 * (issue 24). Builds the readable bundle (CABOOSE_BUNDLE_MINIFY=0), wraps esbuild's `__commonJS` / `__esm`
 * helpers to stamp `process.cpuUsage()` around each module's first evaluation, dumps the list at the
 * request's `http.request` (not its socket's connect: the connection is opened ahead at host.init,
 * agent/preconnect.ts; node:http is wrapped when the host loads it), runs bench/cold-timeline.ts, prints the totals by package, and rebuilds the
 * normal bundle. Bench only; the numbers include the wrappers' own small cost.
 *
 *   npm run build && node --import tsx bench/module-cpu.ts [runs]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const root = path.resolve(__dirname, '..');
// The first-request bundle (issue 24, fifth round) when it is built: it sends the first request; the host's
// bundle loads after it.
const first = path.join(root, 'dist', 'host-first.bundle.js');
const bundle = process.env.BENCH_MODULE_BUNDLE === 'host' || !fs.existsSync(first) ? path.join(root, 'dist', 'host.bundle.js') : first;
const runs = Number(process.argv[2] ?? 3);
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-module-cpu-'));

const CJS = `var __commonJS = (cb, mod) => function __require() {
  try {
    return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;`;
const CJS_TIMED = `var __MS = [], __ML = [];
var __MT = (name, f) => { const c = process.cpuUsage(); const fr = { child: 0 }; __MS.push(fr); try { return f(); } finally { const d = process.cpuUsage(c); const incl = (d.user + d.system) / 1000; __MS.pop(); if (__MS.length) __MS[__MS.length - 1].child += incl; __ML.push([name, incl, incl - fr.child]); } };
{ let done = false; const M = require('module'); const l = M._load; const w = new Set(); M._load = function (req, ...a) { const m = l.call(this, req, ...a); const n = req.replace(/^node:/, ''); if ((n === 'http' || n === 'https') && !w.has(m)) { w.add(m); const o = m.request; m.request = function (...b) { if (!done) { done = true; require('fs').writeFileSync(${JSON.stringify(out)} + '/' + process.pid + '.json', JSON.stringify(__ML)); } return o.apply(this, b); }; } return m; }; }
var __commonJS = (cb, mod) => function __require() {
  try {
    return mod || __MT(__getOwnPropNames(cb)[0], () => (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod)), mod.exports;`;
const ESM = '    return fn && (res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;';
const ESM_TIMED = '    return fn && (res = ((n, f) => __MT(n, () => (0, f)()))(__getOwnPropNames(fn)[0], fn[__getOwnPropNames(fn)[0]], fn = 0)), res;';

try {
  execFileSync(process.execPath, [path.join(root, 'scripts', 'bundle-host.mjs')], { env: { ...process.env, CABOOSE_BUNDLE_MINIFY: '0' }, stdio: 'inherit' });
  const src = fs.readFileSync(bundle, 'utf8');
  if (!src.includes(CJS) || (bundle !== first && !src.includes(ESM))) throw new Error("module-cpu: esbuild's __commonJS / __esm helpers changed; update this script");
  fs.writeFileSync(bundle, src.replace(CJS, CJS_TIMED).replace(ESM, ESM_TIMED));
  execFileSync(process.execPath, ['--import', 'tsx', path.join(__dirname, 'cold-timeline.ts'), String(runs)], { stdio: 'ignore', cwd: root });
  const files = fs.readdirSync(out).filter((f) => f.endsWith('.json')).sort((a, b) => fs.statSync(path.join(out, a)).mtimeMs - fs.statSync(path.join(out, b)).mtimeMs).slice(1); // the first run fills the code cache
  for (const f of files) {
    const mods = JSON.parse(fs.readFileSync(path.join(out, f), 'utf8')) as [string, number, number][];
    const by = new Map<string, [number, number]>();
    for (const [name, , self] of mods) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(name);
      const key = m ? m[1] : name.startsWith('dist/') ? `dist/${name.split('/')[1]}` : name;
      const [ms, n] = by.get(key) ?? [0, 0];
      by.set(key, [ms + self, n + 1]);
    }
    const total = mods.reduce((s, [, , self]) => s + self, 0);
    console.log(`run ${f}: ${mods.length} modules evaluated before the request, ${total.toFixed(1)} ms of CPU (self)`);
    for (const [k, [ms, n]] of [...by].sort((a, b) => b[1][0] - a[1][0]).slice(0, 15)) console.log(`  ${ms.toFixed(2).padStart(6)} ms  ${String(n).padStart(4)} modules  ${k}`);
    // BENCH_MODULE_TOP=n: the n modules with the most self CPU.
    const top = Number(process.env.BENCH_MODULE_TOP ?? 0);
    if (top > 0) for (const [name, incl, self] of [...mods].sort((a, b) => b[2] - a[2]).slice(0, top)) console.log(`    ${self.toFixed(2).padStart(6)} ms self, ${incl.toFixed(2).padStart(6)} incl.  ${name}`);
  }
  console.log(`Machine load (/proc/loadavg) ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  execFileSync(process.execPath, [path.join(root, 'scripts', 'bundle-host.mjs')], { stdio: 'inherit' });
  fs.rmSync(out, { recursive: true, force: true });
}
