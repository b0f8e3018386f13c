import type { Checkpoint, CheckpointFile } from '../store/checkpoints';
import { isBinary } from './encoding';
import { basisOf, type FileView } from './file-view';
import { savedFields } from './file-access';
import { sha256Hex } from './file-sha';
import type { FileChange } from './commit-disk';
import { fileDiff } from './text-diff';
import type { AuditDraft, FileWorkspace, WritePlan } from './workspace';

/**
 * Rewinding checkpoints (see checkpoints.ts). Rewinding to checkpoint K undoes every checkpoint of the
 * session not yet rewound, from the newest down to K: each path gets the pre-image of the earliest of
 * them that touched it, and is expected to still be as the latest one left it. A file changed since
 * (by the user or another process) stops the rewind before anything changes, unless forced. The restore
 * is one all-or-nothing commit through the buffer-aware write path; files that did not exist go to the
 * trash.
 */

/** A refusal meant for the user (nothing to rewind, busy, unknown checkpoint). */
export class CheckpointError extends Error {
  override name = 'CheckpointError';
}

export const busyError = () => new CheckpointError('the agent is working; :CabooseStop it first, then rewind');

export type FileChangeKind = 'created' | 'modified' | 'deleted' | 'temporary';

export interface CheckpointSummary {
  id: number;
  message: string;
  messageId: string | null;
  time: string;
  rewound: boolean;
  rewoundAt: string | null;
  files: { path: string; change: FileChangeKind }[];
}

export interface RewoundFile {
  path: string;
  /** restored: old content back; recreated: a deleted file is back; trashed: a created file went to the trash; moved: a moved file is back at `path` (from `from`); unchanged: already as before. */
  action: 'restored' | 'recreated' | 'trashed' | 'moved' | 'unchanged';
  from?: string;
  trashId?: string;
  savedToDisk?: boolean;
}

export interface RewindConflict {
  path: string;
  /** changed: not what the agent left; deleted: the agent's file is gone; exists: a file is where the agent left none. */
  reason: 'changed' | 'deleted' | 'exists';
}

export type RewindResult =
  | { status: 'conflict'; id: number; conflicts: RewindConflict[] }
  | { status: 'rewound'; id: number; checkpoints: { id: number; message: string }[]; files: RewoundFile[] };

export interface CheckpointPreview {
  id: number;
  rewound: boolean;
  /** Checkpoints a rewind to this one undoes (itself and every later one not yet rewound). */
  undoes: { id: number; message: string }[];
  /** Unified diff of those files from their pre-image to their current state ('' when nothing differs). */
  diff: string;
  files: string[];
  /** Files changed since the agent left them (a rewind would ask first). */
  changed: string[];
}

const MAX_PREVIEW_BYTES = 256 * 1024;

function changeKind(f: CheckpointFile): FileChangeKind {
  if (f.beforeSha256 === null) return f.afterSha256 === null ? 'temporary' : 'created';
  return f.afterSha256 === null ? 'deleted' : 'modified';
}

/** A session's checkpoints, newest first. */
export function listCheckpoints(ws: FileWorkspace, sessionId: string): CheckpointSummary[] {
  const repo = ws.checkpoints.repo;
  return repo
    .list(sessionId)
    .reverse()
    .map((c) => ({
      id: c.id,
      message: c.message,
      messageId: c.messageId,
      time: c.createdAt,
      rewound: c.rewoundAt !== null,
      rewoundAt: c.rewoundAt,
      files: repo.files(c.id).map((f) => ({ path: f.path, change: changeKind(f) })),
    }));
}

interface PathPlan {
  rel: string;
  abs: string;
  /** The pre-image to restore (null: the file did not exist). */
  target: { sha256: string; mode: number } | null;
  /** What the latest undone checkpoint left (null: missing). */
  expected: string | null;
}

interface UndoSet {
  target: Checkpoint;
  undone: Checkpoint[];
  paths: PathPlan[];
}

/** The checkpoints and paths a rewind to `id` (default: the newest not rewound) undoes. */
function undoSet(ws: FileWorkspace, sessionId: string, id: number | undefined): UndoSet {
  const all = ws.checkpoints.repo.list(sessionId);
  const open = all.filter((c) => c.rewoundAt === null);
  let target: Checkpoint | undefined;
  if (id === undefined) {
    target = open.at(-1);
    if (!target) throw new CheckpointError('nothing to rewind: the agent changed no file in this session since the last rewind');
  } else {
    target = all.find((c) => c.id === id);
    if (!target) throw new CheckpointError(`no checkpoint ${id} in this session`);
    if (target.rewoundAt !== null) throw new CheckpointError(`checkpoint ${id} was already rewound (${target.rewoundAt})`);
  }
  const undone = open.filter((c) => c.id >= target.id);
  const other = undone.find((c) => c.root !== ws.root);
  if (other) throw new CheckpointError(`checkpoint ${other.id} was recorded in ${other.root}, not in ${ws.root}`);
  const byPath = new Map<string, PathPlan>();
  for (const c of undone) {
    for (const f of ws.checkpoints.repo.files(c.id)) {
      const p = byPath.get(f.path);
      if (p) p.expected = f.afterSha256;
      else {
        byPath.set(f.path, {
          rel: f.path,
          abs: ws.resolve(f.path).abs,
          target: f.beforeSha256 === null ? null : { sha256: f.beforeSha256, mode: f.beforeMode ?? 0o644 },
          expected: f.afterSha256,
        });
      }
    }
  }
  return { target, undone, paths: [...byPath.values()] };
}

/** A file neither as the agent left it nor already back as before (a rewind would clobber a later change). */
function conflictOf(p: PathPlan, v: FileView, target: Buffer | null): RewindConflict | null {
  if (target === null ? v.kind === 'missing' : v.kind === 'file' && v.bytes?.equals(target)) return null;
  if (p.expected === null) return v.kind === 'missing' ? null : { path: p.rel, reason: 'exists' };
  if (v.kind === 'file' && v.sha256 === p.expected) return null;
  return { path: p.rel, reason: v.kind === 'missing' ? 'deleted' : 'changed' };
}

function targetBytes(ws: FileWorkspace, p: PathPlan): Buffer | null {
  if (!p.target) return null;
  const bytes = ws.checkpoints.repo.blob(p.target.sha256);
  if (!bytes || sha256Hex(bytes) !== p.target.sha256) {
    throw new CheckpointError(`the saved content of ${p.rel} (sha256 ${p.target.sha256.slice(0, 12)}…) is missing or damaged`);
  }
  return bytes;
}

const firstLine = (s: string, max = 80) => {
  const l = [...s.split('\n', 1)[0].trim()];
  return l.length > max ? `${l.slice(0, max - 1).join('')}…` : l.join('');
};

/** What a rewind did to one file, in a few words (`forUser`: with where a removed file went); null: nothing. */
function fileFate(f: RewoundFile, forUser: boolean): string | null {
  switch (f.action) {
    case 'trashed':
      return `${f.path} removed${forUser ? ' (:CabooseRestore brings it back)' : ''}`;
    case 'recreated':
      return `${f.path} recreated`;
    case 'moved':
      return `${f.from ?? '?'} moved back to ${f.path}`;
    case 'restored':
      return `${f.path} restored${forUser && f.savedToDisk === false ? ' (in its unsaved buffer)' : ''}`;
    default:
      return null;
  }
}

/** What the model is told with the next user message after a rewind. */
function rewindNote(undone: Checkpoint[], files: RewoundFile[]): string {
  const msgs = undone.map((c) => `"${firstLine(c.message)}"`).join(', ');
  const what = files.flatMap((f) => fileFate(f, false) ?? []);
  return (
    `[Note: the user rewound the file changes made for their message${undone.length === 1 ? '' : 's'} ${msgs}` +
    (what.length > 0 ? ` (${what.join(', ')})` : '') +
    '. Those files are back as they were before; read them again before editing them.]'
  );
}

/** What a rewind did, in one line for the chat: the message rewound to (the oldest) and each file's fate. */
export function describeRewind(res: RewindResult & { status: 'rewound' }): string {
  const first = res.checkpoints.find((c) => c.id === res.id) ?? { message: '' };
  const what = res.files.flatMap((f) => fileFate(f, true) ?? []);
  const later = res.checkpoints.length - 1;
  const head = `rewound "${firstLine(first.message, 60)}"${later > 0 ? ` and ${later} later message${later > 1 ? 's' : ''}` : ''}`;
  return `${head}: ${what.length > 0 ? what.join(', ') : 'the files were already as before'}`;
}

/** The diff a rewind to `id` would undo, for :CabooseCheckpoints. */
export async function previewCheckpoint(ws: FileWorkspace, sessionId: string, id: number): Promise<CheckpointPreview> {
  const cp = ws.checkpoints.repo.get(id);
  if (!cp || cp.sessionId !== sessionId) throw new CheckpointError(`no checkpoint ${id} in this session`);
  if (cp.rewoundAt !== null) {
    return { id, rewound: true, undoes: [], diff: '', files: ws.checkpoints.repo.files(id).map((f) => f.path), changed: [] };
  }
  const set = undoSet(ws, sessionId, id);
  const parts: string[] = [];
  const changed: string[] = [];
  for (const p of set.paths) {
    const v = await ws.files.view(p.abs);
    const before = targetBytes(ws, p);
    if (conflictOf(p, v, before)) changed.push(p.rel);
    const now = v.kind === 'file' ? v.bytes : null;
    if (before && now && before.equals(now)) continue;
    if (!before && !now) continue;
    if ((before && isBinary(before)) || (now && isBinary(now))) {
      parts.push(`Binary file ${p.rel} differs\n`);
      continue;
    }
    parts.push(fileDiff(before ? p.rel : null, now ? p.rel : null, before?.toString('utf8') ?? '', now?.toString('utf8') ?? ''));
  }
  let diff = parts.join('');
  if (Buffer.byteLength(diff) > MAX_PREVIEW_BYTES) diff = Buffer.from(diff).subarray(0, MAX_PREVIEW_BYTES).toString('utf8').replace(/\uFFFD$/, '') + '\n[preview truncated]\n';
  return {
    id,
    rewound: false,
    undoes: set.undone.map((c) => ({ id: c.id, message: c.message })).reverse(),
    diff,
    files: set.paths.map((p) => p.rel),
    changed,
  };
}

type Op =
  | { kind: 'write'; p: PathPlan; view: FileView; bytes: Buffer; movedFrom?: PathPlan }
  | { kind: 'delete'; p: PathPlan; view: FileView & { bytes: Buffer; sha256: string }; moved?: boolean; trashId?: string }
  | { kind: 'none'; p: PathPlan };

/**
 * Rewinds to checkpoint `id` (default: the newest not rewound). Without `force`, files changed since the
 * agent left them stop it before anything changes (status 'conflict' names them).
 */
export async function rewindCheckpoints(ws: FileWorkspace, sessionId: string, opts: { id?: number; force?: boolean } = {}): Promise<RewindResult> {
  if (ws.checkpoints.active) throw busyError();
  const draft: AuditDraft = { path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null };
  return ws.runWrite('checkpoint', 'rewind', draft, async (): Promise<WritePlan<RewindResult>> => {
    if (ws.checkpoints.active) throw busyError();
    const set = undoSet(ws, sessionId, opts.id);
    const now = new Map<PathPlan, { view: FileView; target: Buffer | null }>();
    const conflicts: RewindConflict[] = [];
    for (const p of set.paths) {
      const v = await ws.files.view(p.abs);
      const target = targetBytes(ws, p);
      now.set(p, { view: v, target });
      const c = conflictOf(p, v, target);
      if (c) conflicts.push(c);
    }
    if (conflicts.length > 0 && !opts.force) {
      return { changes: [], diff: '', audit: [], result: { status: 'conflict', id: set.target.id, conflicts } };
    }
    const ops = set.paths.map((p): Op => {
      const { view: v, target: bytes } = now.get(p)!;
      if (v.kind === 'directory' || v.kind === 'other') throw new CheckpointError(`${p.rel} is no longer a regular file; remove it, then rewind`);
      if (!bytes) return v.kind === 'file' && v.bytes && v.sha256 ? { kind: 'delete', p, view: v as FileView & { bytes: Buffer; sha256: string } } : { kind: 'none', p };
      const sameMode = v.source === 'buffer' || v.mode === p.target!.mode;
      if (v.kind === 'file' && v.bytes?.equals(bytes) && sameMode) return { kind: 'none', p };
      return { kind: 'write', p, view: v, bytes };
    });
    // A file the turn moved comes back as a move: its buffer follows it and nothing goes to the trash.
    for (const w of ops) {
      if (w.kind !== 'write' || w.view.kind !== 'missing') continue;
      const d = ops.find((o) => o.kind === 'delete' && !o.moved && o.view.source === 'disk' && o.view.sha256 === w.p.target!.sha256);
      if (d?.kind === 'delete') {
        d.moved = true;
        w.movedFrom = d.p;
      }
    }
    const changes: FileChange[] = [];
    const audit: WritePlan<RewindResult>['audit'] = [];
    const diffText = (a: Buffer | null, b: Buffer | null, rel: string) =>
      (a && isBinary(a)) || (b && isBinary(b)) ? `Binary file ${rel} restored` : fileDiff(a ? rel : null, b ? rel : null, a?.toString('utf8') ?? '', b?.toString('utf8') ?? '');
    for (const o of ops) {
      if (o.kind !== 'write') continue;
      const create = o.view.kind === 'missing';
      changes.push({
        type: 'write',
        abs: o.p.abs,
        bytes: o.bytes,
        sha256: o.p.target!.sha256,
        mode: o.p.target!.mode,
        ...(create ? { createOnly: true } : { basis: basisOf(o.view) }),
        ...(o.movedFrom ? { movedFrom: o.movedFrom.abs } : {}),
      });
      audit.push({
        operation: 'rewind',
        path: o.movedFrom?.rel ?? o.p.rel,
        toPath: o.movedFrom ? o.p.rel : null,
        beforeSha256: o.view.sha256 ?? null,
        afterSha256: o.p.target!.sha256,
        diff: o.movedFrom ? `Move ${o.movedFrom.rel} → ${o.p.rel}` : diffText(o.view.bytes ?? null, o.bytes, o.p.rel),
      });
    }
    for (const o of ops) {
      if (o.kind !== 'delete') continue;
      changes.push({ type: 'delete', abs: o.p.abs });
      if (o.moved) continue;
      o.trashId = ws.trash.newId();
      audit.push({ operation: 'rewind', path: o.p.rel, toPath: null, beforeSha256: o.view.sha256, afterSha256: null, diff: `Delete ${o.p.rel} — recoverable with restore_file trashId=${o.trashId}` });
    }
    const trashed = ops.filter((o): o is Op & { kind: 'delete'; trashId: string } => o.kind === 'delete' && o.trashId !== undefined);
    const result: RewindResult & { status: 'rewound' } = {
      status: 'rewound',
      id: set.target.id,
      checkpoints: set.undone.map((c) => ({ id: c.id, message: c.message })).reverse(),
      files: [],
    };
    return {
      changes,
      diff: '',
      audit,
      result,
      beforeCommit: async () => {
        for (const o of trashed) await ws.trash.stash(o.trashId, o.view.bytes, { originalPath: o.p.rel, sha256: o.view.sha256, mode: o.view.mode ?? 0o644 });
      },
      onFailure: async () => {
        for (const o of trashed) await ws.trash.discard(o.trashId);
      },
      afterCommit: async (report) => {
        const at = new Date().toISOString();
        for (const o of trashed) {
          ws.trash.record({ id: o.trashId, originalPath: o.p.rel, sha256: o.view.sha256, size: o.view.bytes.length, mode: o.view.mode ?? 0o644, deletedAt: at, sessionId: ws.sessionId });
        }
        ws.checkpoints.repo.markRewound(set.undone.map((c) => c.id), at);
        const movedAway = new Set(ops.flatMap((o) => (o.kind === 'write' && o.movedFrom ? [o.movedFrom] : [])));
        for (const o of ops) {
          if (movedAway.has(o.p)) continue;
          if (o.kind === 'none') result.files.push({ path: o.p.rel, action: 'unchanged' });
          else if (o.kind === 'delete') result.files.push({ path: o.p.rel, action: 'trashed', trashId: o.trashId });
          else {
            const action = o.movedFrom ? 'moved' : o.view.kind === 'missing' ? 'recreated' : 'restored';
            result.files.push({ path: o.p.rel, action, ...(o.movedFrom ? { from: o.movedFrom.rel } : {}), ...savedFields(report, o.p.abs) });
          }
        }
        ws.checkpoints.addNote(rewindNote(set.undone, result.files));
      },
    };
  });
}
