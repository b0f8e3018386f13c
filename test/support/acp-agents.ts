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
  return installAgent('@zed-industries/codex-acp', '0.8.2', path.join('bin', 'codex-acp.js'));
}

/** Claude Code's ACP adapter: speaks the Anthropic Messages API (the fake in fake-anthropic.ts). */
export function claudeCodeAcp(): { bin: string } | { skip: string } {
  return installAgent('@zed-industries/claude-code-acp', '0.16.2', path.join('dist', 'index.js'));
}

function installAgent(pkg: string, version: string, binPath: string): { bin: string } | { skip: string } {
  const dir = path.join(ACP_AGENTS_DIR, `${pkg.replace(/[@/]/g, '_')}-${version}`);
  const bin = path.join(dir, 'node_modules', ...pkg.split('/'), binPath);
  if (fs.existsSync(bin)) return { bin };
  try {
    fs.mkdirSync(dir, { recursive: true });
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    execFileSync(npm, ['install', '--prefix', dir, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `${pkg}@${version}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 300_000,
    });
  } catch (e) {
    const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
    return { skip: `skipped: ${pkg}@${version} could not be installed into ${dir} (${msg})` };
  }
  return fs.existsSync(bin) ? { bin } : { skip: `skipped: ${pkg}@${version} not found at ${bin} after npm install` };
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
