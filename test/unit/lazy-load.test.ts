import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..');

/**
 * The libraries behind the file and fetch tools load when a tool needs them, not with the tool set the host
 * builds for the first reply. Checked in a fresh process: which packages are in require.cache at each step.
 */
const SCRIPT = `
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const PACKAGES = ['turndown', '@mixmark-io/domino', '@joplin/turndown-plugin-gfm', 'ignore', 'picomatch', 'fast-glob'];
const loaded = () => PACKAGES.filter((p) => Object.keys(require.cache).some((k) => k.includes('/node_modules/' + p + '/')));
const steps = {};
require('./src/host/runtime');
require('./src/tools/fetch').createFetchTool();
const { openWorkspace } = require('./src/index');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-lazy-'));
fs.writeFileSync(path.join(tmp, 'a.txt'), 'a\\n');
fs.writeFileSync(path.join(tmp, '.gitignore'), '*.log\\n');
const ws = openWorkspace({ root: tmp, dataDir: path.join(tmp, '.data') });
steps.toolSet = loaded();
(async () => {
  await ws.call('list_directory', {});
  steps.listDirectory = loaded();
  await ws.call('glob', { pattern: '*.txt' });
  steps.glob = loaded();
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  process.stderr.write(JSON.stringify(steps));
})();
`;

test('turndown, ignore, picomatch and fast-glob load on first use, not with the tool set', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', SCRIPT], { cwd: REPO, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const steps = JSON.parse(r.stderr.trim().split('\n').pop() ?? '{}') as Record<string, string[]>;
  assert.deepEqual(steps.toolSet, []);
  // Listing reads .gitignore files and checks deny globs.
  assert.deepEqual(steps.listDirectory, ['ignore', 'picomatch']);
  assert.deepEqual(steps.glob, ['ignore', 'picomatch', 'fast-glob']);
});

/**
 * The MCP SDK loads when the first MCP server starts: never for a host without servers, not when the
 * configuration is read, the pool created or the tools listed (before any server started).
 */
const MCP_SCRIPT = `
const loaded = () => Object.keys(require.cache).some((k) => k.includes('/node_modules/@modelcontextprotocol/sdk/'));
const steps = {};
require('./src/host/server');
require('./src/host/runtime');
require('./src/host/protocol').HostConfigSchema.parse({ mcp: { servers: { s: { command: process.execPath, args: [${JSON.stringify(path.join(REPO, 'test', 'support', 'mcp-server.mjs'))}] } } } });
steps.config = loaded();
const { McpPool } = require('./src/mcp/client-pool');
const { McpToolSource } = require('./src/mcp/tools');
const { mcpServerViews } = require('./src/mcp/status');
const log = { debug() {}, info() {}, warn() {}, error() {} };
const pool = new McpPool({ servers: { s: { command: process.execPath, args: [${JSON.stringify(path.join(REPO, 'test', 'support', 'mcp-server.mjs'))}] } } }, { cwd: process.cwd(), log, clientVersion: 't' });
new McpToolSource(pool).definitions();
mcpServerViews(pool.status(), 'create', new Set());
steps.pool = loaded();
(async () => {
  await pool.ensureStarted({ restartDied: false });
  steps.started = loaded();
  steps.tools = new McpToolSource(pool).definitions().length;
  pool.dispose();
  process.stderr.write(JSON.stringify(steps));
  process.exit(0);
})();
`;

test('the MCP SDK loads when the first MCP server starts, not with the host, its config or the pool', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', MCP_SCRIPT], { cwd: REPO, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const steps = JSON.parse(r.stderr.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
  assert.deepEqual(steps, { config: false, pool: false, started: true, tools: 8 });
});
