/**
 * What auditing a bash call costs: `bash -c true` through the plain registry (no audit) and through the
 * workspace registry (before/after scan + audit row), in a generated workspace of BENCH_AUDIT_FILES files
 * (default 1,000, ~2 KB each, 40 folders) plus a .gitignore'd node_modules of 5,000 files that the scan
 * must not pay for. Also the first (cold) scan and one scan alone. Run: `node --import tsx bench/bash-audit.ts`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../src/index';
import { createBashTool } from '../src/tools/bash';
import { ToolRegistry } from '../src/tools/registry';
import { scanWorkspace } from '../src/workspace/scan';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * 0.9))];
}

async function times(runs: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

function makeTree(root: string, files: number): void {
  const hourAgo = new Date(Date.now() - 3_600_000);
  const body = 'export const x = 1; // filler for the audit benchmark\n'.repeat(40);
  for (let i = 0; i < files; i++) {
    const dir = path.join(root, `pkg${i % 8}`, `mod${i % 40}`);
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `file${i}.ts`);
    fs.writeFileSync(file, `// ${i}\n${body}`);
    // As in a real checkout: not modified in the last second (such files are re-hashed at every scan).
    fs.utimesSync(file, hourAgo, hourAgo);
  }
  fs.writeFileSync(path.join(root, '.gitignore'), 'node_modules/\n');
  for (let i = 0; i < 5000; i++) {
    const dir = path.join(root, 'node_modules', `dep${i % 100}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, `i${i}.js`), 'module.exports = 1;\n');
  }
}

export async function runBashAuditBenchmark(): Promise<string> {
  const files = Number(process.env.BENCH_AUDIT_FILES ?? 1000);
  const runs = Number(process.env.BENCH_AUDIT_RUNS ?? 30);
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-audit-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  makeTree(root, files);
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 'bench' });
  try {
    const cold = await times(1, () => scanWorkspace(root, { isIgnored: (rel) => ws.workspace.paths.isDenied(rel) }));
    const warm = await scanWorkspace(root);
    const rescan = await times(runs, () => scanWorkspace(root, { previous: warm }));
    const plain = new ToolRegistry([createBashTool()]);
    ws.registry.add(createBashTool());
    const ctx = { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 'bench' };
    const call = (r: ToolRegistry) => r.call('bash', { command: 'true' }, ctx);
    await call(plain);
    await call(ws.registry);
    // Interleaved, so load from other processes hits both sides alike.
    const without: number[] = [];
    const withAudit: number[] = [];
    for (let i = 0; i < runs; i++) {
      without.push(...(await times(1, () => call(plain))));
      withAudit.push(...(await times(1, () => call(ws.registry))));
    }
    const row = (name: string, xs: number[]) => `| ${name} | ${median(xs).toFixed(1)} | ${p90(xs).toFixed(1)} |`;
    return [
      `Workspace: ${warm.files.size} files scanned (complete: ${warm.complete}), plus 5,000 .gitignore'd files in node_modules; ${runs} runs.`,
      '',
      '| measurement | median (ms) | p90 (ms) |',
      '|---|---:|---:|',
      row('first scan (hashes every file)', cold),
      row('re-scan with `previous` (stat only)', rescan),
      row('bash `true`, plain registry (no audit)', without),
      row('bash `true`, audited (2 scans + row)', withAudit),
      `| overhead (median difference) | ${(median(withAudit) - median(without)).toFixed(1)} | |`,
    ].join('\n');
  } finally {
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (require.main === module) {
  runBashAuditBenchmark().then(
    (t) => process.stdout.write(t + '\n'),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
