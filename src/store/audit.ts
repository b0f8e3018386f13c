import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';

/** Longest diff stored per audit row. */
export const AUDIT_DIFF_MAX_BYTES = 64 * 1024;
export const AUDIT_GENESIS_HASH = '0'.repeat(64);

export interface AuditEntry {
  time: string;
  sessionId: string;
  tool: string;
  operation: string;
  path: string | null;
  toPath: string | null;
  beforeSha256: string | null;
  afterSha256: string | null;
  diff: string | null;
  ok: boolean;
  errorKind: string | null;
  /** Realpath of the workspace root the row is about (NULL in rows written before schema 4). */
  workspace?: string | null;
  /** JSON with what the columns do not hold (a command's line, cwd, exit status, files it changed). */
  details?: string | null;
}

export interface AuditRow extends AuditEntry {
  id: number;
  workspace: string | null;
  details: string | null;
  prevHash: string;
  hash: string;
}

export interface AuditVerification {
  ok: boolean;
  rows: number;
  /** First row whose stored hash or chain link does not match its content. */
  firstBadRowId?: number;
}

interface RawRow {
  id: number;
  time: string;
  session_id: string;
  tool: string;
  operation: string;
  path: string | null;
  to_path: string | null;
  before_sha256: string | null;
  after_sha256: string | null;
  diff: string | null;
  ok: number;
  error_kind: string | null;
  workspace: string | null;
  details: string | null;
  prev_hash: string;
  hash: string;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const TEXT_FIELDS = ['time', 'sessionId', 'tool', 'operation', 'path', 'toPath', 'beforeSha256', 'afterSha256', 'diff', 'errorKind'] as const;

/** Cuts a diff to at most AUDIT_DIFF_MAX_BYTES (UTF-8), marking the cut. */
export function capAuditDiff(diff: string | null): string | null {
  if (diff === null) return null;
  if (Buffer.byteLength(diff, 'utf8') <= AUDIT_DIFF_MAX_BYTES) return diff;
  const marker = '\n[diff truncated at 64 KiB]\n';
  const room = AUDIT_DIFF_MAX_BYTES - Buffer.byteLength(marker, 'utf8');
  return Buffer.from(diff, 'utf8').subarray(0, room).toString('utf8').replace(/\uFFFD$/, '') + marker;
}

/**
 * Canonical JSON of the hashed fields: fixed key order, nulls explicit. `workspace` and `details` (schema 4)
 * join the list when either is set, so rows written before them keep their hash.
 */
function canonical(e: AuditEntry): string {
  const fields: unknown[] = [
    e.time,
    e.sessionId,
    e.tool,
    e.operation,
    e.path,
    e.toPath,
    e.beforeSha256,
    e.afterSha256,
    e.diff,
    e.ok ? 1 : 0,
    e.errorKind,
  ];
  const workspace = e.workspace ?? null;
  const details = e.details ?? null;
  if (workspace !== null || details !== null) fields.push(workspace, details);
  return JSON.stringify(fields);
}

export function auditRowHash(prevHash: string, e: AuditEntry): string {
  return createHash('sha256').update(prevHash).update(canonical(e)).digest('hex');
}

function fromRaw(r: RawRow): AuditRow {
  return {
    id: r.id,
    time: r.time,
    sessionId: r.session_id,
    tool: r.tool,
    operation: r.operation,
    path: r.path,
    toPath: r.to_path,
    beforeSha256: r.before_sha256,
    afterSha256: r.after_sha256,
    diff: r.diff,
    ok: r.ok === 1,
    errorKind: r.error_kind,
    workspace: r.workspace,
    details: r.details,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}

/** Append-only, hash-chained log of every write attempt. Rows are immutable (SQLite triggers). */
export class AuditRepository {
  private readonly insertStmt: Database.Statement;
  private readonly lastStmt: Database.Statement;
  private readonly appendTx: (e: AuditEntry) => number;

  constructor(private readonly db: Database.Database) {
    this.insertStmt = db.prepare(
      `INSERT INTO audit_log (time, session_id, tool, operation, path, to_path, before_sha256, after_sha256, diff, ok, error_kind, workspace, details, prev_hash, hash)
       VALUES (@time, @sessionId, @tool, @operation, @path, @toPath, @beforeSha256, @afterSha256, @diff, @ok, @errorKind, @workspace, @details, @prevHash, @hash)`,
    );
    this.lastStmt = db.prepare('SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1');
    // IMMEDIATE: two processes appending to one database still form a single chain.
    this.appendTx = db
      .transaction((e: AuditEntry) => {
        const last = this.lastStmt.get() as { hash: string } | undefined;
        const prevHash = last?.hash ?? AUDIT_GENESIS_HASH;
        const hash = auditRowHash(prevHash, e);
        const info = this.insertStmt.run({ ...e, ok: e.ok ? 1 : 0, prevHash, hash });
        return Number(info.lastInsertRowid);
      })
      .immediate;
  }

  append(entry: AuditEntry): number {
    const e = { ...entry, diff: capAuditDiff(entry.diff), workspace: entry.workspace ?? null, details: entry.details ?? null };
    // SQLite stores text as UTF-8, where a lone surrogate becomes U+FFFD: hash what will be read back.
    for (const k of TEXT_FIELDS) if (typeof e[k] === 'string') (e as Record<string, unknown>)[k] = (e[k] as string).replace(LONE_SURROGATE, '\uFFFD');
    return this.appendTx(e);
  }

  /**
   * Appends rows kept aside while the database could not take them, in one transaction; a row already
   * in the log (same time, session, tool, operation, path: a flush cut off before its spool was removed) is skipped.
   */
  appendAll(entries: AuditEntry[]): void {
    if (entries.length === 0) return;
    const seen = this.db.prepare('SELECT 1 FROM audit_log WHERE time = ? AND session_id = ? AND tool = ? AND operation = ? AND path IS ? LIMIT 1');
    this.db
      .transaction(() => {
        for (const e of entries) {
          if (seen.get(e.time, e.sessionId, e.tool, e.operation, e.path ?? null)) continue;
          this.append(e);
        }
      })
      .immediate();
  }

  /** The last `limit` rows (default 1000), oldest first; optionally of one session and/or one workspace. */
  list(opts: { limit?: number; sessionId?: string; workspace?: string } = {}): AuditRow[] {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (opts.sessionId !== undefined) {
      where.push('session_id = ?');
      params.push(opts.sessionId);
    }
    if (opts.workspace !== undefined) {
      where.push('workspace = ?');
      params.push(opts.workspace);
    }
    const sql = `SELECT * FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(...params, opts.limit ?? 1000) as RawRow[];
    return rows.map(fromRaw).reverse();
  }

  get(id: number): AuditRow | undefined {
    const raw = this.db.prepare('SELECT * FROM audit_log WHERE id = ?').get(id) as RawRow | undefined;
    return raw ? fromRaw(raw) : undefined;
  }

  /** Recomputes the chain from the first row; any edited, inserted or removed row breaks it. */
  verify(): AuditVerification {
    let prev = AUDIT_GENESIS_HASH;
    let rows = 0;
    for (const raw of this.db.prepare('SELECT * FROM audit_log ORDER BY id ASC').iterate() as IterableIterator<RawRow>) {
      const r = fromRaw(raw);
      rows++;
      if (r.prevHash !== prev || auditRowHash(prev, r) !== r.hash) return { ok: false, rows, firstBadRowId: r.id };
      prev = r.hash;
    }
    return { ok: true, rows };
  }
}
