/**
 * `npm run bench`: runs every benchmark in sequence and prints its table.
 *
 * `npm run bench -- <table> [<table> …]` runs only the named tables, in the order below:
 *   cold      cold / warm / typed `:Caboose hi` → first token, with the editor's stalls (bench/chat.ts)
 *   stream    paced and burst streams: Neovim CPU, eval round trips, host CPU (bench/chat.ts;
 *             BENCH_STREAM_CASES narrows the cases)
 *   sessions  session store (bench/sessions.ts)
 *   startup   host jobstart → first answer (bench/startup.ts)
 *   files     file layer (bench/files.ts)
 *   buffers   edit_file on clean / unsaved 100k-line buffers (bench/buffers.ts)
 *   sandbox   sandboxed bash (bench/sandbox.ts)
 *   codecompanion  the same cold / warm / burst figures side by side with codecompanion.nvim
 *             (bench/codecompanion.ts; opt-in: BENCH_CODECOMPANION_DIR and BENCH_PLENARY_DIR, else one
 *             "skipped" line)
 *   issue24   shorthand for: cold stream startup buffers codecompanion (the figures of issue 24)
 */
import { loadLine, runChatBenchmarks } from './chat';
import { formatBenchTable, runFileBenchmarks } from './files';
import { formatBufferTable, runBufferBenchmarks } from './buffers';
import { formatStartupTable, runStartupBenchmark } from './startup';
import { runSessionBenchmarks } from './sessions';
import { formatSandboxTable, runSandboxBenchmarks } from './sandbox';
import { runCodecompanionBenchmarks } from './codecompanion';

const TABLES = ['cold', 'stream', 'sessions', 'startup', 'files', 'buffers', 'sandbox', 'codecompanion'] as const;
type Table = (typeof TABLES)[number];
const ALIASES: Record<string, readonly Table[]> = { issue24: ['cold', 'stream', 'startup', 'buffers', 'codecompanion'], all: TABLES, chat: ['cold', 'stream'] };

/** The tables named on the command line (all of them when none is named); exits on an unknown name. */
export function selectTables(args: readonly string[]): Set<Table> {
  if (args.length === 0) return new Set(TABLES);
  const out = new Set<Table>();
  for (const a of args) {
    const alias = ALIASES[a];
    if (alias) alias.forEach((t) => out.add(t));
    else if ((TABLES as readonly string[]).includes(a)) out.add(a as Table);
    else {
      process.stderr.write(`unknown table "${a}"; expected some of: ${[...TABLES, ...Object.keys(ALIASES)].join(', ')}\n`);
      process.exit(2);
    }
  }
  return out;
}

async function main(): Promise<void> {
  const write = (s: string) => process.stdout.write(s);
  const want = selectTables(process.argv.slice(2));
  // The headline: what the user feels in the chat (cold first token, streaming), then the rest.
  if (want.has('cold')) await runChatBenchmarks('cold', write);
  if (want.has('stream')) await runChatBenchmarks('stream', write);
  if (want.has('sessions')) await runSessionBenchmarks(undefined, write);
  if (want.has('startup')) {
    write('## Host start-up (bench/startup.ts)\n\n' + loadLine() + '.\n\n');
    write(formatStartupTable(runStartupBenchmark()) + '\n\n');
  }
  if (want.has('files')) {
    write('## File layer (bench/files.ts)\n\n' + loadLine() + '.\n\n');
    write(formatBenchTable(await runFileBenchmarks()) + '\n');
  }
  if (want.has('buffers')) {
    write('\n## Live buffers (bench/buffers.ts)\n\n' + loadLine() + '.\n\n');
    write(formatBufferTable(await runBufferBenchmarks()) + '\n');
  }
  if (want.has('sandbox')) {
    write('\n## Sandbox (bench/sandbox.ts)\n\n');
    write(formatSandboxTable(await runSandboxBenchmarks()) + '\n');
  }
  if (want.has('codecompanion')) {
    write('\n');
    await runCodecompanionBenchmarks(write);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
