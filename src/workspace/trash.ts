import { randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { TrashEntry, TrashRepository } from '../store/trash';
import { sha256Hex } from './file-access';

export const DEFAULT_TRASH_RETENTION_DAYS = 30;

/** Deleted files: content under `<dataDir>/trash/<id>`, metadata in the store. */
export class WorkspaceTrash {
  readonly dir: string;

  constructor(
    dataDir: string,
    private readonly repo: TrashRepository,
    readonly retentionDays: number = DEFAULT_TRASH_RETENTION_DAYS,
  ) {
    this.dir = path.join(dataDir, 'trash');
  }

  /** Trashed files not yet restored, newest first (for :CabooseRestore). */
  list(opts: { includeRestored?: boolean } = {}): TrashEntry[] {
    return this.repo.list(opts);
  }

  get(id: string): TrashEntry | undefined {
    return this.repo.get(id);
  }

  newId(): string {
    return `${Date.now().toString(36)}-${randomBytes(5).toString('hex')}`;
  }

  contentPath(id: string): string {
    return path.join(this.dir, id);
  }

  /** Step 1 of a delete: the content is safely stored (fsynced) before the file goes away. */
  async stash(id: string, bytes: Buffer): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true });
    const fh = await fsp.open(this.contentPath(id), 'wx', 0o600);
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }

  /** Step 2, after the file was removed: record the metadata. */
  record(e: Omit<TrashEntry, 'restoredAt' | 'restoredTo'>): void {
    this.repo.insert(e);
  }

  /** Undo a stash whose delete failed. */
  async discard(id: string): Promise<void> {
    await fsp.unlink(this.contentPath(id)).catch(() => undefined);
  }

  /** The stored bytes, checked against the recorded sha256 (null when missing or corrupt). */
  async read(entry: TrashEntry): Promise<Buffer | null> {
    try {
      const bytes = await fsp.readFile(this.contentPath(entry.id));
      return sha256Hex(bytes) === entry.sha256 ? bytes : null;
    } catch {
      return null;
    }
  }

  async markRestored(id: string, restoredTo: string): Promise<void> {
    this.repo.markRestored(id, restoredTo, new Date().toISOString());
    await this.discard(id);
  }

  /** Removes entries older than the retention (content and metadata). Returns how many. */
  async purge(now = new Date()): Promise<number> {
    const cutoff = new Date(now.getTime() - this.retentionDays * 86_400_000).toISOString();
    const old = this.repo.olderThan(cutoff);
    for (const e of old) {
      await this.discard(e.id);
      this.repo.remove(e.id);
    }
    return old.length;
  }
}
