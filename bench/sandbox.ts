/**
 * The sandbox's cost (issue 19): a sandboxed `true` against an unsandboxed one (median of 50 runs each,
 * interleaved, in the same run) and a sandboxed `npm run build` of this project against an unsandboxed one
 * (median of 3 each). Both through the bash tool, as the agent runs commands.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createBashTool } from '../src/tools/bash';
import { Sandbox, detectSandbox } from '../src/workspace/sandbox/sandbox';

export interface SandboxBench {
  available: boolean;
  reason?: string;
  trueMs?: { sandboxed: number; unsandboxed: number; overheadMs: number; ratio: number; runs: number };
  buildMs?: { sandboxed: number; unsandboxed: number; ratio: number; runs: number };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function time(run: () => Promise<{ exitCode: number | null; output: string }>): Promise<number> {
  const t0 = performance.now();
  const r = await run();
  if (r.exitCode !== 0) throw new Error(`command failed (${r.exitCode}): ${r.output.slice(-500)}`);
  return performance.now() - t0;
}

export async function runSandboxBenchmarks(o: { trueRuns?: number; buildRuns?: number; repo?: string } = {}): Promise<SandboxBench> {
  const support = detectSandbox();
  if (!support.available) return { available: false, reason: support.reason };
  const trueRuns = o.trueRuns ?? 50;
  const buildRuns = o.buildRuns ?? 3;
  const repo = o.repo ?? path.resolve(__dirname, '..');
  const ctx = (root: string) => ({ signal: new AbortController().signal, workspace: { root, dataDir: path.join(os.tmpdir(), 'caboose-bench-data'), sessionId: 'bench' }, sessionId: 'bench' });

  const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-bench-sbx-')));
  const sb = new Sandbox({ root: scratch });
  const inside = createBashTool({ sandbox: sb });
  const outside = createBashTool();
  const a: number[] = [];
  const b: number[] = [];
  try {
    await inside.execute({ command: 'true' }, ctx(scratch)); // warm-up (the .git scan)
    await outside.execute({ command: 'true' }, ctx(scratch));
    for (let i = 0; i < trueRuns; i++) {
      a.push(await time(() => inside.execute({ command: 'true' }, ctx(scratch))));
      b.push(await time(() => outside.execute({ command: 'true' }, ctx(scratch))));
    }
  } finally {
    await sb.dispose();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  const out: SandboxBench = { available: true, trueMs: { sandboxed: median(a), unsandboxed: median(b), overheadMs: median(a) - median(b), ratio: median(a) / median(b), runs: trueRuns } };

  if (buildRuns > 0) {
    const repoSb = new Sandbox({ root: repo });
    const bi = createBashTool({ sandbox: repoSb, defaultTimeoutMs: 600_000 });
    const bo = createBashTool({ defaultTimeoutMs: 600_000 });
    const c: number[] = [];
    const d: number[] = [];
    try {
      for (let i = 0; i < buildRuns; i++) {
        c.push(await time(() => bi.execute({ command: 'npm run build' }, ctx(repo))));
        d.push(await time(() => bo.execute({ command: 'npm run build' }, ctx(repo))));
      }
    } finally {
      await repoSb.dispose();
    }
    out.buildMs = { sandboxed: median(c), unsandboxed: median(d), ratio: median(c) / median(d), runs: buildRuns };
  }
  return out;
}

export function formatSandboxTable(r: SandboxBench): string {
  if (!r.available) return `sandbox: not measured (${r.reason})`;
  const rows = ['| command | runs | unsandboxed (median) | sandboxed (median) | overhead | ratio |', '|---|---|---|---|---|---|'];
  const t = r.trueMs;
  if (t) rows.push(`| \`true\` | ${t.runs} + ${t.runs} | ${t.unsandboxed.toFixed(1)} ms | ${t.sandboxed.toFixed(1)} ms | ${t.overheadMs.toFixed(1)} ms | ${t.ratio.toFixed(2)}× |`);
  const b = r.buildMs;
  if (b) rows.push(`| \`npm run build\` | ${b.runs} + ${b.runs} | ${(b.unsandboxed / 1000).toFixed(2)} s | ${(b.sandboxed / 1000).toFixed(2)} s | ${((b.sandboxed - b.unsandboxed) / 1000).toFixed(2)} s | ${b.ratio.toFixed(3)}× |`);
  return rows.join('\n');
}

if (require.main === module) {
  void runSandboxBenchmarks().then((r) => process.stdout.write(formatSandboxTable(r) + '\n'));
}
