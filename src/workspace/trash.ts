import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import type { TrashEntry, TrashRepository } from '../store/trash';
import { STALE_FILE_ACTION, ToolError } from './errors';
import { sha256OfFileSync } from './file-sha';
import { fsyncDir } from './commit-disk';

export const DEFAULT_TRASH_RETENTION_DAYS = 30;

/** What is known of a deleted file before it goes (kept beside its content as `<id>.json`). */
export interface StashMeta {
  originalPath: string;
  sha256: string;
  mode: number;
}

interface Sidecar extends StashMeta {
  id: string;
  workspace: string;
  size: number;
  deletedAt: string;
  sessionId: string;
}

/** What opening the trash found of deletes a crash or a locked database cut off. */
export interface TrashRecovery {
  /** Content whose file was deleted but whose row was missing: now listed. */
  adopted: string[];
  /** Content stashed for a delete that never happened (the file is still there): removed. */
  dropped: string[];
}

/**
 * Deleted files of one workspace: content under `<dataDir>/trash/<id>`, metadata in the store (rows
 * carry the workspace root: each workspace lists and restores only its own). A delete stores the
 * content and a `<id>.json` description (both fsynced) before the file goes, so at every instant the
 * file is either in place or restorable; the row follows, and a row a crash or a locked database
 * prevented is added when the workspace is next opened (`recover`).
 */
export class WorkspaceTrash {
  readonly dir: string;

  constructor(
    dataDir: string,
    private readonly repo: TrashRepository,
    readonly retentionDays: number = DEFAULT_TRASH_RETENTION_DAYS,
    readonly root: string | null = null,
    private readonly sessionId: string = 'unknown',
  ) {
    this.dir = path.join(dataDir, 'trash');
  }

  /** This workspace's trashed files not yet restored, newest first (for :CabooseRestore). */
  list(opts: { includeRestored?: boolean } = {}): TrashEntry[] {
    return this.repo.list({ ...opts, ...(this.root !== null ? { workspace: this.root } : {}) });
  }

  /** An entry of this workspace (another workspace's id is not found). */
  get(id: string): TrashEntry | undefined {
    const e = this.repo.get(id);
    if (!e || (this.root !== null && e.workspace !== this.root)) return undefined;
    return e;
  }

  newId(): string {
    return `${Date.now().toString(36)}-${randomBytes(5).toString('hex')}`;
  }

  contentPath(id: string): string {
    return path.join(this.dir, id);
  }

  private sidecarPath(id: string): string {
    return path.join(this.dir, `${id}.json`);
  }

  /**
   * Step 1 of a delete: the content (bytes, or streamed from a file) and its description are safely
   * stored (fsynced) before the file goes away.
   */
  async stash(id: string, content: Buffer | { file: string }, meta: StashMeta): Promise<void> {
    await fsp.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const size = Buffer.isBuffer(content) ? content.length : (await fsp.stat(content.file)).size;
    // The description first: content without one could never be matched to its workspace (an orphan);
    // a description whose content is missing or short is dropped at the next open.
    const side: Sidecar = { id, workspace: this.root ?? '', size, deletedAt: new Date().toISOString(), sessionId: this.sessionId, ...meta };
    const tmp = `${this.sidecarPath(id)}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(side), { mode: 0o600 });
    const sfh = await fsp.open(tmp, 'r');
    await sfh.sync().finally(() => sfh.close());
    await fsp.rename(tmp, this.sidecarPath(id));
    try {
      if (Buffer.isBuffer(content)) {
        const fh = await fsp.open(this.contentPath(id), 'wx', 0o600);
        try {
          await fh.writeFile(content);
          await fh.sync();
        } finally {
          await fh.close();
        }
      } else {
        const r = await copyHashed(content.file, this.contentPath(id));
        if (r.sha256 !== meta.sha256 || r.size !== size) {
          throw new ToolError('stale_file', `"${meta.originalPath}" changed while it was copied to the trash; nothing was deleted.`, { path: meta.originalPath, suggestedAction: STALE_FILE_ACTION });
        }
      }
    } catch (err) {
      await this.discard(id);
      throw err;
    }
    await fsyncDir(this.dir);
  }

  /** Step 2, after the file was removed: record the metadata (its description file is then not needed). */
  record(e: Omit<TrashEntry, 'restoredAt' | 'restoredTo' | 'workspace'>): void {
    this.repo.insert({ ...e, workspace: this.root });
    fs.rmSync(this.sidecarPath(e.id), { force: true });
  }

  /** Undo a stash whose delete failed. */
  async discard(id: string): Promise<void> {
    await fsp.unlink(this.contentPath(id)).catch(() => undefined);
    await fsp.unlink(this.sidecarPath(id)).catch(() => undefined);
  }

  /** The stored bytes, checked against the recorded sha256 (null when missing or corrupt). Small entries only: see `copyOut`. */
  async read(entry: TrashEntry): Promise<Buffer | null> {
    try {
      const bytes = await fsp.readFile(this.contentPath(entry.id));
      return createHash('sha256').update(bytes).digest('hex') === entry.sha256 ? bytes : null;
    } catch {
      return null;
    }
  }

  /** Streams an entry's content to `dest` (created, never overwritten); false when missing or corrupt (then `dest` is removed). */
  async copyOut(entry: TrashEntry, dest: string, mode: number): Promise<boolean> {
    try {
      const r = await copyHashed(this.contentPath(entry.id), dest, mode);
      if (r.sha256 === entry.sha256) return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw err;
    }
    await fsp.unlink(dest).catch(() => undefined);
    return false;
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

  /**
   * Deletes a crash or a locked database cut off between storing the content and recording the row:
   * this workspace's descriptions without a row become rows when their file is gone (adopted), and
   * are dropped with their content when the file is still there as it was (the delete never happened).
   */
  recover(): TrashRecovery {
    const out: TrashRecovery = { adopted: [], dropped: [] };
    if (this.root === null) return out;
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return out;
    }
    for (const name of names) {
      if (!name.endsWith('.json')) continue;
      let side: Sidecar;
      try {
        side = JSON.parse(fs.readFileSync(path.join(this.dir, name), 'utf8')) as Sidecar;
      } catch {
        continue;
      }
      if (side.workspace !== this.root || typeof side.id !== 'string' || side.id + '.json' !== name) continue;
      if (this.repo.get(side.id)) {
        fs.rmSync(this.sidecarPath(side.id), { force: true });
        continue;
      }
      let blob: fs.Stats | null = null;
      try {
        blob = fs.statSync(this.contentPath(side.id));
      } catch {
        blob = null;
      }
      const original = path.join(this.root, ...side.originalPath.split('/'));
      if (!blob || blob.size !== side.size || sha256OfFileSync(original) === side.sha256) {
        // Never deleted (the file is still there as it was), or cut off before its content was complete.
        fs.rmSync(this.contentPath(side.id), { force: true });
        fs.rmSync(this.sidecarPath(side.id), { force: true });
        if (blob && blob.size === side.size) out.dropped.push(side.originalPath);
        continue;
      }
      this.repo.insert({
        id: side.id,
        originalPath: side.originalPath,
        sha256: side.sha256,
        size: side.size,
        mode: side.mode,
        deletedAt: side.deletedAt,
        sessionId: side.sessionId,
        workspace: this.root,
      });
      fs.rmSync(this.sidecarPath(side.id), { force: true });
      out.adopted.push(side.originalPath);
    }
    return out;
  }
}

/** Copies `from` to a new file `to` (never overwriting) in chunks, fsynced; returns its size and sha256. */
async function copyHashed(from: string, to: string, mode = 0o600): Promise<{ size: number; sha256: string }> {
  const h = createHash('sha256');
  let size = 0;
  const out = fs.createWriteStream(to, { flags: 'wx', mode });
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      h.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
  });
  await pipeline(fs.createReadStream(from, { highWaterMark: 1 << 20 }), tap, out);
  const fh = await fsp.open(to, 'r');
  await fh.sync().finally(() => fh.close());
  return { size, sha256: h.digest('hex') };
}
