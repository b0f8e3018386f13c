/**
 * A stand-in host for the sandbox tests: runs one bash tool call (sandboxed unless SANDBOX=off; escalated
 * with ESCALATE=1) in the workspace given as argv[2]. With ONCE=1 it prints the result as JSON and exits
 * (HOST_PID in the command's environment is its own pid); otherwise it prints "started" once the
 * command's output says so and waits to be killed.
 * Run with `node --import tsx test/support/sandbox-host.ts <root> <command>`.
 */
import { createBashTool } from '../../src/tools/bash';
import { Sandbox } from '../../src/workspace/sandbox/sandbox';
import { testToolContext } from './tool-context';

const [root, command] = process.argv.slice(2);
const sandbox = process.env.SANDBOX === 'off' ? null : new Sandbox({ root });
const bash = createBashTool({ sandbox, hideEnvValues: process.env.CABOOSE_TEST_HOST_KEY ? [process.env.CABOOSE_TEST_HOST_KEY] : [] });
process.env.HOST_PID = String(process.pid);
const call = bash.execute(
  { command, timeoutMs: process.env.ONCE ? 30_000 : 600_000, ...(process.env.ESCALATE ? { escalate: true } : {}) },
  { ...testToolContext(root), progress: (t) => t.includes('started') && process.stdout.write('started\n') },
);
if (process.env.ONCE) {
  void call.then((r) => {
    process.stdout.write(JSON.stringify(r));
    process.exit(0);
  });
} else {
  setInterval(() => {}, 1000);
}
