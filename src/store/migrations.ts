import type Database from 'better-sqlite3';

/** Numbered, append-only schema migrations. Never edit a shipped one; add the next number. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'audit_log_and_trash',
    sql: `
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  time TEXT NOT NULL,
  session_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  operation TEXT NOT NULL,
  path TEXT,
  to_path TEXT,
  before_sha256 TEXT,
  after_sha256 TEXT,
  diff TEXT,
  ok INTEGER NOT NULL,
  error_kind TEXT,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log rows are immutable'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log rows are immutable'); END;

CREATE TABLE trash (
  id TEXT PRIMARY KEY,
  original_path TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL,
  mode INTEGER NOT NULL,
  deleted_at TEXT NOT NULL,
  session_id TEXT NOT NULL,
  restored_at TEXT,
  restored_to TEXT
);
CREATE INDEX trash_deleted_at ON trash(deleted_at);
`,
  },
  {
    version: 2,
    name: 'conversation_archive',
    sql: `
CREATE TABLE conversation_archive (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  archived_at TEXT NOT NULL,
  summary TEXT NOT NULL,
  messages_json TEXT NOT NULL
);
CREATE INDEX conversation_archive_session ON conversation_archive(session_id, id);
`,
  },
  {
    // Only adds columns (old rows keep NULL there and their hash) and its own index.
    version: 4,
    name: 'audit_log_workspace_and_details',
    sql: `
ALTER TABLE audit_log ADD COLUMN workspace TEXT;
ALTER TABLE audit_log ADD COLUMN details TEXT;
CREATE INDEX audit_log_workspace ON audit_log(workspace, id);
`,
  },
];

/** Applies every migration newer than `PRAGMA user_version`, each in its own transaction. */
export function migrate(db: Database.Database): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  let version = current;
  for (const m of MIGRATIONS) {
    if (m.version <= version) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.pragma(`user_version = ${m.version}`);
    })();
    version = m.version;
  }
  return version;
}
