import { createTwoFilesPatch } from 'diff';

/**
 * Unified diff of one file's change, `a/` and `b/` prefixed, 3 lines of context.
 * (The patch engine ships its own `unifiedDiff` in patch/diff.ts; this is the workspace's entry point.)
 */
export function fileDiff(oldPath: string | null, newPath: string | null, oldText: string, newText: string): string {
  const a = oldPath === null ? '/dev/null' : `a/${oldPath}`;
  const b = newPath === null ? '/dev/null' : `b/${newPath}`;
  const out = createTwoFilesPatch(a, b, oldText, newText, undefined, undefined, { context: 3 });
  // Drop the "Index:"/"====" preamble the library adds; keep ---/+++ and hunks.
  const start = out.indexOf('--- ');
  return start >= 0 ? out.slice(start) : out;
}
