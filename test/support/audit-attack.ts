import type Database from 'better-sqlite3';
import { auditRowHash, AUDIT_GENESIS_HASH, type AuditEntry } from '../../src/store';

/**
 * Recomputes every audit row's prev_hash and hash, as an attacker re-chaining after an edit would (the
 * anchor outside the table is what catches it). Returns the new head hash.
 */
export function rechain(db: Database.Database): string {
  let prev = AUDIT_GENESIS_HASH;
  for (const r of db.prepare('SELECT * FROM audit_log ORDER BY id').all() as Record<string, unknown>[]) {
    const e: AuditEntry = {
      time: r.time as string, sessionId: r.session_id as string, tool: r.tool as string, operation: r.operation as string, path: r.path as string | null,
      toPath: r.to_path as string | null, beforeSha256: r.before_sha256 as string | null, afterSha256: r.after_sha256 as string | null, diff: r.diff as string | null,
      ok: r.ok === 1, errorKind: r.error_kind as string | null, workspace: r.workspace as string | null, details: r.details as string | null,
    };
    const hash = auditRowHash(prev, e);
    db.prepare('UPDATE audit_log SET prev_hash = ?, hash = ? WHERE id = ?').run(prev, hash, r.id);
    prev = hash;
  }
  return prev;
}
