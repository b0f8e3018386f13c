/**
 * ACP terminals and MCP servers with `sandbox = true` run their first command after the sandbox's trial ran
 * as a child process (Sandbox.ready), never the synchronous trial that blocks the host (as the host's own
 * bash tool, whose sandbox is prepared while the session loads). Counted, not timed: sandboxTrials.
 */
import { describe, test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Sandbox, resetSandboxDetection, sandboxTrials } from '../../src/workspace/sandbox/sandbox';
import { sandboxReadyCall } from '../../src/host/acp-runtime';

const bwrapWorks = process.platform === 'linux' && spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', 'true']).status === 0;
const skip = bwrapWorks ? false : 'skipped: a working bwrap not found on PATH';

const tmpRoot = () => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-sbx-ready-')));

describe('the first sandboxed command of an ACP terminal or an MCP server runs no synchronous trial', { skip }, () => {
  beforeEach(() => {
    resetSandboxDetection();
    sandboxTrials.sync = 0;
    sandboxTrials.async = 0;
  });

  test('precondition: asking a fresh sandbox how a command runs runs the synchronous trial', () => {
    const root = tmpRoot();
    try {
      assert.equal(new Sandbox({ root }).confinement(false), 'sandboxed');
      assert.deepEqual(sandboxTrials, { sync: 1, async: 0 });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  test("ACP: a terminal's bash call waits for the trial run as a child process", async () => {
    const root = tmpRoot();
    const dataDir = tmpRoot();
    try {
      const sandbox = new Sandbox({ root, dataDir });
      // What ws.call('bash') does first: the bash tool asks where the command runs (for its approval).
      const call = sandboxReadyCall(sandbox, async (name: string) => (name === 'bash' ? sandbox.confinement(false) : 'no sandbox asked'));
      assert.equal(await call('bash'), 'sandboxed');
      assert.deepEqual(sandboxTrials, { sync: 0, async: 1 });
      assert.equal(await call('read_file'), 'no sandbox asked');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('a remembered answer from an earlier host is confirmed by the async trial before the first command', async () => {
    const root = tmpRoot();
    const dataDir = tmpRoot();
    try {
      await new Sandbox({ root, dataDir }).ready(); // an earlier host: its answer is remembered in the data folder
      resetSandboxDetection();
      sandboxTrials.async = 0;
      const sandbox = new Sandbox({ root, dataDir });
      const call = sandboxReadyCall(sandbox, async () => sandbox.confinement(false));
      assert.equal(await call('bash'), 'sandboxed');
      assert.deepEqual(sandboxTrials, { sync: 0, async: 1 });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test(':checkhealth\'s sandbox report runs no synchronous trial', async () => {
    const { sandboxHealth } = await import('../../src/host/sandbox-probe');
    const root = tmpRoot();
    const dataDir = tmpRoot();
    try {
      const h = await sandboxHealth({ cwd: root, dataDir });
      assert.equal(h.available, true);
      assert.equal(sandboxTrials.sync, 0);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('MCP: a stdio server with sandbox = true starts in the sandbox without the synchronous trial', async () => {
    const { connectMcpServer } = await import('../../src/mcp/connect');
    const root = tmpRoot();
    const sandbox = new Sandbox({ root });
    try {
      const server = path.join(__dirname, '../support/mcp-server.mjs');
      const conn = await connectMcpServer(
        { command: process.execPath, args: [server, '--write-tool'], sandbox: true },
        { cwd: root, timeoutMs: 20_000, clientVersion: 'test', sandbox, onStderr: () => {}, onClosed: () => {}, onError: () => {}, onToolsChanged: () => {} },
      );
      try {
        const r = await conn.callTool('write', { path: path.join(root, 'in.txt'), text: 'ok' }, { signal: new AbortController().signal, timeoutMs: 10_000 });
        assert.equal(r.isError, false, 'the server ran (in the sandbox)');
      } finally {
        await conn.close();
      }
      assert.deepEqual(sandboxTrials, { sync: 0, async: 1 });
    } finally {
      await sandbox.dispose();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
