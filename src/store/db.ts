import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from './migrations';

export const DB_FILE_NAME = 'caboose.sqlite';

/** `<dataDir>/caboose.sqlite`, or the path itself when it already names a file. */
export function dbPathFor(dbPathOrDataDir: string): string {
  try {
    if (fs.statSync(dbPathOrDataDir).isDirectory()) return path.join(dbPathOrDataDir, DB_FILE_NAME);
  } catch {
    // not there yet: treat a name ending in .sqlite/.db as a file, anything else as a data folder
  }
  return /\.(sqlite|db)$/.test(dbPathOrDataDir) ? dbPathOrDataDir : path.join(dbPathOrDataDir, DB_FILE_NAME);
}

/** Opens (creating if needed) the store database in WAL mode and brings its schema up to date. */
export function openDatabase(dbPathOrDataDir: string): Database.Database {
  const file = dbPathOrDataDir === ':memory:' ? ':memory:' : dbPathFor(dbPathOrDataDir);
  if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  // `synchronous` before the switch to WAL: on a new database the switch is then written without the
  // rollback journal's fsyncs (≈ 20 ms, far more on a busy disk, on the way to the first reply).
  db.pragma('synchronous = NORMAL');
  if (file !== ':memory:') db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

/** The SQLite version better-sqlite3 runs (proves the native module loads; for :checkhealth). */
export function sqliteVersion(): string {
  const db = new Database(':memory:');
  try {
    return (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
  } finally {
    db.close();
  }
}
