import type { HostConfig } from './protocol';
import { registerSecret, registerUrlCredentials } from '../store/redact';
import type { ProviderConfig } from '../agent/provider';

export const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_MODEL = 'gpt-4o-mini';
/** The provider of the single-table form (`provider = { … }`) when it is listed by name. */
export const SINGLE_PROVIDER_NAME = 'default';

/** What the model client needs; setup options and the environment resolved. */
export type ResolvedProvider = ProviderConfig & {
  /** The provider's name (`providers.<name>`), or 'default' for the single-table form. */
  name?: string;
  /** `vision = false` (the provider's or the model's): images the user attaches are not sent. */
  vision?: boolean;
};

type NamedProvider = NonNullable<HostConfig['providers']>[string];
type ModelOptions = Exclude<NonNullable<NamedProvider['models']>, string[]>[string];

function runKeyCommand(cmd: string | string[], env: NodeJS.ProcessEnv): Promise<string> {
  const [file, args] = Array.isArray(cmd) ? [cmd[0], cmd.slice(1)] : ['sh', ['-c', cmd]];
  return new Promise((resolve, reject) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only for an api_key_cmd (issue 24)
    (require('node:child_process') as typeof import('node:child_process')).execFile(file, args, { env, timeout: 10_000, maxBuffer: 64 * 1024 }, (err, stdout) => {
      if (err) reject(new Error(`api_key_cmd failed: ${err.message}`));
      else resolve(stdout.trim());
    });
  });
}

let editorApiKey: string | null = null;

/**
 * OPENAI_API_KEY as Neovim has it. The editor starts the host WITHOUT the key in its environment (a
 * command could read /proc/<host pid>/environ) and sends it over the RPC channel instead (host.init).
 */
export function setEditorApiKey(key: string | null | undefined): void {
  editorApiKey = key ? key : null;
  registerSecret(editorApiKey);
}

/** The configured providers by name: `providers`, or the single-table form as 'default'. */
export function configuredProviders(config: HostConfig): Map<string, NamedProvider> {
  const out = new Map<string, NamedProvider>();
  for (const [name, p] of Object.entries(config.providers ?? {})) out.set(name, p);
  if (out.size === 0 || (config.provider !== undefined && typeof config.provider !== 'string')) {
    const single = typeof config.provider === 'object' ? config.provider : {};
    if (!out.has(SINGLE_PROVIDER_NAME)) out.set(SINGLE_PROVIDER_NAME, single);
  }
  return out;
}

/** The default provider's name: `provider = 'name'`, else the single table, else the only (or first by name) one. */
export function defaultProviderName(config: HostConfig): string {
  const all = configuredProviders(config);
  if (typeof config.provider === 'string') {
    if (!all.has(config.provider)) throw new Error(`provider '${config.provider}' is not among the configured providers (${[...all.keys()].join(', ')})`);
    return config.provider;
  }
  if (all.has(SINGLE_PROVIDER_NAME)) return SINGLE_PROVIDER_NAME;
  return [...all.keys()].sort()[0];
}

/** The models configured for a provider (its default model first), with their options. */
export function configuredModels(p: NamedProvider): { id: string; options: ModelOptions }[] {
  const out: { id: string; options: ModelOptions }[] = [];
  const add = (id: string, options: ModelOptions = {}): void => {
    if (!out.some((m) => m.id === id)) out.push({ id, options });
  };
  if (p.model) add(p.model, modelOptions(p, p.model));
  const models = p.models;
  if (Array.isArray(models)) for (const id of models) add(id);
  else if (models) for (const [id, o] of Object.entries(models)) add(id, o);
  return out;
}

function modelOptions(p: NamedProvider, model: string): ModelOptions {
  const models = p.models;
  return models && !Array.isArray(models) ? (models[model] ?? {}) : {};
}

/**
 * Setup options first, then the environment (OPENAI_BASE_URL, OPENAI_API_KEY, CABOOSE_MODEL: for the
 * single-table form and a provider named 'openai'), then defaults. `pick` chooses another provider or
 * model than the default one (:CabooseModel). OPENAI_API_KEY is the editor's (sent over RPC) or this
 * process's. The key and a base_url's userinfo are registered for redaction (store/redact.ts): they are
 * never stored or logged.
 */
export async function resolveProvider(config: HostConfig, env: NodeJS.ProcessEnv = process.env, pick: { provider?: string | null; model?: string | null } = {}): Promise<ResolvedProvider> {
  const all = configuredProviders(config);
  const name = pick.provider ?? defaultProviderName(config);
  const p = all.get(name);
  if (!p) throw new Error(`unknown provider '${name}' (configured: ${[...all.keys()].join(', ')})`);
  const envFallback = name === SINGLE_PROVIDER_NAME || name === 'openai' || !p.base_url;
  let apiKey = p.api_key ?? '';
  if (!apiKey && p.api_key_cmd) apiKey = await runKeyCommand(p.api_key_cmd, env);
  if (!apiKey && p.api_key_env) apiKey = env[p.api_key_env] ?? '';
  if (!apiKey && envFallback && !p.api_key_env) apiKey = env.OPENAI_API_KEY || editorApiKey || '';
  const model = pick.model || p.model || configuredModels(p)[0]?.id || (envFallback ? env.CABOOSE_MODEL : undefined) || DEFAULT_MODEL;
  const out: ResolvedProvider = {
    name,
    baseURL: (p.base_url || (envFallback ? env.OPENAI_BASE_URL : undefined) || DEFAULT_BASE_URL).replace(/\/+$/, ''),
    apiKey,
    model,
  };
  registerSecret(apiKey);
  registerUrlCredentials(out.baseURL);
  const mo = modelOptions(p, model);
  const maxTokens = mo.max_tokens ?? p.max_tokens;
  if (maxTokens) out.maxTokens = maxTokens;
  const window = mo.context_window ?? p.context_window;
  if (window) out.contextWindow = window;
  if (p.headers) out.headers = p.headers;
  if (p.media && p.media.length > 0) out.media = [...new Set(p.media)];
  if (p.timeout_ms) out.timeoutMs = p.timeout_ms;
  if (p.max_retries !== undefined && p.max_retries !== null) out.maxRetries = p.max_retries;
  if (p.retry_base_delay_ms !== undefined && p.retry_base_delay_ms !== null) out.retryBaseDelayMs = p.retry_base_delay_ms;
  const options: Record<string, unknown> = {};
  const vision = mo.vision ?? p.vision;
  if (typeof vision === 'boolean') out.vision = vision;
  for (const [k, v] of Object.entries(mo)) if (k !== 'context_window' && k !== 'max_tokens' && k !== 'vision' && v !== null && v !== undefined) options[k] = v;
  if (Object.keys(options).length > 0) out.options = options;
  return out;
}

/** What the winbar and the picker call a model: `provider/model` with named providers, the model alone otherwise. */
export function modelLabel(config: HostConfig, p: { name?: string; model: string }): string {
  const named = configuredProviders(config);
  return named.size === 1 && p.name === SINGLE_PROVIDER_NAME ? p.model : `${p.name ?? SINGLE_PROVIDER_NAME}/${p.model}`;
}
