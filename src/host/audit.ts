/** What :CabooseAudit and :checkhealth read from the audit log of the data folder's database. */
import fs from 'node:fs';
import path from 'node:path';
import { dbPathFor, openStore, type AuditRow } from '../store';

/** One row as :CabooseAudit lists it (no diff: `audit.diff` fetches one). */
export interface AuditListEntry {
  id: number;
  time: string;
  /** `YYYY-MM-DD HH:MM:SS` in the host's (and Neovim's) time zone. */
  local_time: string;
  session: string;
  tool: string;
  operation: string;
  path?: string;
  to_path?: string;
  ok: boolean;
  error_kind?: string;
  has_diff: boolean;
  /** The row's details JSON, parsed (a command's line, cwd, exit status and files). */
  details?: Record<string, unknown>;
  /** The chain does not verify from this row on (it is the first broken row, or comes after it). */
  broken?: boolean;
}

/** The chain check :CabooseAudit shows above its rows (the same as :checkhealth's). */
export interface AuditListVerification {
  ok: boolean;
  rows: number;
  first_bad_row_id?: number;
  problem?: string;
}

export interface AuditHealth {
  /** The database file checked. */
  db: string;
  ok: boolean;
  rows: number;
  first_bad_row_id?: number;
  /** What is wrong, in words (rows removed at the end, rows added, the anchor gone, …). */
  problem?: string;
  /** No database yet (nothing was ever recorded). */
  missing?: boolean;
  error?: string;
}

const pad = (n: number): string => String(n).padStart(2, '0');

function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function parseDetails(json: string | null): Record<string, unknown> | undefined {
  if (json === null) return undefined;
  try {
    const v: unknown = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function toEntry(r: AuditRow): AuditListEntry {
  const e: AuditListEntry = {
    id: r.id,
    time: r.time,
    local_time: localTime(r.time),
    session: r.sessionId,
    tool: r.tool,
    operation: r.operation,
    ok: r.ok,
    has_diff: r.diff !== null && r.diff !== '',
  };
  if (r.path !== null) e.path = r.path;
  if (r.toPath !== null) e.to_path = r.toPath;
  if (r.errorKind !== null) e.error_kind = r.errorKind;
  const details = parseDetails(r.details);
  if (details) e.details = details;
  return e;
}

/** The workspace key rows carry: the realpath of the folder (as FileWorkspace records it). */
export function workspaceKey(cwd: string): string {
  try {
    return fs.realpathSync.native(path.resolve(cwd));
  } catch {
    return path.resolve(cwd);
  }
}

/** The last `limit` rows about the workspace at `cwd`, newest first. */
export function listAuditEntries(dataDir: string, cwd: string, limit: number): { workspace: string; entries: AuditListEntry[]; verification: AuditListVerification } {
  const workspace = workspaceKey(cwd);
  const store = openStore(dataDir);
  try {
    // The whole chain is checked (as :checkhealth does): rows from the first broken one on are marked.
    const v = store.audit.verify();
    const verification: AuditListVerification = { ok: v.ok, rows: v.rows };
    if (v.firstBadRowId !== undefined) verification.first_bad_row_id = v.firstBadRowId;
    if (v.problem !== undefined) verification.problem = v.problem;
    const entries = store.audit.list({ workspace, limit }).reverse().map((r) => {
      const e = toEntry(r);
      if (v.firstBadRowId !== undefined && r.id >= v.firstBadRowId) e.broken = true;
      return e;
    });
    return { workspace, entries, verification };
  } finally {
    store.close();
  }
}

/** One row's diff (null when it has none or the row does not exist). */
export function auditDiff(dataDir: string, id: number): { id: number; diff: string | null } {
  const store = openStore(dataDir);
  try {
    return { id, diff: store.audit.get(id)?.diff ?? null };
  } finally {
    store.close();
  }
}

/** Re-checks the hash chain of the data folder's audit log (without creating a database that is not there). */
export function auditHealth(dataDir: string): AuditHealth {
  const db = dbPathFor(path.resolve(dataDir));
  if (!fs.existsSync(db)) return { db, ok: true, rows: 0, missing: true };
  try {
    const store = openStore(db);
    try {
      const v = store.audit.verify();
      return { db, ok: v.ok, rows: v.rows, ...(v.firstBadRowId !== undefined ? { first_bad_row_id: v.firstBadRowId } : {}), ...(v.problem ? { problem: v.problem } : {}) };
    } finally {
      store.close();
    }
  } catch (err) {
    return { db, ok: false, rows: 0, error: err instanceof Error ? err.message : String(err) };
  }
}
