/** Unified diffs for tool results and approval previews. */
import type { StructuredPatchHunk } from 'diff';
/** jsdiff, loaded on first use: its evaluation (the word tokenizer's tables) cost ≈ 3 ms of every cold start before the first request (issue 24). */
const jsdiff = (): typeof import('diff') => require('diff') as typeof import('diff');

/**
 * Most inserted plus deleted lines the line diff looks for. The diff's cost grows with the square of
 * this; past it (e.g. a write_file that rewrites a large file) the changed region becomes one hunk,
 * which a 1 MB rewrite otherwise spends minutes on.
 */
export const MAX_DIFF_EDIT_LENGTH = 1000;

export interface UnifiedDiffOptions {
  /** Lines of context around each change (default 3, like git). */
  context?: number;
  /** Old name when the file was renamed (default: `path`). */
  oldPath?: string;
}

const HEADER_OPTIONS = { includeIndex: false, includeUnderline: false, includeFileHeaders: true };
const NO_EOL = '\\ No newline at end of file';

/**
 * A git-style unified diff (`--- a/path`, `+++ b/path`, hunks) of one file; '' when nothing changed.
 * Pass '' as `oldText` for an added file and as `newText` for a deleted one.
 */
export function unifiedDiff(path: string, oldText: string, newText: string, options: UnifiedDiffOptions = {}): string {
  const oldPath = options.oldPath ?? path;
  if (oldText === newText && oldPath === path) return '';
  const context = options.context ?? 3;
  const diff = jsdiff().createTwoFilesPatch(`a/${oldPath}`, `b/${path}`, oldText, newText, undefined, undefined, {
    context,
    headerOptions: HEADER_OPTIONS,
    maxEditLength: MAX_DIFF_EDIT_LENGTH,
  });
  if (diff !== undefined) return diff;
  return jsdiff().formatPatch(
    { oldFileName: `a/${oldPath}`, newFileName: `b/${path}`, oldHeader: undefined, newHeader: undefined, hunks: [replacementHunk(oldText, newText, context)] },
    HEADER_OPTIONS,
  );
}

/** Lines with their line break ('a\n', 'b\n', 'last'), so a missing final break is a difference. */
function linesWithBreaks(text: string): string[] {
  const out = text.split(/(?<=\n)/);
  return out.length === 1 && out[0] === '' ? [] : out;
}

/** One hunk replacing everything between the common leading and trailing lines (with context). */
function replacementHunk(oldText: string, newText: string, context: number): StructuredPatchHunk {
  const a = linesWithBreaks(oldText);
  const b = linesWithBreaks(newText);
  const max = Math.min(a.length, b.length);
  let p = 0;
  while (p < max && a[p] === b[p]) p++;
  let s = 0;
  while (s < max - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const start = p - Math.min(context, p);
  const after = Math.min(context, s);
  const lines: string[] = [];
  const push = (prefix: string, line: string) => {
    lines.push(prefix + (line.endsWith('\n') ? line.slice(0, -1) : line));
    if (!line.endsWith('\n')) lines.push(NO_EOL);
  };
  for (const l of a.slice(start, p)) push(' ', l);
  for (const l of a.slice(p, a.length - s)) push('-', l);
  for (const l of b.slice(p, b.length - s)) push('+', l);
  for (const l of a.slice(a.length - s, a.length - s + after)) push(' ', l);
  const oldLines = a.length - s + after - start;
  const newLines = b.length - s + after - start;
  // jsdiff numbering: formatPatch writes start - 1 for an empty side.
  return { oldStart: start + 1, oldLines, newStart: start + 1, newLines, lines };
}
