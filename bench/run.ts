/** `npm run bench`: runs every benchmark in sequence and prints its table. */
import { formatBenchTable, runFileBenchmarks } from './files';
import { formatBufferTable, runBufferBenchmarks } from './buffers';
import { formatStartupTable, runStartupBenchmark } from './startup';

async function main(): Promise<void> {
  process.stdout.write('## Host start-up (bench/startup.ts)\n\n');
  process.stdout.write(formatStartupTable(runStartupBenchmark()) + '\n\n');
  process.stdout.write('## File layer (bench/files.ts)\n\n');
  process.stdout.write(formatBenchTable(await runFileBenchmarks()) + '\n');
  process.stdout.write('\n## Live buffers (bench/buffers.ts)\n\n');
  process.stdout.write(formatBufferTable(await runBufferBenchmarks()) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
