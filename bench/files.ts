/**
 * File-layer benchmarks: read_file hashing vs `sha256sum`, grep vs `rg`, on a generated tree.
 * Run with `npm run bench` (bench/run.ts). Sizes: BENCH_HASH_MB (default 200), BENCH_GREP_FILES (default 20000).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../src/index';
import { ripgrepAvailable } from '../src/workspace/search';

export interface BenchRow {
  name: string;
  oursMs: number;
  baselineName: string;
  baselineMs: number | null;
  ratio: number | null;
  target: number | null;
  note?: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timeAsync(runs: number, fn: () => Promise<void>): Promise<number> {
  await fn(); // warm-up (page cache, JIT)
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(times);
}

function has(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

function lineOf(i: number): string {
  return `const value${i % 997} = compute(${i}, "item-${(i * 7919) % 100003}"); // filler text for the benchmark\n`;
}

function makeHashTree(dir: string, totalMb: number): string[] {
  const files: string[] = [];
  const perFile = 50;
  const count = Math.max(1, Math.round(totalMb / perFile));
  const block = Buffer.from(Array.from({ length: 20000 }, (_, i) => lineOf(i)).join(''));
  for (let f = 0; f < count; f++) {
    const p = path.join(dir, `big-${f}.ts`);
    const fd = fs.openSync(p, 'w');
    let written = 0;
    while (written < perFile * 1024 * 1024) written += fs.writeSync(fd, block);
    fs.closeSync(fd);
    files.push(`big-${f}.ts`);
  }
  return files;
}

function makeGrepTree(dir: string, nFiles: number): void {
  for (let i = 0; i < nFiles; i++) {
    const d = path.join(dir, `pkg${i % 50}`, `mod${i % 20}`);
    fs.mkdirSync(d, { recursive: true });
    const lines: string[] = [];
    for (let j = 0; j < 60; j++) lines.push(lineOf(i * 60 + j));
    if (i % 97 === 0) lines.push('// TODO(bench): needle_marker here\n');
    fs.writeFileSync(path.join(d, `file${i}.ts`), lines.join(''));
  }
  fs.writeFileSync(path.join(dir, '.gitignore'), 'ignored/\n');
  fs.mkdirSync(path.join(dir, 'ignored'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'ignored', 'x.ts'), 'needle_marker\n');
}

export async function runFileBenchmarks(opts: { hashMb?: number; grepFiles?: number } = {}): Promise<BenchRow[]> {
  const hashMb = opts.hashMb ?? Number(process.env.BENCH_HASH_MB ?? 200);
  const grepFiles = opts.grepFiles ?? Number(process.env.BENCH_GREP_FILES ?? 20000);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-'));
  const rows: BenchRow[] = [];
  try {
    // --- hashing -------------------------------------------------------------------------------
    const hashRoot = path.join(tmp, 'hash');
    fs.mkdirSync(hashRoot);
    const big = makeHashTree(hashRoot, hashMb);
    const ws = openWorkspace({ root: hashRoot, dataDir: path.join(tmp, 'data-hash'), maxFileBytes: 1024 * 1024 * 1024 });
    try {
      const ours = await timeAsync(3, async () => {
        for (const f of big) {
          const r = await ws.call('read_file', { path: f, startLine: 1, endLine: 50 });
          if (!r.ok) throw new Error(JSON.stringify(r.error));
        }
      });
      const base = has('sha256sum')
        ? await timeAsync(3, async () => {
            const r = spawnSync('sha256sum', big, { cwd: hashRoot });
            if (r.status !== 0) throw new Error('sha256sum failed');
          })
        : null;
      rows.push({
        name: `read_file sha256, ${big.length} × 50 MB`,
        oursMs: ours,
        baselineName: 'sha256sum',
        baselineMs: base,
        ratio: base ? ours / base : null,
        target: 1.2,
        ...(base ? {} : { note: 'sha256sum not on PATH' }),
      });
    } finally {
      ws.close();
    }
    fs.rmSync(hashRoot, { recursive: true, force: true });

    // --- grep ----------------------------------------------------------------------------------
    const grepRoot = path.join(tmp, 'grep');
    fs.mkdirSync(grepRoot);
    makeGrepTree(grepRoot, grepFiles);
    const ws2 = openWorkspace({ root: grepRoot, dataDir: path.join(tmp, 'data-grep') });
    try {
      const rg = ripgrepAvailable() && has('rg');
      const rgArgs = ['--no-config', '--hidden', '--no-require-git', '-g', '!.git', '-e', 'needle_marker', '.'];
      const base = rg
        ? await timeAsync(5, async () => {
            const r = spawnSync('rg', rgArgs, { cwd: grepRoot, maxBuffer: 1 << 28 });
            if (r.status !== 0) throw new Error('rg failed');
          })
        : null;
      let count = 0;
      const run = (engine: 'rg' | 'js') => async () => {
        process.env.CABOOSE_GREP_ENGINE = engine;
        const r = await ws2.call('grep', { pattern: 'needle_marker' });
        if (!r.ok) throw new Error(JSON.stringify(r.error));
        count = (r.data as { matches: unknown[] }).matches.length;
      };
      try {
        if (rg) {
          const ours = await timeAsync(5, run('rg'));
          rows.push({ name: `grep tool (rg engine), ${grepFiles} files, ${count} matches`, oursMs: ours, baselineName: 'rg', baselineMs: base, ratio: ours / base!, target: 1.3 });
        }
        const js = await timeAsync(3, run('js'));
        rows.push({
          name: `grep tool (JS fallback), ${grepFiles} files, ${count} matches`,
          oursMs: js,
          baselineName: 'rg',
          baselineMs: base,
          ratio: base ? js / base : null,
          target: null,
          note: rg ? 'fallback when rg is absent; no target' : 'rg not on PATH: only the JS path was measured',
        });
      } finally {
        delete process.env.CABOOSE_GREP_ENGINE;
      }
    } finally {
      ws2.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}

export function formatBenchTable(rows: BenchRow[]): string {
  const out = ['| benchmark | ours (ms) | baseline | baseline (ms) | ratio | target |', '|---|---:|---|---:|---:|---:|'];
  for (const r of rows) {
    const ratio = r.ratio === null ? 'n/a' : `${r.ratio.toFixed(2)}x`;
    const verdict = r.target === null || r.ratio === null ? '' : r.ratio <= r.target ? ' ✓' : ' ✗';
    out.push(
      `| ${r.name}${r.note ? ` (${r.note})` : ''} | ${r.oursMs.toFixed(0)} | ${r.baselineName} | ${r.baselineMs === null ? 'absent' : r.baselineMs.toFixed(0)} | ${ratio}${verdict} | ${r.target === null ? '—' : `≤ ${r.target}x`} |`,
    );
  }
  return out.join('\n');
}

if (require.main === module) {
  runFileBenchmarks().then(
    (rows) => process.stdout.write(formatBenchTable(rows) + '\n'),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
