import type { HostConfig } from './protocol';
import { resolveProvider } from './provider-config';
import { fetchModelList } from './model-list';
import type { AuditHealth } from './audit';
import type { McpPool } from '../mcp/client-pool';
import type { McpHealth } from '../mcp/status';
import { rulesOptions } from './project-rules';
import { loadRules } from '../workspace/rules';
import type { SandboxHealth } from './sandbox-probe';

/** The project rules a new conversation in `cwd` would read. */
export interface RulesHealth {
  enabled: boolean;
  cwd: string;
  /** The repository root the search stops at (absent: the working directory alone is searched). */
  root?: string;
  dirs?: string[];
  patterns?: string[];
  max_bytes_per_file?: number;
  max_total_bytes?: number;
  files?: { path: string; rel: string; size: number; bytes: number; truncated?: string }[];
  skipped?: { path: string; rel: string; size?: number; reason: string }[];
  error?: string;
}

export interface ProviderHealth {
  name: string;
  base_url: string;
  model: string;
  key_present: boolean;
  reachable: boolean;
  /** HTTP status of GET /models (401/403: the key is refused). */
  status?: number;
  models?: number;
  /** Whether the server's list names the model (absent when the list is empty or unavailable). */
  model_listed?: boolean;
  error?: string;
}

export interface HealthReport {
  node: string;
  host_pid: number;
  sqlite: { ok: boolean; version?: string; error?: string };
  endpoint: { base_url: string; model: string; reachable: boolean; status?: number; error?: string; models?: number };
  /** Every configured provider (issue 21): reachable, key accepted, the model listed. The default one first. */
  providers?: ProviderHealth[];
  key_present: boolean;
  /** The audit log's hash chain in the data folder's database. */
  audit: AuditHealth;
  rules: RulesHealth;
  /** Each configured MCP server (started here when it was not yet); absent without any. */
  mcp?: McpHealth[];
  /** Where commands run, and the probe's attacks (issue 19). */
  sandbox?: SandboxHealth;
}

export async function rulesHealth(config: HostConfig, cwd: string): Promise<RulesHealth> {
  const opts = rulesOptions(config);
  if (!opts) return { enabled: false, cwd };
  const base = { enabled: true, cwd, patterns: [...opts.files], max_bytes_per_file: opts.maxBytesPerFile, max_total_bytes: opts.maxTotalBytes };
  try {
    const snap = await loadRules(cwd, opts);
    return {
      ...base,
      cwd: snap.cwd,
      // Omitted rather than null: a synchronous reply's null is vim.NIL (truthy) in Lua.
      ...(snap.root ? { root: snap.root } : {}),
      dirs: snap.dirs,
      files: snap.files.map((f) => ({ path: f.path, rel: f.rel, size: f.size, bytes: f.bytes, ...(f.truncated ? { truncated: f.truncated } : {}) })),
      skipped: snap.skipped.map((k) => ({ path: k.path, rel: k.rel, reason: k.reason, ...(k.size === undefined ? {} : { size: k.size }) })),
    };
  } catch (err) {
    return { ...base, error: err instanceof Error ? err.message : String(err) };
  }
}

/** Facts for :checkhealth caboose. Never includes the key itself. */
export async function checkHealth(config: HostConfig, dataDir: string, cwd: string, mcp?: McpPool | null): Promise<HealthReport> {
  const report: HealthReport = {
    node: process.version,
    host_pid: process.pid,
    sqlite: { ok: false },
    endpoint: { base_url: '', model: '', reachable: false },
    key_present: false,
    audit: { db: dataDir, ok: false, rows: 0 },
    rules: await rulesHealth(config, cwd),
  };
  try {
    // Loaded here, not at start-up: the native module is what this check is about.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { sqliteVersion } = require('../store/db') as typeof import('../store/db');
    report.sqlite = { ok: true, version: sqliteVersion() };
  } catch (err) {
    report.sqlite = { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  if (report.sqlite.ok) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { auditHealth } = require('./audit') as typeof import('./audit');
    report.audit = auditHealth(dataDir);
  } else {
    report.audit.error = 'better-sqlite3 does not load';
  }
  // Started concurrently with the endpoint check; a failed start is a finding, not a failure of the check.
  const mcpDone = mcp
    ? mcp.ensureStarted({ restartDied: false }).then(() => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { mcpHealth } = require('../mcp/status') as typeof import('../mcp/status');
        report.mcp = mcpHealth(mcp.status());
      })
    : Promise.resolve();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sandboxDone = (require('./sandbox-probe') as typeof import('./sandbox-probe'))
    .sandboxHealth({ cwd, dataDir, config: config.sandbox ?? null })
    .then(
      (h) => (report.sandbox = h),
      (e: unknown) => (report.sandbox = { mode: 'workspace-write', available: false, summary: 'the sandbox check failed', error: e instanceof Error ? e.message : String(e) }),
    );
  await Promise.all([checkEndpoint(config, report), checkProviders(config, report)]);
  await mcpDone;
  await sandboxDone;
  return report;
}

async function checkEndpoint(config: HostConfig, report: HealthReport): Promise<void> {
  let provider;
  try {
    provider = await resolveProvider(config);
  } catch (err) {
    report.endpoint.error = err instanceof Error ? err.message : String(err);
    return;
  }
  report.key_present = provider.apiKey.length > 0;
  report.endpoint.base_url = provider.baseURL;
  report.endpoint.model = provider.model;
  try {
    const list = await fetchModelList(provider);
    report.endpoint.status = list.status;
    report.endpoint.reachable = true;
    if (list.ok) report.endpoint.models = list.data.length;
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    report.endpoint.error = `${err instanceof Error ? err.message : String(err)}${cause}`;
  }
}

async function checkProviders(config: HostConfig, report: HealthReport): Promise<void> {
  const { configuredProviders, defaultProviderName } = await import('./provider-config');
  let first: string | undefined;
  try {
    first = defaultProviderName(config);
  } catch {
    first = undefined;
  }
  const names = [...configuredProviders(config).keys()].sort((a, b) => (a === first ? -1 : b === first ? 1 : a.localeCompare(b)));
  report.providers = await Promise.all(
    names.map(async (name): Promise<ProviderHealth> => {
      const h: ProviderHealth = { name, base_url: '', model: '', key_present: false, reachable: false };
      try {
        const p = await resolveProvider(config, process.env, { provider: name });
        Object.assign(h, { base_url: p.baseURL, model: p.model, key_present: p.apiKey.length > 0 });
        const list = await fetchModelList(p);
        h.status = list.status;
        h.reachable = true;
        if (list.ok) {
          h.models = list.data.length;
          if (list.data.length > 0) h.model_listed = list.data.some((e) => (e as { id?: unknown } | null)?.id === p.model);
        }
      } catch (err) {
        const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
        h.error = `${err instanceof Error ? err.message : String(err)}${cause}`;
      }
      return h;
    }),
  );
}
