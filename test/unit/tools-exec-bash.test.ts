import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createBashTool, OutputCollector, takeTail, type BashResult } from '../../src/tools/bash';
import { ToolRegistry } from '../../src/tools/registry';
import type { ToolContext } from '../../src/tools/tool';
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES } from '../../src/tools/output';
import { toolMessage } from '../../src/agent/messages';
import { testToolContext } from '../support/tool-context';
import { processAlive as alive } from '../support/processes';

let root: string;

const makeCtx = (extra: Partial<ToolContext> = {}): ToolContext => testToolContext(root, extra);


/** Polls a condition with a deadline (process death has no event we can await from here). */
async function waitFor(cond: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

function readPids(file: string): number[] {
  return readFileSync(file, 'utf8')
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
}

const registry = new ToolRegistry([createBashTool({ killGraceMs: 300 })]);

async function run(args: Record<string, unknown>, ctx = makeCtx()): Promise<BashResult> {
  const res = await registry.call('bash', args, ctx);
  if (!res.ok) assert.fail(`bash failed: ${JSON.stringify(res.error)}`);
  return res.data as BashResult;
}

before(() => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'caboose-bash-')));
  mkdirSync(path.join(root, 'sub'));
});
after(() => rmSync(root, { recursive: true, force: true }));

describe('bash: basics', () => {
  test('runs in the workspace root and returns exit code and output', async () => {
    const r = await run({ command: 'echo hello; pwd' });
    assert.equal(r.exitCode, 0);
    assert.equal(r.output, `hello\n${root}\n`);
    assert.equal(r.truncated, false);
    assert.equal(r.timedOut, false);
    assert.equal(r.signal, undefined);
    assert.ok(r.durationMs >= 0);
  });

  test('non-zero exit is a result, not an error, and stderr is included', async () => {
    const r = await run({ command: 'echo out; echo err >&2; exit 3' });
    assert.equal(r.exitCode, 3);
    assert.match(r.output, /out\n/);
    assert.match(r.output, /err\n/);
  });

  test('runs in a cwd inside the workspace', async () => {
    const r = await run({ command: 'pwd', cwd: 'sub' });
    assert.equal(r.output.trim(), path.join(root, 'sub'));
  });

  test('a cwd outside the workspace is refused', async () => {
    for (const cwd of ['..', '/', path.join(root, '..')]) {
      const res = await registry.call('bash', { command: 'pwd', cwd }, makeCtx());
      assert.equal(res.ok, false);
      if (!res.ok) assert.equal(res.error.kind, 'outside_workspace', cwd);
    }
  });

  test('a symlinked cwd that leads outside the workspace is refused', async () => {
    symlinkSync(os.tmpdir(), path.join(root, 'escape'));
    const res = await registry.call('bash', { command: 'pwd', cwd: 'escape' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'outside_workspace');
  });

  test('a missing cwd is not_found, a file cwd is invalid_arguments', async () => {
    writeFileSync(path.join(root, 'afile'), 'x');
    const missing = await registry.call('bash', { command: 'pwd', cwd: 'nope' }, makeCtx());
    assert.equal(missing.ok, false);
    if (!missing.ok) assert.equal(missing.error.kind, 'not_found');
    const file = await registry.call('bash', { command: 'pwd', cwd: 'afile' }, makeCtx());
    assert.equal(file.ok, false);
    if (!file.ok) assert.equal(file.error.kind, 'invalid_arguments');
  });

  test('stdin is empty, so reading it ends at once', async () => {
    const r = await run({ command: 'cat; read x; echo "read=$?"' });
    assert.equal(r.output, 'read=1\n');
  });

  test('progress receives the output as it streams', async () => {
    const chunks: string[] = [];
    const r = await run({ command: 'echo one; echo two >&2; echo three' }, makeCtx({ progress: (t) => chunks.push(t) }));
    assert.ok(chunks.length >= 1);
    assert.equal(chunks.join('').length, r.output.length);
    for (const w of ['one', 'two', 'three']) assert.ok(chunks.join('').includes(w));
  });

  test('preview shows the command and its directory without running it', async () => {
    const tool = createBashTool();
    const p = await tool.preview!({ command: 'touch made-by-preview', cwd: 'sub' }, makeCtx());
    assert.deepEqual(p, { kind: 'command', command: 'touch made-by-preview', cwd: path.join(root, 'sub'), display: '$ touch made-by-preview' });
    assert.equal(existsSync(path.join(root, 'sub', 'made-by-preview')), false);
  });

  test('an empty command is invalid_arguments', async () => {
    const res = await registry.call('bash', { command: '' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'invalid_arguments');
  });
});

describe('bash: timeouts, cancellation, process groups', () => {
  test('timeout kills the process group and returns the output so far', async () => {
    const pidFile = path.join(root, 'timeout-pids');
    const r = await run({ command: `sleep 30 & echo $! > ${pidFile}; echo started; sleep 30`, timeoutMs: 300 });
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    assert.equal(r.signal, 'SIGTERM');
    assert.equal(r.output, 'started\n');
    assert.ok(r.durationMs < 5000, `took ${r.durationMs} ms`);
    const [bg] = readPids(pidFile);
    assert.ok(await waitFor(() => !alive(bg)), `background sleep ${bg} survived`);
  });

  test('processes ignoring SIGTERM are SIGKILLed after the grace period', async () => {
    const r = await run({ command: "trap '' TERM; echo armed; sleep 30; echo never", timeoutMs: 200 });
    assert.equal(r.timedOut, true);
    assert.equal(r.signal, 'SIGKILL');
    assert.equal(r.output, 'armed\n');
  });

  test('abort kills the whole process group and leaves no child behind', async () => {
    const pidFile = path.join(root, 'abort-pids');
    const controller = new AbortController();
    const ctx = makeCtx({
      signal: controller.signal,
      progress: (t) => {
        if (t.includes('ready')) controller.abort();
      },
    });
    const command = `sh -c 'sleep 30 & echo $! >> ${pidFile}; sleep 30 & echo $! >> ${pidFile}; echo $$ >> ${pidFile}; echo ready; wait'`;
    const started = Date.now();
    const res = await registry.call('bash', { command }, ctx);
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'cancelled');
    assert.ok(Date.now() - started < 5000);
    const pids = readPids(pidFile);
    assert.equal(pids.length, 3);
    assert.ok(await waitFor(() => pids.every((p) => !alive(p))), `left behind: ${pids.filter(alive).join(', ')}`);
  });

  test('an already aborted signal runs nothing', async () => {
    const controller = new AbortController();
    controller.abort();
    const marker = path.join(root, 'should-not-exist');
    const res = await registry.call('bash', { command: `touch ${marker}` }, makeCtx({ signal: controller.signal }));
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'cancelled');
    assert.equal(existsSync(marker), false);
  });

  test('background processes holding the output do not keep the call waiting and are killed at the end', async () => {
    const started = Date.now();
    const r = await run({ command: 'sleep 30 & echo $!' });
    assert.ok(Date.now() - started < 5000);
    assert.equal(r.exitCode, 0);
    const bg = Number(r.output.trim());
    assert.ok(bg > 0);
    assert.ok(await waitFor(() => !alive(bg)), `background sleep ${bg} survived`);
  });

  test('a background process ignoring SIGTERM is SIGKILLed and the run is not reported as timed out', async () => {
    const r = await run({ command: "(trap '' TERM; sleep 30) & echo $!", timeoutMs: 60_000 });
    assert.equal(r.exitCode, 0);
    assert.equal(r.timedOut, false);
    assert.ok(r.durationMs < 5000);
    const bg = Number(r.output.trim());
    assert.ok(await waitFor(() => !alive(bg)), `background process ${bg} survived`);
  });

  test('detached background processes are killed at the end too', async () => {
    const r = await run({ command: 'sleep 30 >/dev/null 2>&1 & echo $!' });
    const bg = Number(r.output.trim());
    assert.ok(await waitFor(() => !alive(bg)), `background sleep ${bg} survived`);
  });

  test('children in a session of their own (setsid), even ignoring SIGTERM, are killed too', { skip: !existsSync('/proc/self/environ') }, async () => {
    // Found by stress/processes.ts: they left the process group, so the group kill missed them.
    const pidFile = path.join(root, 'setsid-pids');
    const command = `setsid sleep 30 >/dev/null 2>&1 </dev/null & echo $! >> ${pidFile}; setsid sh -c 'trap "" TERM; sleep 30' >/dev/null 2>&1 </dev/null & echo $! >> ${pidFile}; sleep 30`;
    const r = await run({ command, timeoutMs: 300 });
    assert.equal(r.timedOut, true);
    const pids = readPids(pidFile);
    assert.equal(pids.length, 2);
    assert.ok(await waitFor(() => pids.every((p) => !alive(p)), 3000), `left behind: ${pids.filter(alive).join(', ')}`);
  });

  test("the host's exit SIGKILLs what running commands started, without waiting for the grace period", async () => {
    // Found by stress/processes.ts: quitting Neovim left SIGTERM-ignoring children behind.
    const pidFile = path.join(root, 'exit-pids');
    const command = `trap '' TERM; sleep 30 & echo $! >> ${pidFile}; setsid sh -c 'trap "" TERM; sleep 30' >/dev/null 2>&1 </dev/null & echo $! >> ${pidFile}; echo ready; wait`;
    const code = `
      const { createBashTool } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'src', 'tools', 'bash.ts'))});
      const tool = createBashTool({ killGraceMs: 60000 });
      const ctx = { signal: new AbortController().signal, workspace: { root: ${JSON.stringify(root)}, dataDir: '/nonexistent', sessionId: 's' }, sessionId: 's',
        progress: (t) => { if (t.includes('ready')) process.exit(0); } };
      tool.execute({ command: ${JSON.stringify(command)} }, ctx);`;
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    const pids = readPids(pidFile);
    assert.equal(pids.length, 2);
    assert.ok(await waitFor(() => pids.every((p) => !alive(p)), 2000), `left behind: ${pids.filter(alive).join(', ')}`);
  });
});

describe('bash: output cap', () => {
  test('many lines keep the head and the tail around a notice', async () => {
    const r = await run({ command: 'seq 1 5000' });
    assert.equal(r.truncated, true);
    assert.ok(r.output.startsWith('1\n2\n3\n'));
    assert.ok(r.output.endsWith('\n4999\n5000\n'));
    assert.match(r.output, /\[output truncated: 3001 of 5000 lines \(\d+ bytes\) omitted from the middle; showing the first 1000 and the last 999 lines/);
    assert.ok(r.output.split('\n').length <= MAX_OUTPUT_LINES + 2);
    assert.ok(!r.output.includes('\n1001\n'));
    assert.ok(!r.output.includes('\n4000\n'));
  });

  test('many bytes stay under 50 KB and keep the last line', async () => {
    const r = await run({ command: 'i=0; while [ $i -lt 3000 ]; do printf "line %05d %s\\n" $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done' });
    assert.equal(r.truncated, true);
    assert.ok(Buffer.byteLength(r.output) <= MAX_OUTPUT_BYTES, `${Buffer.byteLength(r.output)} bytes`);
    assert.match(r.output, /^line 00000 /);
    assert.match(r.output, /line 02999 x+\n$/);
  });

  test('megabytes of output are capped (memory stays bounded)', async () => {
    const r = await run({ command: 'yes 0123456789abcdef | head -c 5000000; echo; echo THE-END' });
    assert.equal(r.truncated, true);
    assert.ok(Buffer.byteLength(r.output) <= MAX_OUTPUT_BYTES);
    assert.ok(r.output.endsWith('THE-END\n'));
  });

  test('one enormous line is cut at both ends', async () => {
    const r = await run({ command: "head -c 200000 /dev/zero | tr '\\0' x; echo END" });
    assert.equal(r.truncated, true);
    assert.ok(Buffer.byteLength(r.output) <= MAX_OUTPUT_BYTES);
    assert.ok(r.output.startsWith('xxxx'));
    assert.ok(r.output.endsWith('xEND\n'));
    assert.match(r.output, /output truncated/);
  });
});

describe('bash: one cap, one notice (issue 17, defect 3)', () => {
  /** What the model receives for the result: the tool message's content, through the cap every tool result obeys. */
  const sent = (r: BashResult): { content: string; output: string } => {
    const content = String(toolMessage('call_1', { ok: true, data: r }).content);
    return { content, output: (JSON.parse(content) as { data: { output: string } }).data.output };
  };

  test('seq 1 100000: the model gets one notice and the last lines 99999 and 100000', async () => {
    const r = await run({ command: 'seq 1 100000' });
    assert.equal(r.truncated, true);
    const { content, output } = sent(r);
    assert.equal(content, JSON.stringify({ ok: true, data: r }), 'the general cap leaves the bash output alone');
    assert.equal(output.match(/\[output truncated/g)?.length, 1, 'one notice');
    assert.ok(output.endsWith('\n99999\n100000\n'), output.slice(-40));
    assert.ok(output.startsWith('1\n2\n'));
  });

  test('lines full of JSON escapes (quotes, tabs, ANSI) and long lines: still one notice, the last line kept', async () => {
    const cases = [
      // 1,900 lines of 26 raw bytes whose JSON is longer (\t, \", \u001b): under the raw caps, over the encoded one.
      'i=0; while [ $i -lt 1900 ]; do printf \'"\\t\\033[1m"%05d"\\t"\\033[0m"\\n\' $i; i=$((i+1)); done; echo LAST',
      // exactly 2,000 lines
      'seq 1 2000',
      // 2,001 lines
      'seq 1 2001',
      // bytes, not lines
      'i=0; while [ $i -lt 1500 ]; do printf "%05d %s\\n" $i "$(printf \'\\"%.0s\' $(seq 1 30))"; i=$((i+1)); done; echo LAST',
    ];
    for (const command of cases) {
      const r = await run({ command });
      const { content, output } = sent(r);
      assert.equal(content, JSON.stringify({ ok: true, data: r }), `the general cap leaves it alone: ${command}`);
      assert.ok((output.match(/\[output truncated/g)?.length ?? 0) <= 1, command);
      const last = command.endsWith('LAST') ? 'LAST' : command.split(' ').at(-1)!;
      assert.ok(output.endsWith(`${last}\n`), `${command}: ends with ${output.slice(-30)}`);
    }
  });
});

describe('bash: output helpers', () => {
  test('takeTail keeps whole lines from the end within both caps', () => {
    assert.deepEqual(takeTail('a\nb\nc\n', 2, 100), { text: 'b\nc\n', lines: 2 });
    assert.deepEqual(takeTail('a\nb\nc', 5, 4), { text: 'b\nc', lines: 2 });
    assert.deepEqual(takeTail('abcdef', 5, 3), { text: 'def', lines: 1 });
  });

  test('OutputCollector returns small output unchanged, across chunks', () => {
    const c = new OutputCollector();
    c.push('he');
    c.push('llo\nwor');
    c.push('ld');
    assert.deepEqual(c.finish(), { output: 'hello\nworld', truncated: false });
    assert.equal(c.totalLines, 2);
  });

  test('OutputCollector counts lines across a very long stream', () => {
    const c = new OutputCollector();
    for (let i = 0; i < 100_000; i++) c.push(`${i}\n`);
    assert.equal(c.totalLines, 100_000);
    const { output, truncated } = c.finish();
    assert.equal(truncated, true);
    assert.ok(output.startsWith('0\n1\n'));
    assert.ok(output.endsWith('99998\n99999\n'));
    assert.match(output, /98001 of 100000 lines/);
  });
});
