// @ts-check
/**
 * The process stress/kills.ts SIGKILLs: deletes, moves, creates, writes, edits and patches small files
 * through the tools (built dist/) until it is killed, announcing each commit step on stdout. Before each
 * call it appends its intent to a log outside the workspace: every path's sha256 before and (if the call
 * succeeds) after (null: absent); after the call, what happened.
 * argv: <root> <dataDir> <intent log> <seed>
 */
'use strict';
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { openWorkspace } = require('../dist/index.js');

function seededRandom(/** @type {number} */ seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const sha256 = (/** @type {Buffer|string} */ b) => createHash('sha256').update(b).digest('hex');
const NAMES = ['p0.txt', 'p1.txt', 'p2.txt', 'p3.txt', 'd/p4.txt', 'd/p5.txt', 'd/e/p6.txt', 'p7.txt'];

async function main() {
  const [root, dataDir, logFile, seedArg] = process.argv.slice(2);
  const rand = seededRandom(Number(seedArg));
  // Announces each commit step; after a rename it dawdles 0–20 ms (a slow disk), so that kills land in
  // the window between a delete's rename and its trash row, as the parent aims them.
  const faultHook = (/** @type {{ phase: string, index: number }} */ s) => {
    fs.writeSync(1, `step ${s.phase} ${s.index}\n`);
    if (s.phase === 'renamed') {
      const until = Date.now() + Math.floor(rand() * 20);
      while (Date.now() < until);
    }
  };
  const ws = openWorkspace({ root, dataDir, sessionId: `kills-${process.pid}`, faultHook });
  // The trash row of a delete comes after the commit: dawdle there too (the window of issue 18 item 2).
  const record = ws.workspace.trash.record.bind(ws.workspace.trash);
  ws.workspace.trash.record = (e) => {
    fs.writeSync(1, 'step record 0\n');
    const until = Date.now() + Math.floor(rand() * 20);
    while (Date.now() < until);
    record(e);
  };
  const log = (/** @type {unknown} */ l) => fs.appendFileSync(logFile, JSON.stringify(l) + '\n');
  const read = (/** @type {string} */ rel) => {
    try {
      return fs.readFileSync(path.join(root, rel));
    } catch {
      return null;
    }
  };
  const pick = (/** @type {string[]} */ xs) => xs[Math.floor(rand() * xs.length)];
  const content = (/** @type {number} */ n) => {
    const lines = [];
    const count = 50 + Math.floor(rand() * 800);
    for (let i = 0; i < count; i++) lines.push(`line ${i} ${n} ${Math.floor(rand() * 1e9).toString(36)}`);
    return lines.join('\n') + '\n';
  };
  process.stdout.write('ready\n');
  for (let n = 0; ; n++) {
    const present = NAMES.filter((r) => read(r) !== null);
    const absent = NAMES.filter((r) => read(r) === null);
    const op = rand();
    /** @type {string} */ let tool;
    /** @type {Record<string, unknown>} */ let args;
    /** @type {Record<string, string|null>} */ const before = {};
    /** @type {Record<string, string|null>} */ const after = {};
    if (op < 0.25 && present.length > 2) {
      tool = 'delete_file';
      const rel = pick(present);
      const s = sha256(/** @type {Buffer} */ (read(rel)));
      before[rel] = s;
      after[rel] = null;
      args = { path: rel, expectedSha256: s };
    } else if (op < 0.45 && present.length && absent.length) {
      tool = 'move_file';
      const from = pick(present);
      const to = pick(absent);
      const s = sha256(/** @type {Buffer} */ (read(from)));
      Object.assign(before, { [from]: s, [to]: null });
      Object.assign(after, { [from]: null, [to]: s });
      args = { from, to, expectedSha256: s };
    } else if (op < 0.65 && absent.length) {
      tool = 'create_file';
      const rel = pick(absent);
      const c = content(n);
      before[rel] = null;
      after[rel] = sha256(c);
      args = { path: rel, content: c };
    } else if (op < 0.8 && present.length) {
      tool = 'write_file';
      const rel = pick(present);
      const c = content(n);
      before[rel] = sha256(/** @type {Buffer} */ (read(rel)));
      after[rel] = sha256(c);
      args = { path: rel, content: c, expectedSha256: before[rel] };
    } else if (present.length >= 2) {
      tool = 'apply_patch';
      const a = pick(present);
      const b = pick(present.filter((r) => r !== a));
      const sections = [];
      /** @type {Record<string, string>} */ const expected = {};
      for (const rel of [a, b]) {
        const old = /** @type {Buffer} */ (read(rel)).toString('utf8');
        const first = old.split('\n')[0];
        const next = old.replace(first, `${first} patched ${n}`);
        before[rel] = sha256(old);
        after[rel] = sha256(next);
        expected[rel] = before[rel];
        sections.push(`*** Update File: ${rel}\n@@\n-${first}\n+${first} patched ${n}\n`);
      }
      args = { patch: `*** Begin Patch\n${sections.join('')}*** End Patch\n`, expectedSha256ByPath: expected };
    } else {
      continue;
    }
    log({ intent: { n, tool, before, after } });
    process.stdout.write(`call ${n}\n`);
    const res = await ws.call(tool, args);
    log(res.ok ? { done: n, ok: true, trashId: res.data && /** @type {any} */ (res.data).trashId } : { done: n, ok: false, kind: res.error.kind });
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(3);
});
