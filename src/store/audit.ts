import { createHash } from 'node:crypto';
import fs from 'node:fs';
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
  /** First row whose stored hash or chain link does not match its content, or the first row added or rewritten outside caboose. */
  firstBadRowId?: number;
  /** What is wrong, in words (rows missing at the end, rows added, the anchor gone, …). */
  problem?: string;
}

/** The chain's anchor: how many rows it has and the hash of the last one. */
export interface AuditAnchor {
  rows: number;
  head: string;
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
  /** `<database>-anchor.json`: the anchor's second copy (none for an in-memory database). */
  readonly anchorFile: string | null;
  private lastAnchor: AuditAnchor | null = null;

  constructor(private readonly db: Database.Database) {
    this.anchorFile = db.memory || !db.name ? null : `${db.name}-anchor.json`;
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
        // A missing anchor row stays missing (verify reports it): it is never silently re-created.
        const a = db.prepare('UPDATE audit_anchor SET rows = rows + 1, head = ? WHERE id = 1 RETURNING rows, head').get(hash) as AuditAnchor | undefined;
        this.lastAnchor = a ?? null;
        return Number(info.lastInsertRowid);
      })
      .immediate;
    try {
      this.adoptAnchorFile();
    } catch {
      // a locked or read-only database: the next append writes the file
    }
  }

  /** The anchor row of the database (null when it was removed). */
  anchor(): AuditAnchor | null {
    return (this.db.prepare('SELECT rows, head FROM audit_anchor WHERE id = 1').get() as AuditAnchor | undefined) ?? null;
  }

  /** The anchor file's content (null when there is none or it cannot be parsed). */
  readAnchorFile(): AuditAnchor | null {
    if (!this.anchorFile) return null;
    try {
      const a = JSON.parse(fs.readFileSync(this.anchorFile, 'utf8')) as AuditAnchor;
      return typeof a.rows === 'number' && typeof a.head === 'string' ? a : null;
    } catch {
      return null;
    }
  }

  /** The first open of a database with an anchor table writes its file (later a missing file is reported). */
  private adoptAnchorFile(): void {
    if (!this.anchorFile) return;
    const row = this.db.prepare('SELECT rows, head, file_anchored FROM audit_anchor WHERE id = 1').get() as (AuditAnchor & { file_anchored: number }) | undefined;
    if (!row || row.file_anchored) return;
    if (!fs.existsSync(this.anchorFile)) this.writeAnchorFile({ rows: row.rows, head: row.head });
    this.db.prepare('UPDATE audit_anchor SET file_anchored = 1 WHERE id = 1').run();
  }

  private writeAnchorFile(a: AuditAnchor): void {
    if (!this.anchorFile) return;
    const tmp = `${this.anchorFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(a), { mode: 0o600 });
    fs.renameSync(tmp, this.anchorFile);
  }

  append(entry: AuditEntry): number {
    const e = { ...entry, diff: capAuditDiff(entry.diff), workspace: entry.workspace ?? null, details: entry.details ?? null };
    // SQLite stores text as UTF-8, where a lone surrogate becomes U+FFFD: hash what will be read back.
    for (const k of TEXT_FIELDS) if (typeof e[k] === 'string') (e as Record<string, unknown>)[k] = (e[k] as string).replace(LONE_SURROGATE, '\uFFFD');
    const id = this.appendTx(e);
    // After the commit; inside an outer transaction (appendAll) the file is written when it ends.
    if (!this.db.inTransaction && this.lastAnchor) this.writeAnchorFileQuiet(this.lastAnchor);
    return id;
  }

  private writeAnchorFileQuiet(a: AuditAnchor): void {
    try {
      // Another process may have appended since: the file never goes back to fewer rows.
      const cur = this.readAnchorFile();
      if (!cur || cur.rows < a.rows) this.writeAnchorFile(a);
    } catch {
      // the file lags behind; verify accepts a file that anchors a prefix of the chain
    }
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
    if (this.lastAnchor) this.writeAnchorFileQuiet(this.lastAnchor);
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

  /**
   * Recomputes the chain from the first row (any edited, inserted or removed row breaks it), then checks
   * it against its anchor: the row count and last hash kept in the database apart from the rows (rows
   * cut from the end, a wiped or re-created table, rows appended or a chain recomputed outside caboose
   * differ from it) and in the anchor file (which must anchor the chain or a prefix of it).
   */
  verify(): AuditVerification {
    let prev = AUDIT_GENESIS_HASH;
    let rows = 0;
    let firstBad: number | undefined;
    const file = this.readAnchorFile();
    let atFileRows: string | null = file && file.rows === 0 ? AUDIT_GENESIS_HASH : null;
    let firstId: number | undefined;
    const idAt = new Map<number, number>();
    const anchor = this.anchor();
    for (const raw of this.db.prepare('SELECT * FROM audit_log ORDER BY id ASC').iterate() as IterableIterator<RawRow>) {
      const r = fromRaw(raw);
      rows++;
      firstId ??= r.id;
      if (anchor && rows === anchor.rows + 1) idAt.set(rows, r.id);
      if (r.prevHash !== prev || auditRowHash(prev, r) !== r.hash) {
        firstBad = r.id;
        break;
      }
      prev = r.hash;
      if (file && rows === file.rows) atFileRows = r.hash;
    }
    if (firstBad !== undefined) return { ok: false, rows, firstBadRowId: firstBad, problem: `row ${firstBad} does not match its hash or its link to the row before it (edited, inserted or removed outside caboose)` };
    const fail = (problem: string, firstBadRowId?: number): AuditVerification => ({ ok: false, rows, problem, ...(firstBadRowId !== undefined ? { firstBadRowId } : {}) });
    if (!anchor) return fail('the anchor of the audit log (its row count and last hash) was removed from the database', firstId);
    if (rows < anchor.rows) return fail(rows === 0 ? `every row was removed (the log had ${anchor.rows})` : `${anchor.rows - rows} row(s) were removed from the end (the log had ${anchor.rows})`);
    if (rows > anchor.rows) return fail(`${rows - anchor.rows} row(s) were added outside caboose after row ${anchor.rows}`, idAt.get(anchor.rows + 1));
    if (prev !== anchor.head) return fail('the chain was recomputed outside caboose (its last hash is not the anchored one)', firstId);
    if (this.anchorFile) {
      if (!file) {
        const adopted = (this.db.prepare('SELECT file_anchored FROM audit_anchor WHERE id = 1').get() as { file_anchored: number } | undefined)?.file_anchored;
        if (adopted) return fail(`the anchor file ${this.anchorFile} was removed`, firstId);
      } else if (file.rows > rows) {
        return fail(rows === 0 ? `every row was removed, or the database re-created (the anchor file counts ${file.rows} rows)` : `${file.rows - rows} row(s) were removed (the anchor file counts ${file.rows})`);
      } else if (atFileRows !== file.head) {
        return fail(`the first ${file.rows} rows are not the ones the anchor file recorded (rewritten outside caboose)`, firstId);
      }
    }
    return { ok: true, rows };
  }
}
