/**
 * A small glob → RegExp compiler for deny globs and .gitignore patterns:
 * `**` (any number of path segments), `*` and `?` (within a segment), `[...]` classes and `{a,b}` alternatives.
 */
export function globToRegExpSource(glob: string): string {
  let re = '';
  let i = 0;
  let braceDepth = 0;
  while (i < glob.length) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const atStart = i === 0 || glob[i - 1] === '/';
        const atEnd = i + 2 === glob.length || glob[i + 2] === '/';
        if (atStart && atEnd) {
          if (i + 2 === glob.length) {
            re += '.*';
            i += 2;
          } else {
            re += '(?:.*/)?';
            i += 3;
          }
          continue;
        }
        re += '[^/]*';
        i += 2;
        continue;
      }
      re += '[^/]*';
      i++;
    } else if (c === '?') {
      re += '[^/]';
      i++;
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) {
        re += '\\[';
        i++;
        continue;
      }
      let body = glob.slice(i + 1, end);
      if (body.startsWith('!')) body = '^' + body.slice(1);
      re += '[' + body.replace(/\\/g, '\\\\') + ']';
      i = end + 1;
    } else if (c === '{') {
      braceDepth++;
      re += '(?:';
      i++;
    } else if (c === '}' && braceDepth > 0) {
      braceDepth--;
      re += ')';
      i++;
    } else if (c === ',' && braceDepth > 0) {
      re += '|';
      i++;
    } else if (c === '\\' && i + 1 < glob.length) {
      re += '\\' + glob[i + 1];
      i += 2;
    } else {
      re += /[.+^$()|\\]/.test(c) ? '\\' + c : c;
      i++;
    }
  }
  return re;
}

/** Whole-path matcher for a workspace-relative, `/`-separated path. */
export function globToRegExp(glob: string): RegExp {
  return new RegExp('^' + globToRegExpSource(glob) + '$');
}

/** True when `relPath` or one of its parent folders matches one of the globs. */
export function matchesAnyGlob(relPath: string, globs: RegExp[]): boolean {
  if (globs.length === 0) return false;
  const parts = relPath.split('/');
  for (let n = parts.length; n >= 1; n--) {
    const prefix = parts.slice(0, n).join('/');
    if (globs.some((g) => g.test(prefix))) return true;
  }
  return false;
}
