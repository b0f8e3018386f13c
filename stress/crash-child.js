// @ts-check
/**
 * The process stress/crash.ts SIGKILLs (plain JavaScript on the built dist/: it is started 200+ times,
 * and tsx would add about a second to each start). It opens the workspace and writes, edits and patches
 * its 1–5 MB files through the tools until it is killed. Before each call it appends to an intent log
 * (outside the workspace) the sha256 each file will have if the call succeeds, and after the call what
 * happened, so the parent knows each file's old and new bytes at the moment of the kill.
 *
 * argv: <root> <dataDir> <intent log> <seed> <file names, comma-separated>
 */
'use strict';
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { openWorkspace } = require('../dist/index.js');

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** mulberry32, as test/support/rng.ts. @param {number} seed */
function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Line `i`: a unique `L<i>:` prefix, then random lowercase text (never `L` or `:`); as stressLine in crash.ts. */
function stressLine(/** @type {() => number} */ rand, /** @type {number} */ i) {
  let s = `L${i}:`;
  const n = 24 + Math.floor(rand() * 40);
  for (let k = 0; k < n; k++) s += ALPHABET[Math.floor(rand() * ALPHABET.length)];
  return s;
}

const sha256 = (/** @type {Buffer} */ b) => createHash('sha256').update(b).digest('hex');
const bytesOf = (/** @type {string[]} */ ls) => Buffer.from(ls.join('\n') + '\n');

async function main() {
  const [root, dataDir, logFile, seedArg, namesArg] = process.argv.slice(2);
  const rand = seededRandom(Number(seedArg));
  const names = namesArg.split(',');
  // Announces each commit step, so the parent can aim some kills at the commit itself.
  const faultHook = (/** @type {{ phase: string, index: number }} */ s) => fs.writeSync(1, `step ${s.phase} ${s.index}\n`);
  const ws = openWorkspace({ root, dataDir, sessionId: `crash-${process.pid}`, faultHook });
  /** @type {Map<string, string[]>} */
  const lines = new Map();
  const load = (/** @type {string} */ rel) => lines.set(rel, fs.readFileSync(path.join(root, rel), 'utf8').slice(0, -1).split('\n'));
  for (const rel of names) load(rel);
  const log = (/** @type {unknown} */ l) => fs.appendFileSync(logFile, JSON.stringify(l) + '\n');
  const pick = (/** @type {string[]} */ xs) => xs[Math.floor(rand() * xs.length)];
  /** A copy of `ls` with `count` distinct random lines changed, and their indexes (sorted). */
  const mutate = (/** @type {string[]} */ ls, /** @type {number} */ count) => {
    const next = [...ls];
    const at = new Set();
    while (at.size < Math.min(count, ls.length)) at.add(Math.floor(rand() * ls.length));
    for (const i of at) next[i] = stressLine(rand, i);
    return { next, at: [...at].sort((a, b) => a - b) };
  };
  process.stdout.write('ready\n');
  for (let n = 0; ; n++) {
    const op = rand();
    const rel = pick(names);
    const old = /** @type {string[]} */ (lines.get(rel));
    const oldSha = sha256(bytesOf(old));
    /** @type {string} */ let tool;
    /** @type {unknown} */ let args;
    /** @type {Map<string, string[]>} */ const after = new Map();
    if (op < 0.3) {
      tool = 'write_file';
      // Mostly a few changed lines; sometimes every line rewritten (the large-diff case).
      const next = rand() < 0.1 ? old.map((_, i) => stressLine(rand, i)) : mutate(old, 1 + Math.floor(rand() * 40)).next;
      after.set(rel, next);
      args = { path: rel, content: next.join('\n') + '\n', expectedSha256: oldSha };
    } else if (op < 0.65) {
      tool = 'edit_file';
      const { next, at } = mutate(old, 1 + Math.floor(rand() * 3));
      after.set(rel, next);
      args = { path: rel, expectedSha256: oldSha, edits: at.map((i) => ({ oldText: old[i], newText: next[i] })) };
    } else {
      tool = 'apply_patch';
      const targets = rand() < 0.5 ? [rel] : [...new Set([rel, pick(names)])];
      const sections = [];
      /** @type {Record<string, string>} */ const expected = {};
      for (const t of targets) {
        const cur = /** @type {string[]} */ (lines.get(t));
        const { next, at } = mutate(cur, 1 + Math.floor(rand() * 3));
        after.set(t, next);
        sections.push(`*** Update File: ${t}\n` + at.map((i) => `@@\n-${cur[i]}\n+${next[i]}\n`).join(''));
        expected[t] = sha256(bytesOf(cur));
      }
      args = { patch: `*** Begin Patch\n${sections.join('')}*** End Patch\n`, expectedSha256ByPath: expected };
    }
    /** @type {Record<string, string>} */ const files = {};
    for (const [t, ls] of after) files[t] = sha256(bytesOf(ls));
    log({ intent: { n, tool, files } });
    process.stdout.write(`call ${n}\n`);
    const t0 = performance.now();
    const res = await ws.call(tool, args);
    const ms = Math.round(performance.now() - t0);
    log(res.ok ? { done: n, ok: true, ms } : { done: n, ok: false, kind: res.error.kind, ms });
    if (res.ok) for (const [t, ls] of after) lines.set(t, ls);
    else for (const t of after.keys()) load(t);
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(3);
});
