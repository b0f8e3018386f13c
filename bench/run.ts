/** `npm run bench`: runs every benchmark in sequence and prints its table. */
import { loadLine, runChatBenchmarks } from './chat';
import { formatBenchTable, runFileBenchmarks } from './files';
import { formatBufferTable, runBufferBenchmarks } from './buffers';
import { formatStartupTable, runStartupBenchmark } from './startup';
import { runSessionBenchmarks } from './sessions';
import { formatSandboxTable, runSandboxBenchmarks } from './sandbox';

async function main(): Promise<void> {
  const write = (s: string) => process.stdout.write(s);
  // The headline: what the user feels in the chat (cold first token, streaming), then the rest.
  await runChatBenchmarks(undefined, write);
  await runSessionBenchmarks(undefined, write);
  write('## Host start-up (bench/startup.ts)\n\n' + loadLine() + '.\n\n');
  write(formatStartupTable(runStartupBenchmark()) + '\n\n');
  write('## File layer (bench/files.ts)\n\n' + loadLine() + '.\n\n');
  write(formatBenchTable(await runFileBenchmarks()) + '\n');
  write('\n## Live buffers (bench/buffers.ts)\n\n' + loadLine() + '.\n\n');
  write(formatBufferTable(await runBufferBenchmarks()) + '\n');
  write('\n## Sandbox (bench/sandbox.ts)\n\n');
  write(formatSandboxTable(await runSandboxBenchmarks()) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
