/** `npm run bench`: runs every benchmark in sequence and prints its table. */
import { formatBenchTable, runFileBenchmarks } from './files';

async function main(): Promise<void> {
  process.stdout.write('## File layer (bench/files.ts)\n\n');
  process.stdout.write(formatBenchTable(await runFileBenchmarks()) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
