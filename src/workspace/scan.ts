/**
 * A bounded snapshot of the workspace's files (size, mtime, sha256), and the difference of two snapshots.
 * Used to see what a shell command did to the workspace; a scan cut by a limit says so (`complete: false`).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type fgType from 'fast-glob';
import { IgnoreMatcher, readIgnoreFile } from './ignore';

export interface FileStamp {
  size: number;
  mtimeMs: number;
  /** Hex sha256 of the content; '' when it was not read (too large, over the byte budget, a symlink). */
  sha256: string;
}

export interface ScanLimits {
  /** Files listed at most; more cut the scan. */
  maxFiles: number;
  /** Larger files are stamped by size and mtime only. */
  maxFileBytes: number;
  /** Bytes read (hashed) per scan at most; the files after that are stamped by size and mtime only. */
  maxTotalBytes: number;
  /** Listing stops after this long (the scan is then incomplete); hashing stops, stamping goes on. */
  timeBudgetMs?: number;
}

export const DEFAULT_SCAN_LIMITS: ScanLimits = {
  maxFiles: 5_000,
  maxFileBytes: 2 * 1024 * 1024,
  maxTotalBytes: 64 * 1024 * 1024,
  timeBudgetMs: 1_500,
};

export interface WorkspaceScan {
  /** Root-relative, '/'-separated path → stamp. Regular files and symlinks; never folders. */
  files: Map<string, FileStamp>;
  /** False when a limit (maxFiles, timeBudgetMs) cut the listing: files may be missing. */
  complete: boolean;
  /** Wall-clock time the scan started (guards hash reuse against same-tick writes). */
  startedAtMs?: number;
}

export interface ScanOptions {
  /** Extra exclusions (deny globs…); an excluded folder is not entered. `.git` is always skipped. */
  isIgnored?: (rel: string, isDir: boolean) => boolean;
  /** Apply the workspace's .gitignore files (nested ones included). Default true. */
  gitignore?: boolean;
  limits?: Partial<ScanLimits>;
  /** Called with the bytes of every file read (not for stamps reused from `previous`). */
  onContent?: (rel: string, bytes: Buffer, sha256: string) => void;
  /** An earlier scan: a file whose size and mtime did not change keeps its sha256 without being read. */
  previous?: WorkspaceScan;
}

/** A file modified this close to the previous scan's start may have changed again in the same clock tick. */
const RACY_MS = 1_000;
/** Longest stretch of synchronous stat/read work before yielding to the event loop. */
const SLICE_MS = 8;

type Callback<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;

/**
 * Lists the workspace with fast-glob and stamps each file. Ignored folders are pruned while walking (the
 * filter sits in fast-glob's readdir), so node_modules and build output cost nothing when .gitignore'd.
 */
export async function scanWorkspace(root: string, opts: ScanOptions = {}): Promise<WorkspaceScan> {
  const limits: ScanLimits = { ...DEFAULT_SCAN_LIMITS, ...opts.limits };
  const startedAtMs = Date.now();
  const t0 = performance.now();
  const overBudget = (): boolean => limits.timeBudgetMs !== undefined && performance.now() - t0 > limits.timeBudgetMs;
  const gitignore = opts.gitignore ?? true;
  let cut = false;
  let listed = 0;

  const matchers = new Map<string, Promise<IgnoreMatcher>>();
  const matcherOf = (dirRel: string): Promise<IgnoreMatcher> => {
    let m = matchers.get(dirRel);
    if (!m) {
      const parent = dirRel === '' ? Promise.resolve(new IgnoreMatcher()) : matcherOf(parentOf(dirRel));
      m = Promise.all([parent, readIgnoreFile(root, dirRel)]).then(([p, text]) => p.withFile(dirRel, text));
      matchers.set(dirRel, m);
    }
    return m;
  };
  const keep = (dirRel: string, d: fs.Dirent, m: IgnoreMatcher | null): boolean => {
    if (d.name === '.git') return false;
    const rel = dirRel === '' ? d.name : `${dirRel}/${d.name}`;
    const isDir = d.isDirectory();
    if (m?.ignores(rel, isDir)) return false;
    return !opts.isIgnored?.(rel, isDir);
  };
  const filterDir = async (dir: string, dirents: fs.Dirent[]): Promise<fs.Dirent[]> => {
    if (cut || overBudget()) {
      cut = true;
      return [];
    }
    const dirRel = toRel(root, dir);
    const m = gitignore ? await matcherOf(dirRel).catch(() => null) : null;
    const kept = dirents.filter((d) => keep(dirRel, d, m));
    listed += kept.filter((d) => !d.isDirectory()).length;
    if (listed > limits.maxFiles) cut = true;
    return kept;
  };
  // fast-glob reads folders through this; with `withFileTypes` it gets Dirents, without it names.
  const readdir = (dir: string, a: unknown, b?: unknown): void => {
    const withTypes = typeof a === 'object' && a !== null && (a as { withFileTypes?: boolean }).withFileTypes === true;
    const cb = (typeof a === 'function' ? a : b) as Callback<(fs.Dirent | string)[]>;
    fs.readdir(dir, { withFileTypes: true }, (err, dirents) => {
      if (err) return cb(err);
      filterDir(dir, dirents).then(
        (kept) => cb(null, withTypes ? kept : kept.map((d) => d.name)),
        (e: NodeJS.ErrnoException) => cb(e),
      );
    });
  };

  // Loaded here: the first reply's path needs no globbing.
  const fg = require('fast-glob') as typeof fgType;
  const entries = await fg('**', {
    cwd: root,
    dot: true,
    onlyFiles: false,
    followSymbolicLinks: false,
    objectMode: true,
    suppressErrors: true,
    fs: { readdir: readdir as unknown as NonNullable<fgType.Options['fs']>['readdir'] },
  });
  const rels = entries
    .filter((e) => !e.dirent.isDirectory() && (e.dirent.isFile() || e.dirent.isSymbolicLink()))
    .map((e) => e.path)
    .sort();
  if (rels.length > limits.maxFiles) {
    rels.length = limits.maxFiles;
    cut = true;
  }

  const files = new Map<string, FileStamp>();
  const prev = opts.previous;
  const trustBefore = (prev?.startedAtMs ?? Infinity) - RACY_MS;
  let bytesRead = 0;
  const stamp = (rel: string): void => {
    const abs = path.join(root, rel);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(abs);
    } catch {
      return; // gone since it was listed
    }
    const s: FileStamp = { size: st.size, mtimeMs: st.mtimeMs, sha256: '' };
    files.set(rel, s);
    if (!st.isFile()) return;
    const old = prev?.files.get(rel);
    if (old && old.sha256 !== '' && old.size === s.size && old.mtimeMs === s.mtimeMs && s.mtimeMs < trustBefore) {
      s.sha256 = old.sha256;
      return;
    }
    if (s.size > limits.maxFileBytes || bytesRead + s.size > limits.maxTotalBytes || overBudget()) return;
    bytesRead += s.size;
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(abs);
    } catch {
      return;
    }
    s.sha256 = createHash('sha256').update(bytes).digest('hex');
    opts.onContent?.(rel, bytes, s.sha256);
  };
  // Synchronous stat and read are several times faster than their async forms for many small files;
  // the work is done in slices so the host's event loop (RPC, other tools) is never held for long.
  let sliceStart = performance.now();
  for (const rel of rels) {
    stamp(rel);
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  return { files, complete: !cut, startedAtMs };
}

/**
 * What changed between two scans, each list sorted. Stamps with a sha256 on both sides compare by content;
 * otherwise by size and mtime. A path missing from an incomplete scan may just be beyond its cut, so
 * `created` needs a complete `before` and `deleted` a complete `after`.
 */
export function diffScans(before: WorkspaceScan, after: WorkspaceScan): { created: string[]; changed: string[]; deleted: string[] } {
  const created: string[] = [];
  const changed: string[] = [];
  const deleted: string[] = [];
  for (const [rel, a] of after.files) {
    const b = before.files.get(rel);
    if (!b) {
      if (before.complete) created.push(rel);
    } else if (stampChanged(b, a)) changed.push(rel);
  }
  if (after.complete) for (const rel of before.files.keys()) if (!after.files.has(rel)) deleted.push(rel);
  return { created: created.sort(), changed: changed.sort(), deleted: deleted.sort() };
}

function stampChanged(b: FileStamp, a: FileStamp): boolean {
  if (b.sha256 !== '' && a.sha256 !== '') return b.sha256 !== a.sha256;
  return b.size !== a.size || b.mtimeMs !== a.mtimeMs;
}

function toRel(root: string, abs: string): string {
  const rel = path.relative(root, abs);
  return rel === '' ? '' : rel.split(path.sep).join('/');
}

function parentOf(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i === -1 ? '' : rel.slice(0, i);
}
