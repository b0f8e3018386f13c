import type { PicomatchOptions } from 'picomatch';

/**
 * Glob matching for workspace-relative, `/`-separated paths, done by picomatch (Bash rules): `*` and `?` within
 * a segment, `**` across segments, `[a-z]` and `[!x]` classes, `{a,b}` alternatives, `\` escapes, a leading `!`
 * negates. Dotfiles match like any other name. picomatch is loaded on the first compile, not at start-up.
 */

export type PathMatcher = (relPath: string) => boolean;

// posix: `[!x]` is a negated class, as in Bash and ripgrep (picomatch reads it as a literal `!` without it).
const OPTIONS: PicomatchOptions = { dot: true, posix: true };

function picomatch(): typeof import('picomatch/posix') {
  // The posix build: paths are always `/`-separated here, and `\` is an escape on every platform.
  return require('picomatch/posix') as typeof import('picomatch/posix');
}

/** One glob against a whole path; `!glob` matches every path the glob does not. */
export function compileGlob(glob: string): PathMatcher {
  return picomatch()(glob, OPTIONS);
}

/** Escapes the glob syntax in a literal path, so it matches only itself. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[\\*?[\]{}()!+@]/g, '\\$&');
}

/**
 * A list of globs in the manner of deny lists and .gitignore anchoring:
 * - a glob with a `/` (other than a trailing one) is matched from the workspace root; a leading `/` only anchors;
 * - a glob without one matches a name at any depth (`*.pem`, `secrets`, `secrets/`);
 * - a path matches when it or one of its parent folders matches a glob, unless the path itself matches a `!glob`.
 */
export function compileGlobList(globs: readonly string[]): PathMatcher {
  const pm = picomatch();
  const positive: PathMatcher[] = [];
  const negative: PathMatcher[] = [];
  for (const raw of globs) {
    const negated = raw.startsWith('!');
    let glob = (negated ? raw.slice(1) : raw).replace(/^\.\//, '').replace(/\/+$/, '');
    const anchored = glob.includes('/');
    glob = glob.replace(/^\/+/, '');
    if (glob === '') continue;
    (negated ? negative : positive).push(pm(glob, { ...OPTIONS, basename: !anchored }));
  }
  if (positive.length === 0) return () => false;
  return (relPath) => {
    if (relPath === '') return false;
    const parts = relPath.split('/');
    let hit = false;
    for (let n = 1; n <= parts.length && !hit; n++) {
      const prefix = parts.slice(0, n).join('/');
      hit = positive.some((m) => m(prefix));
    }
    return hit && !negative.some((m) => m(relPath));
  };
}
