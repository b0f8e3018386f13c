import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../tools/errors';
import { MAX_OUTPUT_BYTES } from '../tools/output';
import { isIgnoredPath, walk, type IgnoreMatcher } from './ignore';
import { compileGlob } from './glob-match';
import { anchoringSupported, lstatAnchored, readVerified, readdirVerified } from './anchored';
import { isUnder } from './paths';

/** Most results a search returns; the rest are counted in `omitted`. */
export const MAX_SEARCH_RESULTS = 1000;
/** Longest line text returned per match. */
export const MAX_MATCH_TEXT = 400;

export interface SearchContext {
  rootAbs: string;
  /** Deny-glob check (workspace-relative path). */
  isDenied: (rel: string) => boolean;
  /**
   * Files that usually hold secrets (secret_globs): their matches are left out of a search of a folder
   * (counted in `secretFiles`); a search naming one such file is searched (the agent asked the user).
   */
  isSecret?: (rel: string) => boolean;
  signal?: AbortSignal;
}

export interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

export interface GrepQuery {
  /** JS/Rust-compatible regular expression, or a literal string when `fixed`. */
  pattern: string;
  fixed?: boolean;
  /** Folder or file to search, workspace-relative ('' = root). */
  startRel: string;
  /** File-name glob such as `*.ts` or `*.{ts,tsx}`. */
  include?: string;
  gitignore: boolean;
  engine?: 'auto' | 'rg' | 'js';
  /** The search stops once it has this many matches (default MAX_SEARCH_RESULTS + 1: enough to know there are more). */
  maxMatches?: number;
}

export interface GrepResult {
  matches: GrepMatch[];
  /** Matches found (when `stopped`, only those found before the search stopped). */
  total: number;
  engine: 'rg' | 'js';
  /** Files that usually hold secrets whose matches were left out (see SearchContext.isSecret). */
  secretFiles?: string[];
  /** The search stopped at `maxMatches`: there may be more. */
  stopped: boolean;
  /** Files that could not be read (permission denied, I/O errors), workspace-relative, with why. */
  unreadable: { path: string; reason: string }[];
}

/** Most unreadable files named in a result. */
const MAX_UNREADABLE = 20;

let rgAvailable: boolean | undefined;

/** Is ripgrep on PATH? (Checked once; CABOOSE_GREP_ENGINE=js forces the JS path.) */
export function ripgrepAvailable(): boolean {
  if (rgAvailable === undefined) {
    const r = spawnSync('rg', ['--version'], { stdio: 'ignore' });
    rgAvailable = r.status === 0;
  }
  return rgAvailable;
}

function chooseEngine(q: GrepQuery): 'rg' | 'js' {
  const pref = q.engine ?? (process.env.CABOOSE_GREP_ENGINE as GrepQuery['engine']) ?? 'auto';
  if (pref === 'js') return 'js';
  if (pref === 'rg') return ripgrepAvailable() ? 'rg' : 'js';
  return ripgrepAvailable() ? 'rg' : 'js';
}

export function compileSearchRegex(pattern: string, fixed: boolean): RegExp {
  const src = fixed ? pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : pattern;
  try {
    return new RegExp(src, 'u');
  } catch (err) {
    throw new ToolError('invalid_arguments', `Invalid regular expression: ${(err as Error).message}`, {
      suggestedAction: 'Fix the pattern, or use search_files with mode "text" for a literal search.',
    });
  }
}

function stripEol(line: string): string {
  return line.replace(/\r?\n$/, '').replace(/\r$/, '');
}

function clip(text: string): string {
  return text.length > MAX_MATCH_TEXT ? text.slice(0, MAX_MATCH_TEXT) + '…' : text;
}

/** Regex search of file contents; ripgrep when available, the equivalent JS walk otherwise. Sorted by path then line. */
export async function grep(ctx: SearchContext, q: GrepQuery): Promise<GrepResult> {
  const re = compileSearchRegex(q.pattern, q.fixed ?? false);
  const engine = chooseEngine(q);
  const secretFiles = new Set<string>();
  const filterSecrets = !!ctx.isSecret && !ctx.isSecret(q.startRel);
  const sink: Sink = {
    matches: [],
    limit: q.maxMatches ?? MAX_SEARCH_RESULTS + 1,
    stopped: false,
    unreadable: [],
    // Denied paths and (in a folder search) secret files never take a place under the cap.
    skip: (rel) => ctx.isDenied(rel) || (filterSecrets && ctx.isSecret!(rel) && (secretFiles.add(rel), true)),
  };
  if (engine === 'rg') await grepRg(ctx, q, sink);
  else await grepJs(ctx, q, re, sink);
  let matches = sink.matches;
  // ripgrep opens files by path: each match is checked against the file read through a verified handle.
  if (engine === 'rg' && anchoringSupported()) matches = await keepVerifiedMatches(ctx.rootAbs, matches);
  matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
  return {
    matches,
    total: matches.length,
    engine,
    stopped: sink.stopped,
    unreadable: sink.unreadable,
    ...(secretFiles.size ? { secretFiles: [...secretFiles].sort() } : {}),
  };
}

/** Where an engine puts what it finds: it stops adding (and searching) at `limit`. */
interface Sink {
  matches: GrepMatch[];
  limit: number;
  stopped: boolean;
  unreadable: { path: string; reason: string }[];
  skip: (rel: string) => boolean;
}

/** Adds a match; false once the sink is full (the search should stop). */
function add(sink: Sink, m: GrepMatch): boolean {
  if (sink.skip(m.path)) return true;
  if (sink.matches.length >= sink.limit) {
    sink.stopped = true;
    return false;
  }
  sink.matches.push(m);
  return true;
}

function noteUnreadable(sink: Sink, rel: string, reason: string): void {
  if (sink.unreadable.length < MAX_UNREADABLE) sink.unreadable.push({ path: rel, reason });
}

async function grepJs(ctx: SearchContext, q: GrepQuery, re: RegExp, sink: Sink): Promise<void> {
  const include = q.include ? compileGlob(q.include) : null;
  // Whole-file pre-check: with the m flag, ^ and $ also match at line breaks, so it finds every file with a line match.
  const quick = new RegExp(re.source, re.flags.includes('m') ? re.flags : re.flags + 'm');
  const st = await fsp.stat(path.join(ctx.rootAbs, q.startRel));
  const files: string[] = [];
  if (st.isFile()) files.push(q.startRel);
  else {
    for await (const e of walk({ rootAbs: ctx.rootAbs, startRel: q.startRel, gitignore: q.gitignore, skip: ctx.isDenied, recursive: true, signal: ctx.signal })) {
      if (e.type !== 'file') continue;
      if (include && !include(path.posix.basename(e.rel))) continue;
      files.push(e.rel);
    }
  }
  // In path order, so that stopping at the cap keeps the first matches of the sorted result.
  files.sort();
  for (const rel of files) {
    ctx.signal?.throwIfAborted();
    let bytes: Buffer;
    try {
      // Through a verified handle (anchored.ts): a folder swapped for a link cannot redirect the read.
      const r = await readVerified(ctx.rootAbs, path.join(ctx.rootAbs, rel));
      if (r?.kind !== 'file') continue;
      bytes = r.bytes;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') noteUnreadable(sink, rel, 'permission denied');
      else if (code !== 'ENOENT' && code !== undefined) noteUnreadable(sink, rel, code);
      continue;
    }
    if (bytes.includes(0)) continue;
    const text = bytes.toString('utf8');
    if (!quick.test(text)) continue;
    const lines = text.split('\n');
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    for (let i = 0; i < lines.length; i++) {
      if (re.test(lines[i]) && !add(sink, { path: rel, line: i + 1, text: clip(stripEol(lines[i])) })) return;
    }
  }
}

/**
 * The matches whose line is in the file as read now through a verified handle (anchored.ts): what
 * ripgrep read through a folder swapped for a link to elsewhere is dropped.
 */
async function keepVerifiedMatches(rootAbs: string, matches: GrepMatch[]): Promise<GrepMatch[]> {
  const lines = new Map<string, string[] | null>();
  const out: GrepMatch[] = [];
  for (const m of matches) {
    let ls = lines.get(m.path);
    if (ls === undefined) {
      const abs = path.join(rootAbs, m.path);
      const r = isUnder(rootAbs, abs) ? await readVerified(rootAbs, abs).catch(() => null) : null;
      ls = r?.kind === 'file' ? r.bytes.toString('utf8').split('\n') : null;
      lines.set(m.path, ls);
    }
    if (ls && m.line >= 1 && m.line <= ls.length && clip(stripEol(ls[m.line - 1])) === m.text) out.push(m);
  }
  return out;
}

interface RgEvent {
  type: string;
  data?: { path?: { text?: string; bytes?: string }; lines?: { text?: string; bytes?: string }; line_number?: number };
}

async function grepRg(ctx: SearchContext, q: GrepQuery, sink: Sink): Promise<void> {
  const args = [
    '--json',
    '--no-config',
    '--hidden',
    '--no-require-git',
    '--no-ignore-global',
    '--no-ignore-exclude',
    '--no-ignore-dot',
    // In path order, so that stopping at the cap keeps the first matches of the sorted result.
    '--sort',
    'path',
    '-g',
    '!.git',
  ];
  if (!q.gitignore) args.push('--no-ignore');
  if (q.fixed) args.push('-F');
  if (q.include) args.push('--type-add', `inc:${q.include}`, '-t', 'inc');
  args.push('-e', q.pattern, '--', q.startRel === '' ? '.' : q.startRel);
  await new Promise<void>((resolve, reject) => {
    const child = spawn('rg', args, { cwd: ctx.rootAbs, stdio: ['ignore', 'pipe', 'pipe'], signal: ctx.signal });
    let buf = '';
    let stderr = '';
    let full = false;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (full) return;
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.startsWith('{"type":"match"')) continue;
        const ev = JSON.parse(line) as RgEvent;
        const d = ev.data;
        if (!d || d.line_number === undefined) continue;
        const p = d.path?.text ?? Buffer.from(d.path?.bytes ?? '', 'base64').toString('utf8');
        const t = d.lines?.text ?? Buffer.from(d.lines?.bytes ?? '', 'base64').toString('utf8');
        const rel = path.relative(ctx.rootAbs, path.resolve(ctx.rootAbs, p)).split(path.sep).join('/');
        if (!add(sink, { path: rel, line: d.line_number, text: clip(stripEol(t)) })) {
          // The cap is reached: ripgrep is stopped rather than left to find (and send) the rest.
          full = true;
          buf = '';
          child.kill('SIGKILL');
          return;
        }
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => {
      if (stderr.length < 64 * 1024) stderr += c;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      // Exit 2: some files could not be read (or the pattern is invalid). Unreadable files are reported; the search stands.
      const problems = parseRgErrors(stderr, ctx.rootAbs);
      for (const pr of problems) noteUnreadable(sink, pr.path, pr.reason);
      if (full || code === 0 || code === 1) resolve();
      else if (code === 2 && (problems.length > 0 || sink.matches.length > 0)) resolve();
      else reject(new ToolError('invalid_arguments', `ripgrep failed: ${stderr.trim().split('\n')[0] || `exit ${code}`}`));
    });
  });
}

/** `rg: ./path: Permission denied (os error 13)` lines → the files and why. */
function parseRgErrors(stderr: string, rootAbs: string): { path: string; reason: string }[] {
  const out: { path: string; reason: string }[] = [];
  for (const line of stderr.split('\n')) {
    const m = /^rg: (.+?): (.+?)(?: \(os error \d+\))?$/.exec(line.trim());
    if (!m || m[1].startsWith('regex parse error')) continue;
    const rel = path.relative(rootAbs, path.resolve(rootAbs, m[1])).split(path.sep).join('/');
    out.push({ path: rel, reason: m[2].toLowerCase() });
  }
  return out;
}

export interface GlobResult {
  paths: string[];
  total: number;
}

/** fast-glob from the workspace root, .git and deny globs skipped, .gitignore applied. Sorted. */
export async function globFiles(ctx: SearchContext, pattern: string, startRel: string, gitignore: boolean): Promise<GlobResult> {
  if (pattern.includes('\0')) throw new ToolError('invalid_arguments', 'The pattern contains a NUL byte.');
  if (path.isAbsolute(pattern) || pattern.split('/').includes('..')) {
    throw new ToolError('invalid_arguments', 'The glob pattern must be relative and must not contain "..".', {
      suggestedAction: 'Use the `path` argument to choose the folder and a relative pattern such as "**/*.ts".',
    });
  }
  const cwd = path.join(ctx.rootAbs, startRel);
  // Loaded when the glob tool first runs, not with the tool set.
  const fg = require('fast-glob') as typeof import('fast-glob');
  // {a,b} alternatives are expanded before any check: every expanded base must stay inside the folder.
  for (const t of fg.generateTasks(pattern, { cwd, dot: true })) {
    const leaves = (p: string) => path.isAbsolute(p) || p.split('/').includes('..') || !isUnder(ctx.rootAbs, path.resolve(cwd, p));
    if (leaves(t.base) || t.patterns.some((p) => leaves(p.replace(/^!/, '')))) {
      throw new ToolError('invalid_arguments', 'The glob pattern must be relative and must not contain "..", also in its {a,b} alternatives.', {
        suggestedAction: 'Use the `path` argument to choose the folder and a relative pattern such as "**/*.ts".',
      });
    }
  }
  const entries = await fg(pattern, {
    cwd,
    dot: true,
    onlyFiles: false,
    markDirectories: true,
    followSymbolicLinks: false,
    ignore: ['**/.git', '**/.git/**', '**/node_modules/.cache/**'],
    suppressErrors: true,
    // Folders are read through verified handles, and nothing outside the root is read at all: a
    // symlinked folder (or one swapped for a link) is not walked (anchored.ts).
    fs: confinedFs(ctx.rootAbs),
  });
  const cache = new Map<string, IgnoreMatcher>();
  const paths: string[] = [];
  for (const e of entries) {
    const isDir = e.endsWith('/');
    const relInStart = isDir ? e.slice(0, -1) : e;
    const full = path.resolve(cwd, relInStart);
    if (!isUnder(ctx.rootAbs, full) || full === ctx.rootAbs) continue;
    // A symlink listed by name must also lead inside the root (its target, resolved).
    if (!isDir && !(await leadsInside(ctx.rootAbs, full))) continue;
    const rel = path.relative(ctx.rootAbs, full).split(path.sep).join('/');
    if (ctx.isDenied(rel)) continue;
    if (gitignore && (await isIgnoredPath(ctx.rootAbs, rel, isDir, cache))) continue;
    paths.push(isDir ? rel + '/' : rel);
  }
  paths.sort();
  return { paths, total: paths.length };
}

/** `abs` (inside the root) is not a link to outside it, directly or through a chain (dangling links followed lexically). */
async function leadsInside(root: string, abs: string): Promise<boolean> {
  const st = await fsp.lstat(abs).catch(() => null);
  if (!st?.isSymbolicLink()) return true;
  const real = await fsp.realpath(abs).catch(() => null);
  if (real !== null) return isUnder(root, real);
  const target = await fsp.readlink(abs).catch(() => null);
  return target !== null && isUnder(root, path.resolve(path.dirname(abs), target));
}

type Cb<T> = (err: NodeJS.ErrnoException | null, value?: T) => void;

function noEntry(p: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOENT: outside the workspace or moved, '${p}'`), { code: 'ENOENT' });
}

/** fast-glob's file system: only paths inside `root`, folders read through verified handles, links never followed. */
function confinedFs(root: string): NonNullable<import('fast-glob').Options['fs']> {
  const inside = (p: string) => isUnder(root, path.resolve(p));
  const lstat = (p: string, cb: Cb<fs.Stats>) => {
    if (!inside(p)) return cb(noEntry(p));
    lstatAnchored(root, path.resolve(p)).then(
      (st) => (st ? cb(null, st) : cb(noEntry(p))),
      (e: NodeJS.ErrnoException) => cb(e),
    );
  };
  const readdir = (p: string, a: unknown, b?: unknown) => {
    const withTypes = typeof a === 'object' && a !== null && (a as { withFileTypes?: boolean }).withFileTypes === true;
    const cb = (typeof a === 'function' ? a : b) as Cb<(fs.Dirent | string)[]>;
    if (!inside(p)) return cb(noEntry(p));
    readdirVerified(root, path.resolve(p)).then(
      (ds) => cb(null, withTypes ? ds : ds.map((d) => d.name)),
      (e: NodeJS.ErrnoException) => cb(e),
    );
  };
  const refuseSync = (p: string) => {
    if (!inside(p)) throw noEntry(p);
  };
  return {
    lstat: lstat as never,
    stat: lstat as never,
    readdir: readdir as never,
    lstatSync: ((p: string) => (refuseSync(p), fs.lstatSync(p))) as never,
    statSync: ((p: string) => (refuseSync(p), fs.lstatSync(p))) as never,
    readdirSync: ((p: string, o: never) => (refuseSync(p), fs.readdirSync(p, o))) as never,
  };
}

export interface ListEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
}

export async function listDirectory(ctx: SearchContext, startRel: string, recursive: boolean, gitignore: boolean): Promise<ListEntry[]> {
  const out: ListEntry[] = [];
  for await (const e of walk({ rootAbs: ctx.rootAbs, startRel, gitignore, skip: ctx.isDenied, recursive, signal: ctx.signal })) {
    out.push({ path: e.rel, type: e.type });
  }
  return out;
}

/** Keeps items from the start while they fit the caps; returns how many were kept. */
export function capItems<T>(items: T[], size: (t: T) => number, maxItems = MAX_SEARCH_RESULTS, maxBytes = MAX_OUTPUT_BYTES - 2048): number {
  let bytes = 0;
  let n = 0;
  for (; n < items.length && n < maxItems; n++) {
    bytes += size(items[n]);
    if (bytes > maxBytes) break;
  }
  return n;
}
