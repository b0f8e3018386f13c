import { unifiedDiff } from './patch/diff';

/**
 * Unified diff of one file's change for tool results, previews and the audit log
 * (`null` old path = an added file). Delegates to the patch engine's unifiedDiff.
 */
export function fileDiff(oldPath: string | null, newPath: string | null, oldText: string, newText: string): string {
  const path = newPath ?? oldPath ?? '';
  return unifiedDiff(path, oldText, newText, oldPath !== null && oldPath !== path ? { oldPath } : {});
}
