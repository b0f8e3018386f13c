import { execFile } from 'node:child_process';
import type { HostConfig } from './protocol';
import type { ProviderConfig } from '../agent/provider';

export const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_MODEL = 'gpt-4o-mini';

/** What the model client needs; setup options and the environment resolved. */
export type ResolvedProvider = ProviderConfig;

function runKeyCommand(cmd: string | string[], env: NodeJS.ProcessEnv): Promise<string> {
  const [file, args] = Array.isArray(cmd) ? [cmd[0], cmd.slice(1)] : ['sh', ['-c', cmd]];
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, timeout: 10_000, maxBuffer: 64 * 1024 }, (err, stdout) => {
      if (err) reject(new Error(`api_key_cmd failed: ${err.message}`));
      else resolve(stdout.trim());
    });
  });
}

/** Setup options first, then the environment (OPENAI_BASE_URL, OPENAI_API_KEY, CABOOSE_MODEL), then defaults. */
export async function resolveProvider(config: HostConfig, env: NodeJS.ProcessEnv = process.env): Promise<ResolvedProvider> {
  const p = config.provider ?? {};
  let apiKey = p.api_key ?? '';
  if (!apiKey && p.api_key_cmd) apiKey = await runKeyCommand(p.api_key_cmd, env);
  if (!apiKey) apiKey = env.OPENAI_API_KEY ?? '';
  const out: ResolvedProvider = {
    baseURL: (p.base_url || env.OPENAI_BASE_URL || DEFAULT_BASE_URL).replace(/\/+$/, ''),
    apiKey,
    model: p.model || env.CABOOSE_MODEL || DEFAULT_MODEL,
  };
  if (p.max_tokens) out.maxTokens = p.max_tokens;
  if (p.context_window) out.contextWindow = p.context_window;
  if (p.headers) out.headers = p.headers;
  if (p.media && p.media.length > 0) out.media = [...new Set(p.media)];
  if (p.timeout_ms) out.timeoutMs = p.timeout_ms;
  if (p.max_retries !== undefined && p.max_retries !== null) out.maxRetries = p.max_retries;
  if (p.retry_base_delay_ms !== undefined && p.retry_base_delay_ms !== null) out.retryBaseDelayMs = p.retry_base_delay_ms;
  return out;
}
