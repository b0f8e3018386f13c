import fs from 'node:fs';
import path from 'node:path';
import { ToolError } from '../tools/errors';
import { compileGlobList, type PathMatcher } from './glob-match';

export const DEFAULT_DENY_GLOBS: readonly string[] = ['.git/**'];

/** A path the workspace has checked: confined to the root, not denied. */
export interface ResolvedPath {
  /** Absolute path with symlinks in existing parts resolved. */
  abs: string;
  /** Workspace-relative, `/`-separated ('' for the root itself). */
  rel: string;
}

/**
 * Turns a path from the model into a confined absolute path. Relative paths are taken from the root;
 * `..` and symlinks are resolved (for the longest existing prefix) before the confinement check.
 */
export class PathResolver {
  private deny: PathMatcher | undefined;

  constructor(
    readonly root: string,
    readonly denyGlobs: readonly string[] = DEFAULT_DENY_GLOBS,
  ) {}

  /** Workspace-relative form of an absolute path under the root. */
  relative(abs: string): string {
    return path.relative(this.root, abs).split(path.sep).join('/');
  }

  /** Denied by the deny globs (compiled on the first check; see compileGlobList for their rules). */
  isDenied(rel: string): boolean {
    this.deny ??= compileGlobList(this.denyGlobs);
    return this.deny(rel);
  }

  resolve(input: string, opts: { allowRoot?: boolean } = {}): ResolvedPath {
    if (typeof input !== 'string' || input.length === 0) {
      throw new ToolError('invalid_arguments', 'A path is required.', { suggestedAction: 'Pass a workspace-relative path.' });
    }
    if (input.includes('\0')) {
      throw new ToolError('invalid_arguments', 'The path contains a NUL byte.', { suggestedAction: 'Pass a plain workspace-relative path.' });
    }
    const lexical = path.resolve(this.root, input);
    if (!isUnder(this.root, lexical)) throw outside(input);
    const abs = realpathOfLongestPrefix(lexical);
    if (!isUnder(this.root, abs)) throw outside(input);
    const rel = this.relative(abs);
    if (rel === '' && !opts.allowRoot) {
      throw new ToolError('is_directory', 'The workspace root is a directory.', { path: '.' });
    }
    // Deny globs apply to the path as written and as resolved.
    if (this.isDenied(rel) || this.isDenied(this.relative(lexical))) {
      throw new ToolError('permission_denied', `Access to "${rel}" is denied by the workspace's deny globs.`, {
        path: rel,
        suggestedAction: 'Choose a path that is not protected (e.g. not inside .git).',
      });
    }
    return { abs, rel };
  }
}

function outside(input: string): ToolError {
  return new ToolError('outside_workspace', `"${input}" is outside the workspace.`, {
    path: input,
    suggestedAction: 'Use a path inside the workspace root (relative paths are resolved from the root).',
  });
}

export function isUnder(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** realpath of the longest existing prefix, with the non-existing rest appended. */
function realpathOfLongestPrefix(p: string): string {
  let head = p;
  const tail: string[] = [];
  for (;;) {
    try {
      const real = fs.realpathSync.native(head);
      return tail.length ? path.join(real, ...tail.reverse()) : real;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ELOOP') throw new ToolError('invalid_arguments', `"${p}" is a symlink loop.`);
      if (code === 'EACCES') throw new ToolError('permission_denied', `Permission denied for "${p}".`);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      // A dangling symlink: follow its target lexically so it cannot point outside unnoticed.
      try {
        const link = fs.readlinkSync(head);
        const target = path.resolve(path.dirname(head), link);
        const resolved = realpathOfLongestPrefix(target);
        return tail.length ? path.join(resolved, ...tail.reverse()) : resolved;
      } catch {
        // not a symlink
      }
      const parent = path.dirname(head);
      if (parent === head) return p;
      tail.push(path.basename(head));
      head = parent;
    }
  }
}
