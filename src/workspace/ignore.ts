import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Ignore } from 'ignore';
import { readdirVerified } from './anchored';

/** The rules of one .gitignore file, matched relative to its folder. */
interface IgnoreFile {
  /** Folder of the .gitignore, workspace-relative ('' for the root). */
  base: string;
  rules: Ignore;
}

/** Compiles .gitignore text with the `ignore` package (git's rules), loaded on first use. */
export function compileGitignore(text: string): Ignore {
  const ignore = require('ignore') as typeof import('ignore');
  // Case-sensitive like git on Linux (core.ignorecase=false) and like ripgrep, which grep's other engine is.
  return ignore({ ignorecase: false }).add(text);
}

/**
 * The .gitignore files that apply along one folder path, root first. Immutable: `withFile()` returns a new
 * matcher with a sub-folder's file added. As in git, the deepest file with a rule for a path decides
 * (its `!negation` re-includes what a shallower file ignores), and within a file the last matching rule wins.
 */
export class IgnoreMatcher {
  constructor(private readonly files: readonly IgnoreFile[] = []) {}

  withFile(base: string, text: string | undefined): IgnoreMatcher {
    return text === undefined ? this : new IgnoreMatcher([...this.files, { base, rules: compileGitignore(text) }]);
  }

  /**
   * Is this workspace-relative path ignored by these files' rules (a rule for a parent folder included)? A folder
   * ignored by a shallower file is pruned by the walk and by isIgnoredPath before a deeper file is consulted.
   */
  ignores(rel: string, isDir: boolean): boolean {
    for (let i = this.files.length - 1; i >= 0; i--) {
      const { base, rules } = this.files[i];
      let sub: string;
      if (base === '') sub = rel;
      else if (rel.startsWith(base + '/')) sub = rel.slice(base.length + 1);
      else continue;
      if (sub === '') continue;
      // A trailing slash is how `ignore` tells a folder, for directory-only rules such as `dist/`.
      const r = rules.test(isDir ? sub + '/' : sub);
      if (r.ignored) return true;
      if (r.unignored) return false;
    }
    return false;
  }
}

/** The text of `<relDir>/.gitignore` (undefined when it is missing or unreadable). */
export async function readIgnoreFile(rootAbs: string, relDir: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(path.join(rootAbs, relDir, '.gitignore'), 'utf8');
  } catch {
    return undefined;
  }
}

/** Matcher for the folder `relDir`: the .gitignore files of the root and every folder down to it. */
export async function matcherFor(rootAbs: string, relDir: string): Promise<IgnoreMatcher> {
  let m = new IgnoreMatcher();
  const parts = relDir === '' ? [] : relDir.split('/');
  for (let i = 0; i <= parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    m = m.withFile(dir, await readIgnoreFile(rootAbs, dir));
  }
  return m;
}

/** True when `rel` or a parent folder of it (below `fromDir`) is ignored. */
export async function isIgnoredPath(rootAbs: string, rel: string, isDir: boolean, cache: Map<string, IgnoreMatcher>): Promise<boolean> {
  const parts = rel.split('/');
  for (let i = 1; i <= parts.length; i++) {
    const dir = parts.slice(0, i - 1).join('/');
    let m = cache.get(dir);
    if (!m) {
      m = await matcherFor(rootAbs, dir);
      cache.set(dir, m);
    }
    const sub = parts.slice(0, i).join('/');
    if (m.ignores(sub, i < parts.length || isDir)) return true;
  }
  return false;
}

export interface WalkEntry {
  rel: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
}

export interface WalkOptions {
  rootAbs: string;
  /** Folder to start from, workspace-relative. */
  startRel: string;
  gitignore: boolean;
  /** Skip these (e.g. `.git`, deny globs); a skipped folder is not entered. */
  skip: (rel: string) => boolean;
  recursive: boolean;
  signal?: AbortSignal;
}

/** Depth-first walk in name order, honouring nested .gitignore files and pruning ignored folders. */
export async function* walk(opts: WalkOptions): AsyncGenerator<WalkEntry> {
  const start = opts.gitignore ? await matcherFor(opts.rootAbs, opts.startRel) : new IgnoreMatcher();
  yield* walkDir(opts, opts.startRel, start);
}

async function* walkDir(opts: WalkOptions, relDir: string, parent: IgnoreMatcher): AsyncGenerator<WalkEntry> {
  opts.signal?.throwIfAborted();
  let entries;
  try {
    // Through a verified handle: a folder swapped for a link to elsewhere is not listed (anchored.ts).
    entries = await readdirVerified(opts.rootAbs, path.join(opts.rootAbs, relDir));
  } catch {
    return;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const rel = relDir === '' ? e.name : `${relDir}/${e.name}`;
    if (e.name === '.git' || opts.skip(rel)) continue;
    const isDir = e.isDirectory();
    if (opts.gitignore && parent.ignores(rel, isDir)) continue;
    const type: WalkEntry['type'] = isDir ? 'dir' : e.isFile() ? 'file' : e.isSymbolicLink() ? 'symlink' : 'other';
    yield { rel, type };
    if (isDir && opts.recursive) {
      const m = opts.gitignore ? parent.withFile(rel, await readIgnoreFile(opts.rootAbs, rel)) : parent;
      yield* walkDir(opts, rel, m);
    }
  }
}
