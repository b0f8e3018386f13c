import type Database from 'better-sqlite3';
import { openDatabase } from './db';
import { AuditRepository, type AuditVerification } from './audit';
import { TrashRepository } from './trash';
import { SessionRepository } from './sessions';
import { CheckpointRepository } from './checkpoints';

export { openDatabase, dbPathFor, DB_FILE_NAME, sqliteVersion } from './db';
export * from './audit';
export * from './trash';
export * from './sessions';
export * from './checkpoints';
export { MIGRATIONS, migrate } from './migrations';

/** The typed repositories over one database connection. */
export interface Store {
  readonly db: Database.Database;
  readonly audit: AuditRepository;
  readonly trash: TrashRepository;
  readonly sessions: SessionRepository;
  readonly checkpoints: CheckpointRepository;
  close(): void;
}

export function openStore(dbPathOrDataDir: string): Store {
  const db = openDatabase(dbPathOrDataDir);
  return {
    db,
    audit: new AuditRepository(db),
    trash: new TrashRepository(db),
    sessions: new SessionRepository(db),
    checkpoints: new CheckpointRepository(db),
    close: () => db.close(),
  };
}

/**
 * Re-checks the audit log hash chain of a database: a data folder or the .sqlite file, as a path or as
 * `{ dataDir }` (the options given to openWorkspace).
 */
export function verifyAuditLog(target: string | { dataDir: string }): AuditVerification {
  const store = openStore(typeof target === 'string' ? target : target.dataDir);
  try {
    return store.audit.verify();
  } finally {
    store.close();
  }
}
