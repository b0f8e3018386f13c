import fs from 'node:fs';
import path from 'node:path';
import { ToolError } from '../tools/errors';
import { compileGlobList, type PathMatcher } from './glob-match';

export const DEFAULT_DENY_GLOBS: readonly string[] = ['.git/**'];

/**
 * A `.git` folder or file at any depth, or anything under one: nested repositories, submodules and
 * worktrees (whose `.git` is a file) included. Changing one can make git run commands (core.fsmonitor,
 * hooks), so it is always protected (issue 18, item 10). Case-insensitive, as on macOS and Windows.
 */
export function inGitDir(rel: string): boolean {
  return rel.split('/').some((seg) => seg.toLowerCase() === '.git');
}

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

  /**
   * Denied by the deny globs (compiled on the first check; see compileGlobList for their rules), or inside
   * any repository's `.git` (see inGitDir), whatever the deny globs say.
   */
  isDenied(rel: string): boolean {
    if (inGitDir(rel)) return true;
    this.deny ??= compileGlobList(this.denyGlobs);
    return this.deny(rel);
  }

  resolve(input: string, opts: { allowRoot?: boolean } = {}): ResolvedPath {
    const { abs, lexical, readings } = confine(this.root, input);
    const rel = this.relative(abs);
    if (rel === '' && !opts.allowRoot) {
      throw new ToolError('is_directory', 'The workspace root is a directory.', { path: '.' });
    }
    // Deny globs apply to the path as written, as resolved, and as read another way.
    if (this.isDenied(rel) || this.isDenied(this.relative(lexical)) || readings.some((r) => this.isDenied(this.relative(r)))) {
      const git = [rel, this.relative(lexical), ...readings.map((r) => this.relative(r))].some(inGitDir);
      const why = git ? 'is inside a .git folder or is a .git file (every repository\'s, at any depth, is protected)' : "is denied by the workspace's deny globs";
      throw new ToolError('permission_denied', `Access to "${rel}" ${why}.`, {
        path: rel,
        suggestedAction: git ? 'Every .git folder or file (nested repositories and submodules too) is protected; use git through bash if the user asks.' : 'Choose a path that is not protected (e.g. not inside .git).',
      });
    }
    return { abs, rel };
  }
}

/**
 * Confines a path from the model to `root` (a realpath): `abs` has the symlinks of its existing part
 * resolved; `lexical` is the path as written; `readings` are other ways to read it (see otherReadings),
 * all inside the root. Throws outside_workspace, or invalid_arguments for a NUL byte or an over-long name.
 */
export function confine(root: string, input: string): { abs: string; lexical: string; readings: string[] } {
  if (typeof input !== 'string' || input.length === 0) {
    throw new ToolError('invalid_arguments', 'A path is required.', { suggestedAction: 'Pass a workspace-relative path.' });
  }
  if (input.includes('\0')) {
    throw new ToolError('invalid_arguments', 'The path contains a NUL byte.', { suggestedAction: 'Pass a plain workspace-relative path.' });
  }
  assertNameLengths(input);
  if (/^~([a-z_][a-z0-9_.-]*)?(\/|$)/i.test(input)) {
    throw outside(input, 'A leading ~ is not expanded: the home folder is outside the workspace.');
  }
  const lexical = path.resolve(root, input);
  if (!isUnder(root, lexical)) throw outside(input);
  // A path that leaves the root when read another way (backslashes, look-alike characters, %-encoding)
  // is refused as well: another program, platform or a later decoding step may read it that way.
  const readings = otherReadings(input).map((r) => path.resolve(root, r));
  const escaping = readings.findIndex((r) => !isUnder(root, r));
  if (escaping !== -1) throw outside(input, `Read as "${otherReadings(input)[escaping]}" it would be outside the workspace.`);
  const abs = realpathOfLongestPrefix(lexical);
  if (!isUnder(root, abs)) throw outside(input);
  return { abs, lexical, readings };
}

function outside(input: string, why = ''): ToolError {
  return new ToolError('outside_workspace', `"${input}" is outside the workspace.${why ? ` ${why}` : ''}`, {
    path: input,
    suggestedAction: 'Use a path inside the workspace root (relative paths are resolved from the root).',
  });
}

/** Longest file name and path Linux and macOS accept (bytes). */
const NAME_MAX = 255;
const PATH_MAX = 4095;

function assertNameLengths(input: string): void {
  const tooLong = Buffer.byteLength(input) > PATH_MAX || input.split(/[/\\]/).some((seg) => Buffer.byteLength(seg) > NAME_MAX);
  if (tooLong) {
    throw new ToolError('invalid_arguments', `The path is too long (at most ${NAME_MAX} bytes per name, ${PATH_MAX} in all).`, {
      suggestedAction: 'Use a shorter path.',
    });
  }
}

/** Characters that look like a slash or backslash without being one (NFKC keeps them). */
const SLASH_LOOKALIKES = /[\u2215\u2044\u29f8\u2571\u27cb]/g;
const BACKSLASH_LOOKALIKES = /[\u29f9\u2572\u27cd]/g;

/**
 * The path read as other software might: backslashes as separators, compatibility forms (fullwidth dots
 * and slashes, the two-dot leader) and slash look-alikes folded, %-escapes decoded (up to three times).
 */
export function otherReadings(input: string): string[] {
  const fold = (s: string) => s.normalize('NFKC').replace(SLASH_LOOKALIKES, '/').replace(BACKSLASH_LOOKALIKES, '\\').replace(/\\/g, '/');
  const out = new Set<string>([fold(input)]);
  let decoded = input;
  for (let i = 0; i < 3 && /%[0-9a-f]{2}/i.test(decoded); i++) {
    try {
      decoded = decodeURIComponent(decoded);
    } catch {
      break;
    }
    out.add(fold(decoded));
  }
  out.delete(input);
  return [...out];
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
      if (code === 'ENAMETOOLONG') throw new ToolError('invalid_arguments', 'The path is too long.', { suggestedAction: 'Use a shorter path.' });
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
