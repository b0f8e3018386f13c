/**
 * Runs file tool calls in a child process (e.g. as another user) and prints their results as JSON:
 * `node --import tsx test/support/run-tools.ts '{"root":…,"dataDir":…,"calls":[{"name":…,"args":…}]}'`.
 */
import { openWorkspace } from '../../src/index';

interface Job {
  root: string;
  dataDir: string;
  calls: { name: string; args: unknown }[];
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? '{}') as Job;
  const ws = openWorkspace({ root: job.root, dataDir: job.dataDir, sessionId: 'child' });
  try {
    const results = [];
    for (const c of job.calls) results.push(await ws.call(c.name, c.args));
    process.stdout.write(JSON.stringify(results));
  } finally {
    ws.close();
  }
}

void main();
