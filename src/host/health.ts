import type { HostConfig } from './protocol';
import { resolveProvider } from './provider-config';
import { fetchModelList } from './model-list';
import type { AuditHealth } from './audit';
import type { McpPool } from '../mcp/client-pool';
import type { McpHealth } from '../mcp/status';

export interface HealthReport {
  node: string;
  host_pid: number;
  sqlite: { ok: boolean; version?: string; error?: string };
  endpoint: { base_url: string; model: string; reachable: boolean; status?: number; error?: string; models?: number };
  key_present: boolean;
  /** The audit log's hash chain in the data folder's database. */
  audit: AuditHealth;
  /** Each configured MCP server (started here when it was not yet); absent without any. */
  mcp?: McpHealth[];
}

/** Facts for :checkhealth caboose. Never includes the key itself. */
export async function checkHealth(config: HostConfig, dataDir: string, mcp?: McpPool | null): Promise<HealthReport> {
  const report: HealthReport = {
    node: process.version,
    host_pid: process.pid,
    sqlite: { ok: false },
    endpoint: { base_url: '', model: '', reachable: false },
    key_present: false,
    audit: { db: dataDir, ok: false, rows: 0 },
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
  await checkEndpoint(config, report);
  await mcpDone;
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
