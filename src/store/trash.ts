import type Database from 'better-sqlite3';

export interface TrashEntry {
  id: string;
  /** Workspace-relative path the file had when it was deleted. */
  originalPath: string;
  sha256: string;
  size: number;
  mode: number;
  deletedAt: string;
  sessionId: string;
  restoredAt: string | null;
  restoredTo: string | null;
  /** Realpath of the workspace the file was deleted from (NULL: deleted before schema 6 by an unknown session). */
  workspace: string | null;
}

interface RawTrash {
  id: string;
  original_path: string;
  sha256: string;
  size: number;
  mode: number;
  deleted_at: string;
  session_id: string;
  restored_at: string | null;
  restored_to: string | null;
  workspace: string | null;
}

function fromRaw(r: RawTrash): TrashEntry {
  return {
    id: r.id,
    originalPath: r.original_path,
    sha256: r.sha256,
    size: r.size,
    mode: r.mode,
    deletedAt: r.deleted_at,
    sessionId: r.session_id,
    restoredAt: r.restored_at,
    restoredTo: r.restored_to,
    workspace: r.workspace ?? null,
  };
}

/** Metadata of trashed files; the content lives in files under `<dataDir>/trash/`. */
export class TrashRepository {
  constructor(private readonly db: Database.Database) {}

  insert(e: Omit<TrashEntry, 'restoredAt' | 'restoredTo' | 'workspace'> & { workspace?: string | null }): void {
    this.db
      .prepare(
        `INSERT INTO trash (id, original_path, sha256, size, mode, deleted_at, session_id, workspace)
         VALUES (@id, @originalPath, @sha256, @size, @mode, @deletedAt, @sessionId, @workspace)`,
      )
      .run({ ...e, workspace: e.workspace ?? null });
  }

  get(id: string): TrashEntry | undefined {
    const r = this.db.prepare('SELECT * FROM trash WHERE id = ?').get(id) as RawTrash | undefined;
    return r && fromRaw(r);
  }

  /** Newest first; restored entries are included only when asked; only one workspace's when given. */
  list(opts: { includeRestored?: boolean; workspace?: string } = {}): TrashEntry[] {
    const where: string[] = [];
    const params: string[] = [];
    if (!opts.includeRestored) where.push('restored_at IS NULL');
    if (opts.workspace !== undefined) {
      where.push('workspace = ?');
      params.push(opts.workspace);
    }
    const sql = `SELECT * FROM trash ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY deleted_at DESC, rowid DESC`;
    return (this.db.prepare(sql).all(...params) as RawTrash[]).map(fromRaw);
  }

  markRestored(id: string, restoredTo: string, at: string): void {
    this.db.prepare('UPDATE trash SET restored_at = ?, restored_to = ? WHERE id = ?').run(at, restoredTo, id);
  }

  remove(id: string): void {
    this.db.prepare('DELETE FROM trash WHERE id = ?').run(id);
  }

  /** Entries deleted before `cutoffIso`. */
  olderThan(cutoffIso: string): TrashEntry[] {
    return (this.db.prepare('SELECT * FROM trash WHERE deleted_at < ?').all(cutoffIso) as RawTrash[]).map(fromRaw);
  }
}
