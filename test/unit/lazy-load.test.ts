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
