import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..');

it('a real ACP agent that cannot be installed makes its test skip with a message saying what and where', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-acp-none-'));
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', "process.stderr.write(JSON.stringify(require('./test/support/acp-agents').codexAcp()))"], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 120_000,
    // No registry reachable: the install fails fast.
    env: { ...process.env, CABOOSE_ACP_AGENTS_DIR: dir, npm_config_cache: path.join(dir, 'npm-cache'), npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0', npm_config_offline: 'true' },
  });
  const out = JSON.parse(r.stderr.trim().split('\n').pop() ?? '{}') as { skip?: string };
  assert.match(out.skip ?? '', /^skipped: @zed-industries\/codex-acp@0\.8\.2 could not be installed into .*caboose-acp-none-/);
  fs.rmSync(dir, { recursive: true, force: true });
});
