import fsp from 'node:fs/promises';
import path from 'node:path';
import { globToRegExpSource } from './glob-match';

/** One line of a .gitignore file, compiled. */
export interface IgnoreRule {
  /** Folder of the .gitignore, workspace-relative ('' for the root). */
  base: string;
  re: RegExp;
  negated: boolean;
  dirOnly: boolean;
}

/** Parses .gitignore text (git's rules: comments, `!`, trailing `/`, anchoring by a `/`, `**`). */
export function parseGitignore(text: string, base: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (let raw of text.split(/\r?\n/)) {
    if (raw === '' || raw.startsWith('#')) continue;
    raw = raw.replace(/(?<!\\)\s+$/, '');
    if (raw === '') continue;
    let negated = false;
    if (raw.startsWith('!')) {
      negated = true;
      raw = raw.slice(1);
    } else if (raw.startsWith('\\!') || raw.startsWith('\\#')) {
      raw = raw.slice(1);
    }
    let dirOnly = false;
    if (raw.endsWith('/')) {
      dirOnly = true;
      raw = raw.replace(/\/+$/, '');
    }
    if (raw === '') continue;
    const anchored = raw.includes('/');
    if (raw.startsWith('/')) raw = raw.slice(1);
    const body = globToRegExpSource(raw);
    const re = new RegExp('^' + (anchored ? '' : '(?:.*/)?') + body + '$');
    rules.push({ base, re, negated, dirOnly });
  }
  return rules;
}

/**
 * The .gitignore rules that apply along one folder path. Immutable: `child()` returns a new matcher
 * with the rules of a sub-folder's .gitignore added (deeper files win over shallower ones).
 */
export class IgnoreMatcher {
  constructor(private readonly rules: IgnoreRule[] = []) {}

  withRules(more: IgnoreRule[]): IgnoreMatcher {
    return more.length ? new IgnoreMatcher([...this.rules, ...more]) : this;
  }

  /** Is this workspace-relative path ignored by a rule (parent folders are not checked here)? */
  ignores(rel: string, isDir: boolean): boolean {
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const r = this.rules[i];
      if (r.dirOnly && !isDir) continue;
      let sub: string;
      if (r.base === '') sub = rel;
      else if (rel.startsWith(r.base + '/')) sub = rel.slice(r.base.length + 1);
      else continue;
      if (r.re.test(sub)) return !r.negated;
    }
    return false;
  }
}

/** The rules of `<relDir>/.gitignore` (none when it is missing or unreadable). */
export async function readIgnoreFile(rootAbs: string, relDir: string): Promise<IgnoreRule[]> {
  try {
    const text = await fsp.readFile(path.join(rootAbs, relDir, '.gitignore'), 'utf8');
    return parseGitignore(text, relDir);
  } catch {
    return [];
  }
}

/** Matcher for the folder `relDir`: the .gitignore files of the root and every folder down to it. */
export async function matcherFor(rootAbs: string, relDir: string): Promise<IgnoreMatcher> {
  let m = new IgnoreMatcher();
  const parts = relDir === '' ? [] : relDir.split('/');
  for (let i = 0; i <= parts.length; i++) {
    m = m.withRules(await readIgnoreFile(rootAbs, parts.slice(0, i).join('/')));
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
    entries = await fsp.readdir(path.join(opts.rootAbs, relDir), { withFileTypes: true });
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
      const m = opts.gitignore ? parent.withRules(await readIgnoreFile(opts.rootAbs, rel)) : parent;
      yield* walkDir(opts, rel, m);
    }
  }
}
