/**
 * Real ACP agents for the end-to-end tests, installed from npm into a cache folder on first use (not in
 * `npm ci`: codex-acp ships a 50 MB binary). A test whose agent cannot be installed skips and says why.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The folder agents are installed into: $CABOOSE_ACP_AGENTS_DIR, else a folder in the temp dir. */
export const ACP_AGENTS_DIR = process.env.CABOOSE_ACP_AGENTS_DIR ?? path.join(os.tmpdir(), 'caboose-acp-agents');

/**
 * Codex's ACP adapter, 0.8.2: the last version that still speaks OpenAI Chat Completions
 * (`wire_api = "chat"`), so it runs against the project's fake model server (newer ones need the
 * Responses API). Returns the path of its bin script, or why it is not available.
 */
export function codexAcp(): { bin: string } | { skip: string } {
  const dir = path.join(ACP_AGENTS_DIR, 'codex-acp-0.8.2');
  const bin = path.join(dir, 'node_modules', '@zed-industries', 'codex-acp', 'bin', 'codex-acp.js');
  if (fs.existsSync(bin)) return { bin };
  try {
    fs.mkdirSync(dir, { recursive: true });
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    execFileSync(npm, ['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', '@zed-industries/codex-acp@0.8.2'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    });
  } catch (e) {
    const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
    return { skip: `skipped: @zed-industries/codex-acp@0.8.2 could not be installed into ${dir} (${msg})` };
  }
  return fs.existsSync(bin) ? { bin } : { skip: `skipped: @zed-industries/codex-acp@0.8.2 not found at ${bin} after npm install` };
}

/** A CODEX_HOME whose config points Codex at the fake server (Chat Completions, model name test-gpt-5-…). */
export function codexHome(fakeUrl: string, approvalPolicy = 'on-request'): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-codex-home-'));
  fs.writeFileSync(
    path.join(home, 'config.toml'),
    [
      // Codex offers its read_file tool (which reads through the client) only to models named test-gpt-5….
      'model = "test-gpt-5-fake"',
      'model_provider = "fake"',
      `approval_policy = "${approvalPolicy}"`,
      'sandbox_mode = "workspace-write"',
      'check_for_update_on_startup = false',
      '[features]',
      'apply_patch_freeform = true',
      '[model_providers.fake]',
      'name = "Fake"',
      `base_url = "${fakeUrl}"`,
      'env_key = "FAKE_API_KEY"',
      'wire_api = "chat"',
      '[analytics]',
      'enabled = false',
      '',
    ].join('\n'),
  );
  return home;
}
