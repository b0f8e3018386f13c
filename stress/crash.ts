/**
 * Crash safety: a child process (stress/crash-child.js, on the built dist/) writes, edits and patches 1–5 MB files through
 * the workspace tools and is SIGKILLed at random moments. After each kill: every file holds exactly its
 * old or its new bytes (a multi-file patch all old or all new), the next openWorkspace leaves no temp or
 * backup file in the workspace, `PRAGMA integrity_check` is ok and the audit chain verifies.
 * Run after `npm run build`: `node --import tsx stress/crash.ts`. Env: STRESS_CRASH_LANES (parallel workspaces, default 2).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { seededRandom } from '../test/support/rng';
import { Checks, mainIfDirect, scaled, sha256, sleep, tempDir, type SuiteReport } from './lib';

// The built host, like the child (npm run stress builds it first); typed from the sources.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { openWorkspace, verifyAuditLog } = require('../dist/index') as typeof import('../src/index');

const CHILD = path.join(__dirname, 'crash-child.js');
const FILES = ['f0.txt', 'f1.txt', 'f2.txt', 'dir/f3.txt', 'dir/f4.txt', 'dir/sub/f5.txt'];
const LEFTOVER = /\.caboose-[0-9a-f]{12}\.(tmp|bak)$/;

interface Intent {
  n: number;
  tool: string;
  /** rel → sha256 of the bytes after a successful call. */
  files: Record<string, string>;
}
type IntentLine = { intent: Intent } | { done: number; ok: boolean; kind?: string; ms: number };

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** Line `i` of a stress file: a unique `L<i>:` prefix and random lowercase text (never `L` or `:`); as in crash-child.js. */
function stressLine(rand: () => number, i: number): string {
  let s = `L${i}:`;
  const n = 24 + Math.floor(rand() * 40);
  for (let k = 0; k < n; k++) s += ALPHABET[Math.floor(rand() * ALPHABET.length)];
  return s;
}

/** A file of about `bytes` bytes of stress lines. */
function stressFile(rand: () => number, bytes: number): Buffer {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const l = stressLine(rand, i);
    lines.push(l);
    size += l.length + 1;
  }
  return Buffer.from(lines.join('\n') + '\n');
}

/** Temp and backup files the commit path leaves behind (`.name.caboose-<hex>.tmp|bak`). */
function leftovers(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (LEFTOVER.test(e.name)) out.push(path.relative(root, p));
    }
  };
  walk(root);
  return out;
}

function readLog(file: string): IntentLine[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as IntentLine];
      } catch {
        return []; // a line cut by the kill
      }
    });
}

interface LaneStats {
  kills: number;
  ops: number;
  pendingAtKill: number;
  pendingNew: number;
  pendingOld: number;
  leftoversAtKill: number;
  killsWithLeftovers: number;
  opMs: number[];
  discarded: number;
  rolledBack: number;
  finished: number;
}

/**
 * Starts the child and SIGKILLs it `delayMs` after it announced its `atCall`-th tool call (0: after it
 * became ready) or, with `atCommit`, the first commit step of that call: most kills land inside a call,
 * many inside the commit (temp files written, renames).
 */
async function runChild(root: string, dataDir: string, log: string, seed: number, atCall: number, atCommit: boolean, delayMs: number): Promise<void> {
  const child = spawn(process.execPath, [CHILD, root, dataDir, log, String(seed), FILES.join(',')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const reached = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const calls = (out.match(/^call \d+$/gm) ?? []).length;
      const stepped = /^step /m.test(out.slice(out.lastIndexOf('call ')));
      if (out.includes('ready\n') && calls >= atCall && (!atCommit || (atCall > 0 && stepped))) resolve();
    });
    void exited.then((code) => reject(new Error(`crash child exited (${code}) before the kill: ${stderr.slice(-2000)}`)));
  });
  await reached;
  await sleep(delayMs);
  if (child.exitCode !== null) throw new Error(`crash child exited by itself (${child.exitCode}): ${stderr.slice(-2000)}`);
  child.kill('SIGKILL');
  await exited;
}

async function runLane(lane: number, kills: number, checks: Checks, stats: LaneStats): Promise<void> {
  const tmp = tempDir(`crash${lane}`);
  const rand = seededRandom(20261123 + lane);
  try {
    const root = path.join(tmp.dir, 'ws');
    const dataDir = path.join(tmp.dir, 'data');
    const log = path.join(tmp.dir, 'intents.jsonl');
    const known = new Map<string, string>();
    for (const rel of FILES) {
      const abs = path.join(root, rel);
      fs.mkdirSync(path.dirname(abs), { recursive: true });
      const bytes = stressFile(rand, (1 + Math.floor(rand() * 5)) * 1024 * 1024 - Math.floor(rand() * 200_000));
      fs.writeFileSync(abs, bytes);
      known.set(rel, sha256(bytes));
    }
    openWorkspace({ root, dataDir, sessionId: 'crash-setup' }).close();
    let logLines = 0;
    for (let k = 0; k < kills; k++) {
      // Half the kills aimed at a commit (0–30 ms after it starts), the rest anywhere in the first or second
      // call (planning included) or at start-up.
      const typical = stats.opMs.length ? [...stats.opMs].sort((a, b) => a - b)[Math.floor(stats.opMs.length / 2)] : 400;
      const atCommit = rand() < 0.5;
      const atCall = atCommit ? 1 + Math.floor(rand() * 2) : rand() < 0.1 ? 0 : 1 + Math.floor(rand() * 2);
      const delay = atCommit ? Math.floor(rand() * 30) : Math.floor(rand() * typical * 1.2);
      await runChild(root, dataDir, log, Math.floor(rand() * 2 ** 31), atCall, atCommit, delay);
      stats.kills++;
      const lines = readLog(log).slice(logLines);
      logLines += lines.length;
      // Replay the intent log: completed calls define the new state; the last one may be in flight.
      let pending: Intent | null = null;
      for (const l of lines) {
        if ('intent' in l) pending = l.intent;
        else if (pending && l.done === pending.n) {
          stats.ops++;
          stats.opMs.push(l.ms);
          if (l.ok) for (const [rel, s] of Object.entries(pending.files)) known.set(rel, s);
          pending = null;
        }
      }
      const atKill = leftovers(root);
      stats.leftoversAtKill += atKill.length;
      if (atKill.length) stats.killsWithLeftovers++;
      // The next open of the workspace is where a crashed commit is cleaned up.
      const opened = openWorkspace({ root, dataDir, sessionId: 'crash-check' });
      const r = opened.workspace.recovered;
      stats.discarded += r.discarded;
      stats.rolledBack += r.rolledBack;
      stats.finished += r.finished;
      opened.close();
      const actual = new Map(FILES.map((rel) => [rel, sha256(fs.readFileSync(path.join(root, rel)))]));
      if (pending) {
        stats.pendingAtKill++;
        const states = Object.entries(pending.files).map(([rel, s]) => (actual.get(rel) === s ? 'new' : actual.get(rel) === known.get(rel) ? 'old' : 'neither'));
        if (states.every((s) => s === 'new')) stats.pendingNew++;
        else if (states.every((s) => s === 'old')) stats.pendingOld++;
        if (Object.keys(pending.files).length > 1) {
          checks.record('a multi-file patch in flight is all old or all new', new Set(states).size === 1 ? null : `lane ${lane} kill ${k}: ${states.join('/')}`);
        }
      }
      for (const rel of FILES) {
        const allowed = [known.get(rel), pending?.files[rel]].filter(Boolean);
        checks.record('every file holds exactly its old or its new bytes', allowed.includes(actual.get(rel)) ? null : `lane ${lane} kill ${k}: ${rel} is neither (pending ${pending?.tool ?? 'none'})`);
        known.set(rel, actual.get(rel)!);
      }
      const left = leftovers(root);
      checks.record('no temp or backup file left in the workspace after the next open', left.length ? `lane ${lane} kill ${k}: ${left.join(', ')}` : null);
      const db = new Database(path.join(dataDir, 'caboose.sqlite'), { readonly: true });
      const integrity = db.pragma('integrity_check', { simple: true });
      db.close();
      checks.record('PRAGMA integrity_check is ok', integrity === 'ok' ? null : `lane ${lane} kill ${k}: ${String(integrity)}`);
      const audit = verifyAuditLog(dataDir);
      checks.record('the audit chain verifies', audit.ok ? null : `lane ${lane} kill ${k}: ${JSON.stringify(audit)}`);
    }
  } finally {
    tmp.remove();
  }
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks();
  const total = scaled(200);
  const lanes = Math.max(1, Math.min(total, Number(process.env.STRESS_CRASH_LANES ?? 2)));
  const stats: LaneStats = { kills: 0, ops: 0, pendingAtKill: 0, pendingNew: 0, pendingOld: 0, leftoversAtKill: 0, killsWithLeftovers: 0, opMs: [], discarded: 0, rolledBack: 0, finished: 0 };
  await Promise.all(Array.from({ length: lanes }, (_, i) => runLane(i, Math.floor(total / lanes) + (i < total % lanes ? 1 : 0), checks, stats)));
  checks.note('every file holds exactly its old or its new bytes', `${stats.kills} SIGKILLs × ${FILES.length} files`);
  const sorted = [...stats.opMs].sort((a, b) => a - b);
  checks.figures.push(
    `${stats.kills} SIGKILLs (${lanes} workspaces in parallel, 6 files of 1–5 MB each); ${stats.ops} tool calls completed between kills ` +
      `(write_file 30 %, edit_file 35 %, apply_patch 35 %, half of them two files); median call ${sorted[Math.floor(sorted.length / 2)] ?? 0} ms, max ${sorted.at(-1) ?? 0} ms.`,
  );
  checks.figures.push(
    `A call was in flight at ${stats.pendingAtKill} kills: afterwards all its files new ${stats.pendingNew}, all old ${stats.pendingOld}, mixed ${stats.pendingAtKill - stats.pendingNew - stats.pendingOld}.`,
  );
  checks.figures.push(
    `Right after the kill (before the next open): ${stats.leftoversAtKill} temp/backup files in the workspace, at ${stats.killsWithLeftovers} kills; ` +
      `the next open recovered ${stats.discarded + stats.rolledBack + stats.finished} commits from the journal ` +
      `(${stats.discarded} cut off while writing temp files, ${stats.rolledBack} during the renames — rolled back, ${stats.finished} after them — finished).`,
  );
  return checks.report('crash', 'Crash safety (SIGKILL during writes)', started);
}

mainIfDirect(module, run);
