/**
 * The typed path's turns (issue 24, fifth round): `:Caboose hi` typed at 80 ms a key into a fresh Neovim,
 * <CR>, first token; for every main-loop gap before the first token, Neovim's CPU in it and what ran
 * inside it (bench/typed-turns.lua: each scheduled/deferred callback, host event, query load, redraw,
 * with the main thread's CPU of each).
 *
 *   npm run build && BENCH_CHAT_DIAG=bench/typed-turns.lua node --import tsx bench/typed-turns.ts [runs] [min-gap-cpu-ms]
 */
import { startFakeOpenAI } from '../test/support/fake-openai';
import { COLD_REPLY, coldAndWarm, coldEnv, loadLine, openNvim, result, sleep, waitSeen } from './chat';
import { runScript } from './timeline-support';

type Mark = [string, number, number, number, number, number];

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 5);
  const minCpu = Number(process.argv[3] ?? 3);
  if (!process.env.BENCH_CHAT_DIAG) throw new Error('set BENCH_CHAT_DIAG=bench/typed-turns.lua');
  const fake = await startFakeOpenAI();
  process.stderr.write('coldEnv…\n');
  const ce = await coldEnv(fake);
  process.stderr.write('coldEnv done\n');
  const worst: number[] = [];
  const typing: string[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      // BENCH_TYPED_WITH_COLD=1: as in the cold table, a cold and a warm send in another fresh Neovim first.
      if (process.env.BENCH_TYPED_WITH_COLD) await coldAndWarm(fake, ce.env);
      const u = await openNvim(fake, ce.env);
      try {
        await u.lua('caboose_bench.probe_start()');
        await sleep(100);
        fake.script({ text: COLD_REPLY });
        const tType = await u.lua<number>('return vim.uv.hrtime()');
        for (const key of ':Caboose hi') {
          await u.nvim.input(key === ' ' ? '<Space>' : key);
          await sleep(80);
        }
        await u.lua('caboose_bench.arm(...)', ['Zephyr', null]);
        await u.lua('caboose_turns.marks = {}');
        await u.nvim.input('<CR>');
        process.stderr.write('<CR> sent\n');
        await waitSeen(u, 't_first', 30_000);
        await sleep(300);
        const r = await result(u);
        const d = await u.lua<{ gaps: [number, number, number][]; marks: Mark[]; t_first: number }>(
          'return { gaps = caboose_bench.gaps, marks = caboose_turns.marks, t_first = caboose_bench.t_first }',
        );
        const t0 = r.t0;
        const ms = (ns: number) => ((ns - t0) / 1e6).toFixed(1).padStart(7);
        process.stdout.write(`\nrun ${i + 1}: first ${r.first_ms!.toFixed(1)} ms, stall ${r.stall_first_ms!.toFixed(1)} (${(r.stall_first_cpu_ms ?? NaN).toFixed(1)} CPU; max gap CPU ${(r.max_gap_cpu_first_ms ?? NaN).toFixed(1)}); ${loadLine()}\n`);
        worst.push(r.max_gap_cpu_first_ms ?? NaN);
        const [tStall, tCpu] = await u.lua<[number, number]>('local s, c = caboose_bench.max_stall(...); return { s, caboose_bench.max_gap_cpu(...) }', [tType, t0]);
        typing.push(`${tStall.toFixed(1)} (${tCpu.toFixed(1)})`);
        process.stdout.write(`while typing (before <CR>): longest stall ${tStall.toFixed(1)} ms, most CPU in one gap ${tCpu.toFixed(1)} ms\n`);
        for (const [end, len, cpu] of d.gaps) {
          if (end < t0 || end - len > d.t_first + 2e6) continue;
          const hot = cpu >= minCpu;
          process.stdout.write(`${ms(end - len)} → ${ms(end)}  gap ${(len / 1e6).toFixed(1)} ms, CPU ${cpu.toFixed(1)}${hot ? '  <<<' : ''}\n`);
          if (!hot) continue;
          for (const [label, a, b, c, depth, gc] of d.marks) {
            if (b < end - len || a > end) continue;
            process.stdout.write(`   ${ms(a)} ${'  '.repeat(depth)}${label}: ${((b - a) / 1e6).toFixed(2)} wall, ${c.toFixed(2)} cpu${Math.abs(gc) > 50 ? `, heap ${gc > 0 ? '+' : ''}${gc.toFixed(0)} KB` : ''}\n`);
          }
        }
        await u.lua('caboose_bench.probe_stop()');
      } finally {
        await u.close();
      }
    }
  } finally {
    await fake.close();
    ce.dispose();
  }
  process.stdout.write(`\nmost CPU in one gap per run: ${worst.map((x) => x.toFixed(1)).join(', ')}\nwhile typing, longest stall (most CPU in one gap) per run: ${typing.join(', ')}\n`);
}

runScript(main);
