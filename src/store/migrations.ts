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
    // No longer written (compaction archives into session_messages, version 3); kept: shipped schema.
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
    version: 3,
    name: 'sessions',
    sql: `
CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  cwd TEXT NOT NULL,
  title TEXT,
  title_source TEXT,
  model TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_cwd ON sessions(cwd, updated_at);
CREATE INDEX sessions_updated ON sessions(updated_at);

-- Small columns first, the large ones last: reading a row's display never walks a tool output's pages.
CREATE TABLE session_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  role TEXT,
  in_context INTEGER NOT NULL DEFAULT 1,
  partial INTEGER NOT NULL DEFAULT 0,
  archived_by INTEGER,
  created_at INTEGER NOT NULL,
  display_json TEXT,
  text TEXT NOT NULL DEFAULT '',
  message_json TEXT
);
CREATE INDEX session_messages_session ON session_messages(session_id, id);
-- Covers what reopening a session reads for its transcript (no table row, no tool output, is touched).
CREATE INDEX session_messages_display ON session_messages(session_id, id, kind, role, partial, display_json);

CREATE VIRTUAL TABLE session_messages_fts USING fts5(text, content='session_messages', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER session_messages_fts_ai AFTER INSERT ON session_messages BEGIN
  INSERT INTO session_messages_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER session_messages_fts_ad AFTER DELETE ON session_messages BEGIN
  INSERT INTO session_messages_fts(session_messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER session_messages_fts_au AFTER UPDATE OF text ON session_messages BEGIN
  INSERT INTO session_messages_fts(session_messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO session_messages_fts(rowid, text) VALUES (new.id, new.text);
END;
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
  {
    version: 5,
    name: 'checkpoints',
    sql: `
CREATE TABLE checkpoints (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  root TEXT NOT NULL,
  message_id TEXT,
  message TEXT NOT NULL,
  created_at TEXT NOT NULL,
  rewound_at TEXT
);
CREATE INDEX checkpoints_session ON checkpoints(session_id, id);
CREATE TABLE checkpoint_files (
  checkpoint_id INTEGER NOT NULL,
  path TEXT NOT NULL,
  before_sha256 TEXT,
  before_mode INTEGER,
  after_sha256 TEXT,
  PRIMARY KEY (checkpoint_id, path)
);
CREATE INDEX checkpoint_files_before ON checkpoint_files(before_sha256);
CREATE TABLE checkpoint_blobs (
  sha256 TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  content BLOB NOT NULL,
  stored_at TEXT NOT NULL
);
`,
  },
  {
    // Issue 18: the trash is per workspace. Older rows get the folder of the session that deleted them.
    version: 6,
    name: 'trash_workspace',
    sql: `
ALTER TABLE trash ADD COLUMN workspace TEXT;
UPDATE trash SET workspace = (SELECT cwd FROM sessions WHERE sessions.id = trash.session_id);
CREATE INDEX trash_workspace ON trash(workspace, deleted_at);
`,
  },
  {
    // Issue 18: the audit chain is anchored (row count and last hash kept apart from the rows, and in a
    // file beside the database), so truncation, wipes and re-created tables are detected.
    version: 7,
    name: 'audit_anchor',
    sql: `
CREATE TABLE audit_anchor (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rows INTEGER NOT NULL,
  head TEXT NOT NULL,
  file_anchored INTEGER NOT NULL DEFAULT 0
);
INSERT INTO audit_anchor (id, rows, head)
  SELECT 1, (SELECT COUNT(*) FROM audit_log), COALESCE((SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1), '${'0'.repeat(64)}');
CREATE TRIGGER audit_anchor_no_delete BEFORE DELETE ON audit_anchor
BEGIN SELECT RAISE(ABORT, 'the audit anchor cannot be removed'); END;
`,
  },
  {
    // The session's token usage (its subagents' included): the winbar's Σ survives reopening the session.
    version: 8,
    name: 'session_usage',
    sql: `
ALTER TABLE sessions ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    // Issue 22: edit-and-resend forks a chat into a new session; the fork names the session it came from
    // (and the row it was cut before). The earlier branch stays as it was.
    version: 9,
    name: 'session_forks',
    sql: `
ALTER TABLE sessions ADD COLUMN forked_from TEXT;
ALTER TABLE sessions ADD COLUMN forked_at INTEGER;
`,
  },
  {
    // Issue 24: a streaming reply's row was re-indexed whole at every partial write (every 200 ms: the
    // FTS trigger deleted and re-tokenized all the text so far, quadratic in the reply's length). Rows now
    // say whether their text is in the search index (`indexed`; every existing row is, as the old triggers
    // indexed everything): a partial row is written unindexed, its finish indexes it once, and a search
    // first indexes what is still pending (a reply streaming now, or one a crash cut), so search finds all
    // it found before. The triggers only touch the index for indexed rows; they always remove exactly the
    // text they indexed (FTS5 external content needs the old values).
    version: 10,
    name: 'session_search_final_text',
    sql: `
ALTER TABLE session_messages ADD COLUMN indexed INTEGER NOT NULL DEFAULT 1;
CREATE INDEX session_messages_unindexed ON session_messages(id) WHERE indexed = 0;
DROP TRIGGER session_messages_fts_ai;
DROP TRIGGER session_messages_fts_ad;
DROP TRIGGER session_messages_fts_au;
CREATE TRIGGER session_messages_fts_ai AFTER INSERT ON session_messages WHEN new.indexed = 1 BEGIN
  INSERT INTO session_messages_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER session_messages_fts_ad AFTER DELETE ON session_messages WHEN old.indexed = 1 BEGIN
  INSERT INTO session_messages_fts(session_messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER session_messages_fts_au AFTER UPDATE OF text, indexed ON session_messages WHEN old.indexed = 1 OR new.indexed = 1 BEGIN
  INSERT INTO session_messages_fts(session_messages_fts, rowid, text) SELECT 'delete', old.id, old.text WHERE old.indexed = 1;
  INSERT INTO session_messages_fts(rowid, text) SELECT new.id, new.text WHERE new.indexed = 1;
END;
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
