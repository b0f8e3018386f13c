/**
 * Project rules: the instruction files a project keeps for coding agents (AGENTS.md, CLAUDE.md,
 * .github/copilot-instructions.md, .cursor/rules/*.mdc), looked up from the working directory to the
 * repository root, nearest folder first, and read within byte caps.
 *
 * Only reads. A file that cannot be used (unreadable, binary, not UTF-8, empty, a duplicate, denied, over
 * the total cap) is listed as skipped with the reason; nothing here throws for a bad file.
 */
import { isUtf8 } from 'node:buffer';
import * as fsSync from 'node:fs';
import type { Stats } from 'node:fs';
import * as path from 'node:path';
import { decodeText } from './encoding';
import { compileGlobList } from './glob-match';

/** The file operations the reading uses (node:fs/promises has this shape). */
export interface RulesIo {
  realpath(p: string): Promise<string>;
  stat(p: string): Promise<Stats>;
  lstat(p: string): Promise<Stats>;
  open(p: string, flags: 'r'): Promise<{ stat(): Promise<Stats>; read(buf: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>; close(): Promise<void> }>;
}

/** node:fs/promises, loaded when first used. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const asyncIo = (): RulesIo => require('node:fs/promises') as RulesIo;

/**
 * The same operations done synchronously (issue 24): for a cold start's first request, which has nothing
 * else to serve while it reads the rules, each asynchronous call costing ≈ 0.15–0.3 ms of a cold process
 * against ≈ 0.05 for its synchronous twin (≈ 13 calls for a folder with AGENTS.md). Same results, same errors.
 */
export const syncRulesIo: RulesIo = {
  realpath: async (p) => fsSync.realpathSync(p),
  stat: async (p) => fsSync.statSync(p),
  lstat: async (p) => fsSync.lstatSync(p),
  open: async (p, flags) => {
    const fd = fsSync.openSync(p, flags);
    return {
      stat: async () => fsSync.fstatSync(fd),
      read: async (buf, offset, length, position) => ({ bytesRead: fsSync.readSync(fd, buf, offset, length, position) }),
      close: async () => fsSync.closeSync(fd),
    };
  },
};

export const DEFAULT_RULES_FILES: readonly string[] = ['AGENTS.md', 'CLAUDE.md', '.github/copilot-instructions.md', '.cursor/rules/*.mdc'];
export const DEFAULT_RULES_MAX_BYTES_PER_FILE = 32 * 1024;
export const DEFAULT_RULES_MAX_TOTAL_BYTES = 64 * 1024;
/** With less than this left of the total cap, a file that does not fit is skipped rather than cut to a stub. */
export const RULES_MIN_USEFUL_BYTES = 1024;
/** Files one glob may add from one folder. */
const MAX_MATCHES_PER_PATTERN = 50;

export interface RulesOptions {
  /** Names or globs, relative to each folder searched; the order within a folder is this order. */
  files: readonly string[];
  maxBytesPerFile: number;
  maxTotalBytes: number;
  /** The workspace's deny globs: files under the working directory they match are skipped. */
  denyGlobs?: readonly string[];
}

/** What a Cursor rule's front matter says about when it applies. */
export interface RuleMeta {
  description?: string;
  globs?: string;
  alwaysApply?: boolean;
}

export interface RulesFile {
  /** Absolute path. */
  path: string;
  /** Relative to the working directory, `/`-separated: `AGENTS.md`, `../CLAUDE.md`. */
  rel: string;
  /** Bytes on disk. */
  size: number;
  /** Bytes of the file the text comes from (less than `size` when truncated). */
  bytes: number;
  /** The text the prompt includes (a .mdc file without its front matter). */
  text: string;
  /** The cap that cut the file, when one did. */
  truncated?: 'max_bytes_per_file' | 'max_total_bytes';
  meta?: RuleMeta;
}

export interface SkippedRulesFile {
  path: string;
  rel: string;
  size?: number;
  /** Short, for the chat and :checkhealth: "total cap reached", "not UTF-8", "same file as AGENTS.md". */
  reason: string;
  /** Skipped because the total cap was used up (the prompt lists these). */
  overTotal?: true;
}

export interface RulesSnapshot {
  /** The working directory (symlinks resolved). */
  cwd: string;
  /** The repository root the search stopped at; null when the working directory is in no repository. */
  root: string | null;
  /** The folders searched, nearest first. */
  dirs: string[];
  /** In prompt order: nearest folder first, then the configured order. */
  files: RulesFile[];
  skipped: SkippedRulesFile[];
}

/* ------------------------------------------------------------------------------------------------
 * Where to look
 * ---------------------------------------------------------------------------------------------- */

/**
 * The nearest folder holding `.git` (a folder, or a file in a worktree or submodule), from `dir` up. A `.git`
 * in the home folder or at the filesystem root does not count: a dotfiles checkout is not a project.
 */
export async function findRepoRoot(dir: string, home = process.env.HOME ?? '', io: RulesIo = asyncIo()): Promise<string | null> {
  const stopAt = new Set([path.parse(dir).root, home === '' ? '' : path.resolve(home)]);
  for (let d = dir; ; d = path.dirname(d)) {
    if (await exists(path.join(d, '.git'), io)) return stopAt.has(d) ? null : d;
    if (path.dirname(d) === d) return null;
  }
}

/** The folders searched, nearest first: `cwd` and its parents up to `root`; `cwd` alone without a root. */
export function searchDirs(cwd: string, root: string | null): string[] {
  if (root === null || !isInside(root, cwd)) return [cwd];
  const dirs: string[] = [];
  for (let d = cwd; ; d = path.dirname(d)) {
    dirs.push(d);
    if (d === root || path.dirname(d) === d) return dirs;
  }
}

/** A rules pattern must stay inside the folder it is looked up in. */
export function isValidRulesPattern(p: string): boolean {
  return p.trim() !== '' && !p.includes('\0') && !path.isAbsolute(p) && !p.startsWith('/') && !p.split(/[\\/]/).includes('..');
}

/* ------------------------------------------------------------------------------------------------
 * Reading
 * ---------------------------------------------------------------------------------------------- */

/** Finds and reads the rules files for `cwd`. */
export async function loadRules(cwd: string, opts: RulesOptions, io: RulesIo = asyncIo()): Promise<RulesSnapshot> {
  const real = await io.realpath(cwd).catch(() => path.resolve(cwd));
  const root = await findRepoRoot(real, undefined, io);
  const dirs = searchDirs(real, root);
  const denied = opts.denyGlobs && opts.denyGlobs.length > 0 ? compileGlobList(opts.denyGlobs) : () => false;
  const snap: RulesSnapshot = { cwd: real, root, dirs, files: [], skipped: [] };
  const seenPaths = new Map<string, string>(); // realpath → rel of the first file
  // The bytes read (as a one-byte string: exact, and no node:crypto on a cold start's first request) → rel of the first file.
  const seenText = new Map<string, string>();
  let used = 0;
  for (const dir of dirs) {
    for (const abs of await candidates(dir, opts.files, io)) {
      const rel = relFrom(real, abs);
      const skip = (reason: string, size?: number, overTotal?: true) =>
        void snap.skipped.push({ path: abs, rel, ...(size === undefined ? {} : { size }), reason, ...(overTotal ? { overTotal } : {}) });
      const realFile = await io.realpath(abs).catch(() => abs);
      const first = seenPaths.get(realFile);
      if (first !== undefined) {
        // The same file matched twice (two patterns) is not worth a mention; a symlink to another one is.
        if (first !== rel) skip(`same file as ${first}`);
        continue;
      }
      seenPaths.set(realFile, rel);
      if (isInside(real, abs) && denied(rel)) {
        skip('denied by deny_globs');
        continue;
      }
      const r = await readCapped(abs, opts.maxBytesPerFile, opts.maxTotalBytes - used, io);
      if ('reason' in r) {
        skip(r.reason, r.size, r.overTotal);
        continue;
      }
      const bytes = r.raw.toString('latin1');
      const twin = seenText.get(bytes);
      if (twin !== undefined) {
        skip(`same text as ${twin}`, r.size);
        continue;
      }
      seenText.set(bytes, rel);
      const { text, meta } = path.extname(abs).toLowerCase() === '.mdc' ? splitFrontMatter(r.text) : { text: r.text, meta: undefined };
      if (text.trim() === '') {
        skip('empty', r.size);
        continue;
      }
      used += r.raw.length;
      snap.files.push({ path: abs, rel, size: r.size, bytes: r.raw.length, text, ...(r.truncated ? { truncated: r.truncated } : {}), ...(meta ? { meta } : {}) });
    }
  }
  return snap;
}

/** The files the patterns name in one folder, in pattern order (a glob's matches sorted by name). */
async function candidates(dir: string, patterns: readonly string[], io: RulesIo): Promise<string[]> {
  // Loaded only for a glob whose folder exists (fast-glob and its matchers cost ≈ 1 ms of a cold start).
  let globber: typeof import('fast-glob') | undefined;
  const fgLoaded = () => (globber ??= require('fast-glob') as typeof import('fast-glob'));
  const out: string[] = [];
  for (const pattern of patterns) {
    if (!isValidRulesPattern(pattern)) continue;
    const base = literalBase(pattern);
    if (base !== null && base !== '') {
      // Every match of a glob lies under its leading literal folders: none when they are not there.
      const st = await io.stat(path.join(dir, base)).catch(() => null);
      if (!st?.isDirectory()) continue;
    }
    const fg = base === null ? null : fgLoaded();
    if (!fg || !fg.isDynamicPattern(pattern)) {
      const abs = path.join(dir, pattern);
      const st = await io.stat(abs).catch(() => null);
      if (st?.isFile()) out.push(abs);
      continue;
    }
    const found = await fg(pattern, { cwd: dir, dot: true, onlyFiles: true, absolute: true, suppressErrors: true, ignore: ['**/.git/**', '**/node_modules/**'] });
    out.push(...found.map((f) => path.normalize(f)).sort().slice(0, MAX_MATCHES_PER_PATTERN));
  }
  return out;
}

/** Characters with a meaning in a glob (fast-glob / micromatch syntax, and the escape). */
const GLOB_SYNTAX = /[*?[\]{}()!+@\\]/;

/**
 * The leading folders of a pattern written without glob syntax (`.cursor/rules` of `.cursor/rules/*.mdc`,
 * '' when the first segment has some); null when the pattern has no glob syntax at all (a plain name).
 */
export function literalBase(pattern: string): string | null {
  const segs = pattern.split('/');
  for (let i = 0; i < segs.length; i++) if (GLOB_SYNTAX.test(segs[i])) return segs.slice(0, i).join('/');
  return null;
}

type ReadResult =
  | { raw: Buffer; text: string; size: number; truncated?: RulesFile['truncated'] }
  | { reason: string; size?: number; overTotal?: true };

/**
 * Reads at most `perFile` bytes of a file, and at most `left` (what the total cap leaves). A cut falls on a
 * line break when one is in the second half of what was read, else on a character boundary.
 */
async function readCapped(abs: string, perFile: number, left: number, io: RulesIo): Promise<ReadResult> {
  let fh: Awaited<ReturnType<RulesIo['open']>> | undefined;
  try {
    fh = await io.open(abs, 'r');
    const st = await fh.stat();
    if (!st.isFile()) return { reason: 'not a file' };
    const size = st.size;
    if (size === 0) return { reason: 'empty', size };
    if (left <= 0 || (size > left && left < RULES_MIN_USEFUL_BYTES)) return { reason: 'total cap reached', size, overTotal: true };
    const limit = Math.min(perFile, left);
    const want = Math.min(size, limit);
    const buf = Buffer.alloc(want);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await fh.read(buf, got, want - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    let raw: Buffer = buf.subarray(0, got);
    if (raw.includes(0)) return { reason: 'binary', size };
    const cut = got < size;
    if (cut) raw = cutAtBoundary(raw);
    if (!isUtf8(raw)) return { reason: 'not UTF-8', size };
    const truncated = cut ? (perFile <= left ? 'max_bytes_per_file' : 'max_total_bytes') : undefined;
    return { raw, text: decodeText(raw).text, size, ...(truncated ? { truncated } : {}) };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { reason: code === 'EACCES' || code === 'EPERM' ? 'permission denied' : `unreadable (${code ?? (e instanceof Error ? e.message : String(e))})` };
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** The bytes up to the last line break in their second half, else without a trailing partial character. */
export function cutAtBoundary(raw: Buffer): Buffer {
  const nl = raw.lastIndexOf(0x0a);
  if (nl >= raw.length / 2) return raw.subarray(0, nl + 1);
  let end = raw.length;
  // Back over continuation bytes to the lead byte; drop the sequence when it is incomplete.
  let i = end - 1;
  while (i >= 0 && i > end - 4 && (raw[i] & 0xc0) === 0x80) i--;
  if (i >= 0 && raw[i] >= 0xc0) {
    const need = raw[i] >= 0xf0 ? 4 : raw[i] >= 0xe0 ? 3 : 2;
    if (end - i < need) end = i;
  }
  return raw.subarray(0, end);
}

/* ------------------------------------------------------------------------------------------------
 * Cursor rules' front matter
 * ---------------------------------------------------------------------------------------------- */

/**
 * A `.mdc` file's YAML front matter (`description`, `globs`, `alwaysApply`) taken off its text. Only those
 * simple keys are read (a value on the line, or a `- item` list under it); a file without a closed front
 * matter is kept as it is.
 */
export function splitFrontMatter(text: string): { text: string; meta?: RuleMeta } {
  const m = /^---[ \t]*\n([\s\S]*?)\n---[ \t]*(?:\n|$)/.exec(text);
  if (!m) return { text };
  const meta: RuleMeta = {};
  const lines = m[1].split('\n');
  for (let i = 0; i < lines.length; i++) {
    const kv = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(lines[i]);
    if (!kv) continue;
    const key = kv[1];
    let value = kv[2].trim();
    if (value === '') {
      const items: string[] = [];
      while (i + 1 < lines.length && /^\s+-\s*/.test(lines[i + 1])) items.push(unquote(lines[++i].replace(/^\s+-\s*/, '')));
      value = items.join(', ');
    }
    if (key === 'description' && unquote(value) !== '') meta.description = unquote(value);
    else if (key === 'globs') {
      const list = value.replace(/^\[|\]$/g, '').split(',').map(unquote).filter((g) => g !== '');
      if (list.length > 0) meta.globs = list.join(', ');
    } else if (key === 'alwaysApply') meta.alwaysApply = /^true$/i.test(unquote(value));
  }
  return { text: text.slice(m[0].length), ...(Object.keys(meta).length > 0 ? { meta } : {}) };
}

function unquote(s: string): string {
  const t = s.trim();
  return /^(["']).*\1$/.test(t) ? t.slice(1, -1).trim() : t;
}

/* ------------------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------------------- */

async function exists(p: string, io: RulesIo): Promise<boolean> {
  try {
    await io.lstat(p);
    return true;
  } catch {
    return false;
  }
}

function isInside(dir: string, p: string): boolean {
  const r = path.relative(dir, p);
  return r === '' || (r !== '..' && !r.startsWith(`..${path.sep}`) && !path.isAbsolute(r));
}

function relFrom(cwd: string, abs: string): string {
  return path.relative(cwd, abs).split(path.sep).join('/');
}
