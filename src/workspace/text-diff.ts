import { unifiedDiff } from './patch/diff';

/** Texts above this size are trimmed to their changed region before diffing. */
const TRIM_ABOVE = 64 * 1024;
const CONTEXT = 3;

/**
 * Unified diff of one file's change for tool results, previews and the audit log
 * (`null` old path = an added file). Delegates to the patch engine's unifiedDiff; for large files
 * only the changed region (plus context) is diffed and the hunk line numbers shifted back.
 */
export function fileDiff(oldPath: string | null, newPath: string | null, oldText: string, newText: string): string {
  const path = newPath ?? oldPath ?? '';
  const opts = oldPath !== null && oldPath !== path ? { oldPath } : {};
  if (oldText.length < TRIM_ABOVE || newText.length < TRIM_ABOVE) return unifiedDiff(path, oldText, newText, opts);
  const t = trimCommon(oldText, newText);
  if (t.skippedLines === 0 && t.oldMid.length === oldText.length) return unifiedDiff(path, oldText, newText, opts);
  const d = unifiedDiff(path, t.oldMid, t.newMid, opts);
  return d.replace(/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@/gm, (_m, a: string, b: string | undefined, c: string, e: string | undefined) => {
    const shift = (n: string) => String(Number(n) === 0 && t.skippedLines === 0 ? 0 : Number(n) + t.skippedLines);
    return `@@ -${shift(a)}${b ?? ''} +${shift(c)}${e ?? ''} @@`;
  });
}

/** Drops the common leading and trailing whole lines (keeping CONTEXT lines of each). */
function trimCommon(a: string, b: string): { oldMid: string; newMid: string; skippedLines: number } {
  const max = Math.min(a.length, b.length);
  let p = 0;
  // Coarse steps first (string compare of 4 KB slices is native), then char by char.
  while (p + 4096 <= max && a.slice(p, p + 4096) === b.slice(p, p + 4096)) p += 4096;
  while (p < max && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  let start = a.lastIndexOf('\n', p - 1) + 1;
  for (let i = 0; i < CONTEXT && start > 0; i++) start = a.lastIndexOf('\n', start - 2) + 1;
  let s = 0;
  const room = max - start;
  while (s + 4096 <= room && a.slice(a.length - s - 4096, a.length - s) === b.slice(b.length - s - 4096, b.length - s)) s += 4096;
  while (s < room && a.charCodeAt(a.length - 1 - s) === b.charCodeAt(b.length - 1 - s)) s++;
  // Keep whole lines at the end: the suffix starts after a line break that both texts share.
  let endA = a.length - s;
  const nl = a.indexOf('\n', endA - 1);
  endA = nl === -1 ? a.length : nl + 1;
  for (let i = 0; i < CONTEXT && endA < a.length; i++) {
    const n = a.indexOf('\n', endA);
    endA = n === -1 ? a.length : n + 1;
  }
  const suffix = a.length - endA;
  let skippedLines = 0;
  for (let i = a.indexOf('\n'); i !== -1 && i < start; i = a.indexOf('\n', i + 1)) skippedLines++;
  return { oldMid: a.slice(start, endA), newMid: b.slice(start, b.length - suffix), skippedLines };
}
