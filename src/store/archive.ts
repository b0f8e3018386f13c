import type Database from 'better-sqlite3';

/** Cold storage: conversation segments that compaction replaced by a summary, kept for reference. */
export interface ArchivedSegment {
  id: number;
  sessionId: string;
  archivedAt: string;
  summary: string;
  messages: unknown[];
}

interface Row {
  id: number;
  session_id: string;
  archived_at: string;
  summary: string;
  messages_json: string;
}

export class ArchiveRepository {
  constructor(private readonly db: Database.Database) {}

  add(sessionId: string, summary: string, messages: unknown[]): number {
    const info = this.db
      .prepare('INSERT INTO conversation_archive (session_id, archived_at, summary, messages_json) VALUES (?, ?, ?, ?)')
      .run(sessionId, new Date().toISOString(), summary, JSON.stringify(messages));
    return Number(info.lastInsertRowid);
  }

  list(sessionId: string): ArchivedSegment[] {
    const rows = this.db.prepare('SELECT * FROM conversation_archive WHERE session_id = ? ORDER BY id').all(sessionId) as Row[];
    return rows.map((r) => ({
      id: r.id,
      sessionId: r.session_id,
      archivedAt: r.archived_at,
      summary: r.summary,
      messages: JSON.parse(r.messages_json) as unknown[],
    }));
  }
}
