/**
 * Shared pieces of the stress suites (`npm run stress`): the scale knob, counting checks, the tables
 * they print, the machine description, and temp folders.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nvimBinaries } from '../test/support/nvim-path';

export const REPO = path.resolve(__dirname, '..');

/** STRESS_SCALE multiplies every count (default 1; e.g. 0.1 for a quick look, 5 for a long soak). */
export function scale(): number {
  const raw = process.env.STRESS_SCALE;
  const v = raw === undefined || raw === '' ? 1 : Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`STRESS_SCALE must be a positive number (got ${raw})`);
  return v;
}

/** `base` scaled by STRESS_SCALE, at least `min` (1 by default). */
export function scaled(base: number, min = 1): number {
  return Math.max(min, Math.round(base * scale()));
}

export const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** One line of a suite's table: how often a property was checked and how often it failed. */
export interface CheckRow {
  check: string;
  attempts: number;
  failures: number;
  /** Shown in the last column (e.g. outcome counts, timings). */
  note?: string;
  /** The failure is a known defect another engineer is fixing (issue 11, defect n). */
  knownDefect?: number;
}

export interface SuiteReport {
  suite: string;
  title: string;
  rows: CheckRow[];
  /** Free-form figures printed under the table (counts by outcome, timings). */
  figures: string[];
  /** First few failure descriptions, for the log. */
  examples: string[];
  durationMs: number;
}

/** Collects the checks of one suite. */
export class Checks {
  private readonly rows = new Map<string, CheckRow>();
  readonly figures: string[] = [];
  readonly examples: string[] = [];

  constructor(private readonly maxExamples = 20) {}

  row(check: string): CheckRow {
    let r = this.rows.get(check);
    if (!r) {
      r = { check, attempts: 0, failures: 0 };
      this.rows.set(check, r);
    }
    return r;
  }

  /** Records one attempt of `check`; `problem` (a description) when it failed. */
  record(check: string, problem: string | null | undefined | false): boolean {
    const r = this.row(check);
    r.attempts++;
    if (problem) {
      r.failures++;
      if (this.examples.length < this.maxExamples) this.examples.push(`${check}: ${problem}`);
      return false;
    }
    return true;
  }

  note(check: string, note: string): void {
    this.row(check).note = note;
  }

  known(check: string, defect: number): void {
    this.row(check).knownDefect = defect;
  }

  report(suite: string, title: string, startedAt: number): SuiteReport {
    return { suite, title, rows: [...this.rows.values()], figures: this.figures, examples: this.examples, durationMs: Date.now() - startedAt };
  }
}

export function failuresOf(r: SuiteReport): number {
  return r.rows.reduce((n, row) => n + row.failures, 0);
}

export function formatSuite(r: SuiteReport): string {
  const out = [`## ${r.title} (stress/${r.suite}.ts) — ${(r.durationMs / 1000).toFixed(1)} s`, ''];
  out.push('| check | attempts | failures | result | notes |', '|---|---:|---:|---|---|');
  for (const row of r.rows) {
    const result = row.failures === 0 ? '✓' : row.knownDefect ? `✗ (being fixed in issue 11, defect ${row.knownDefect})` : '✗';
    out.push(`| ${row.check} | ${row.attempts} | ${row.failures} | ${result} | ${row.note ?? ''} |`);
  }
  if (r.figures.length) out.push('', ...r.figures.map((f) => `- ${f}`));
  const cut = process.env.STRESS_DEBUG ? Infinity : 400;
  if (r.examples.length) out.push('', 'First failures:', ...r.examples.map((e) => `  - ${e.replace(/\n/g, ' ⏎ ').slice(0, cut)}`));
  return out.join('\n') + '\n';
}

export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  os: string;
  kernel: string;
  node: string;
  nvim: string[];
  memGb: number;
  loadAvg: string;
}

export function machineInfo(): MachineInfo {
  let osName = `${os.type()} ${os.release()}`;
  try {
    const rel = fs.readFileSync('/etc/os-release', 'utf8');
    const m = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(rel);
    if (m) osName = m[1];
  } catch {
    // not Linux, or no os-release
  }
  let nvim: string[] = [];
  try {
    nvim = nvimBinaries().map((b) => b.version);
  } catch (err) {
    nvim = [`none (${(err as Error).message.split(';')[0]})`];
  }
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    os: osName,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    nvim,
    memGb: Math.round(os.totalmem() / 2 ** 30),
    loadAvg: os.loadavg().map((x) => x.toFixed(2)).join(' '),
  };
}

export function formatMachine(m: MachineInfo): string {
  return `Machine: ${m.cpus} CPUs (${m.cpuModel}), ${m.memGb} GB, ${m.os} (${m.kernel}), Node ${m.node}, Neovim ${m.nvim.join(' and ')}; load average at start ${m.loadAvg}.`;
}

/** A fresh temp folder (realpath'd); removed by the returned function. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `caboose-stress-${prefix}-`)));
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Every file under `root` (relative paths, `/`-separated) → its bytes; symlinks are listed, not followed. */
export function snapshotTree(root: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isSymbolicLink()) out.set(r, Buffer.from(`symlink -> ${fs.readlinkSync(path.join(root, r))}`));
      else out.set(r, fs.readFileSync(path.join(root, r)));
    }
  };
  walk('');
  return out;
}

export function sameTree(a: Map<string, Buffer>, b: Map<string, Buffer>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (!b.get(k)?.equals(v)) return false;
  return true;
}

/** The first difference between two trees, for failure messages. */
export function treeDiff(a: Map<string, Buffer>, b: Map<string, Buffer>): string {
  for (const [k, v] of a) {
    const w = b.get(k);
    if (!w) return `${k} disappeared`;
    if (!w.equals(v)) return `${k} changed`;
  }
  for (const k of b.keys()) if (!a.has(k)) return `${k} appeared`;
  return 'no difference';
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export { processAlive } from '../test/support/processes';

/** `git rev-parse --short HEAD`, or 'unknown'. */
export function gitHead(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** Runs a suite's `run` when its file is executed directly, printing its table. */
export function mainIfDirect(mod: NodeModule, run: () => Promise<SuiteReport>): void {
  if (require.main !== mod) return;
  process.stdout.write(formatMachine(machineInfo()) + '\n\n');
  run().then(
    // Exit explicitly: a helper left running by a suite (a server socket, esbuild's service) must not keep it alive.
    (r) => {
      process.stdout.write(formatSuite(r), () => process.exit(failuresOf(r) > 0 ? 1 : 0));
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`, () => process.exit(2));
    },
  );
}
