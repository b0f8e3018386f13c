/** Unified diffs for tool results and approval previews. */
import { createTwoFilesPatch } from 'diff';

export interface UnifiedDiffOptions {
  /** Lines of context around each change (default 3, like git). */
  context?: number;
  /** Old name when the file was renamed (default: `path`). */
  oldPath?: string;
}

/**
 * A git-style unified diff (`--- a/path`, `+++ b/path`, hunks) of one file; '' when nothing changed.
 * Pass '' as `oldText` for an added file and as `newText` for a deleted one.
 */
export function unifiedDiff(path: string, oldText: string, newText: string, options: UnifiedDiffOptions = {}): string {
  const oldPath = options.oldPath ?? path;
  if (oldText === newText && oldPath === path) return '';
  return createTwoFilesPatch(`a/${oldPath}`, `b/${path}`, oldText, newText, undefined, undefined, {
    context: options.context ?? 3,
    headerOptions: { includeIndex: false, includeUnderline: false, includeFileHeaders: true },
  });
}
