import type Database from 'better-sqlite3';

/** One user message's file changes: the pre-image of every file it touched (see workspace/checkpoints.ts). */
export interface Checkpoint {
  id: number;
  sessionId: string;
  /** Workspace root the paths are relative to. */
  root: string;
  messageId: string | null;
  /** The user's message (as typed). */
  message: string;
  createdAt: string;
  rewoundAt: string | null;
}

export interface CheckpointFile {
  checkpointId: number;
  /** Workspace-relative path. */
  path: string;
  /** The content before the turn's first change to it (a blob); null = the file did not exist. */
  beforeSha256: string | null;
  beforeMode: number | null;
  /** What the turn's last change left: the sha256 the file (or unsaved buffer) then had; null = missing. */
  afterSha256: string | null;
}

export interface CheckpointFileRecord {
  path: string;
  before: { sha256: string; mode: number } | null;
  afterSha256: string | null;
}

interface RawCheckpoint {
  id: number;
  session_id: string;
  root: string;
  message_id: string | null;
  message: string;
  created_at: string;
  rewound_at: string | null;
}

interface RawFile {
  checkpoint_id: number;
  path: string;
  before_sha256: string | null;
  before_mode: number | null;
  after_sha256: string | null;
}

const fromRaw = (r: RawCheckpoint): Checkpoint => ({
  id: r.id,
  sessionId: r.session_id,
  root: r.root,
  messageId: r.message_id,
  message: r.message,
  createdAt: r.created_at,
  rewoundAt: r.rewound_at,
});

const fileFromRaw = (r: RawFile): CheckpointFile => ({
  checkpointId: r.checkpoint_id,
  path: r.path,
  beforeSha256: r.before_sha256,
  beforeMode: r.before_mode,
  afterSha256: r.after_sha256,
});

/** Checkpoints, their files and the content-addressed pre-images (each distinct content stored once). */
export class CheckpointRepository {
  private readonly recordTx: (id: number | null, meta: Omit<Checkpoint, 'id' | 'rewoundAt'>, files: CheckpointFileRecord[]) => number;

  constructor(private readonly db: Database.Database) {
    const insertCheckpoint = db.prepare(
      `INSERT INTO checkpoints (session_id, root, message_id, message, created_at) VALUES (@sessionId, @root, @messageId, @message, @createdAt)`,
    );
    // The first pre-image of a path stays; the after-state follows every write.
    const upsertFile = db.prepare(
      `INSERT INTO checkpoint_files (checkpoint_id, path, before_sha256, before_mode, after_sha256) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (checkpoint_id, path) DO UPDATE SET after_sha256 = excluded.after_sha256`,
    );
    this.recordTx = db.transaction((id, meta, files) => {
      const cid = id ?? Number(insertCheckpoint.run(meta).lastInsertRowid);
      for (const f of files) upsertFile.run(cid, f.path, f.before?.sha256 ?? null, f.before?.mode ?? null, f.afterSha256);
      return cid;
    });
  }

  /** Stores a pre-image once per content. */
  putBlob(sha256: string, bytes: Buffer): void {
    this.db
      .prepare('INSERT OR IGNORE INTO checkpoint_blobs (sha256, size, content, stored_at) VALUES (?, ?, ?, ?)')
      .run(sha256, bytes.length, bytes, new Date().toISOString());
  }

  blob(sha256: string): Buffer | undefined {
    const r = this.db.prepare('SELECT content FROM checkpoint_blobs WHERE sha256 = ?').get(sha256) as { content: Buffer } | undefined;
    return r?.content;
  }

  blobCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM checkpoint_blobs').get() as { n: number }).n;
  }

  /**
   * Records files of a checkpoint in one transaction, creating the checkpoint first when `id` is null.
   * Returns the checkpoint's id.
   */
  record(id: number | null, meta: Omit<Checkpoint, 'id' | 'rewoundAt'>, files: CheckpointFileRecord[]): number {
    return this.recordTx(id, meta, files);
  }

  get(id: number): Checkpoint | undefined {
    const r = this.db.prepare('SELECT * FROM checkpoints WHERE id = ?').get(id) as RawCheckpoint | undefined;
    return r && fromRaw(r);
  }

  /** A session's checkpoints, oldest first. */
  list(sessionId: string): Checkpoint[] {
    return (this.db.prepare('SELECT * FROM checkpoints WHERE session_id = ? ORDER BY id').all(sessionId) as RawCheckpoint[]).map(fromRaw);
  }

  /** The files of a checkpoint in the order the turn first touched them. */
  files(checkpointId: number): CheckpointFile[] {
    return (this.db.prepare('SELECT * FROM checkpoint_files WHERE checkpoint_id = ? ORDER BY rowid').all(checkpointId) as RawFile[]).map(fileFromRaw);
  }

  markRewound(ids: number[], at: string): void {
    const stmt = this.db.prepare('UPDATE checkpoints SET rewound_at = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const id of ids) stmt.run(at, id);
    })();
  }

  /**
   * Removes checkpoints created before `cutoffIso` and the pre-images no checkpoint needs any more (kept
   * for an hour at least: a write may be between storing its pre-image and recording it). Returns how
   * many checkpoints went.
   */
  purge(cutoffIso: string, now = new Date()): number {
    const graceIso = new Date(now.getTime() - 3_600_000).toISOString();
    return this.db.transaction(() => {
      this.db.prepare('DELETE FROM checkpoint_files WHERE checkpoint_id IN (SELECT id FROM checkpoints WHERE created_at < ?)').run(cutoffIso);
      const n = this.db.prepare('DELETE FROM checkpoints WHERE created_at < ?').run(cutoffIso).changes;
      this.db
        .prepare('DELETE FROM checkpoint_blobs WHERE stored_at < ? AND sha256 NOT IN (SELECT before_sha256 FROM checkpoint_files WHERE before_sha256 IS NOT NULL)')
        .run(graceIso);
      return n;
    })();
  }
}
