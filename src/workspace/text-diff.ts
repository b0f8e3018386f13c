import { unifiedDiff } from './patch/diff';
import { commonPrefix, commonSuffix, countByte } from './buffer-hunks';

/** Texts above this size are trimmed to their changed region before diffing. */
const TRIM_ABOVE = 64 * 1024;
const CONTEXT = 3;
const NL = 10;

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
  return shiftedDiff(path, t, 0, opts);
}

/**
 * fileDiff of two texts given as UTF-8 bytes (no BOM; the model's view of the file), with the same
 * output: for large files the common leading and trailing lines (beyond the diff context) are found
 * with native byte compares and only the rest is decoded and diffed.
 */
export function fileDiffBytes(oldPath: string | null, newPath: string | null, oldBytes: Buffer, newBytes: Buffer): string {
  // A UTF-16 length is at least a third of the UTF-8 length: both texts are then above TRIM_ABOVE.
  if (oldBytes.length < 3 * TRIM_ABOVE || newBytes.length < 3 * TRIM_ABOVE) return fileDiff(oldPath, newPath, oldBytes.toString('utf8'), newBytes.toString('utf8'));
  const a = oldBytes;
  const b = newBytes;
  const max = Math.min(a.length, b.length);
  const p = commonPrefix(a, b, max);
  const lineStart = p === 0 ? 0 : a.lastIndexOf(NL, p - 1) + 1;
  // Cut whole lines that trimCommon would drop anyway: one more line than the context on each side.
  let head = lineStart;
  for (let i = 0; i <= CONTEXT && head > 0; i++) head = head >= 2 ? a.lastIndexOf(NL, head - 2) + 1 : 0;
  const suffix = commonSuffix(a, b, max - lineStart);
  let tail = 0;
  let nl = a.indexOf(NL, Math.max(a.length - suffix - 1, 0));
  for (let i = 0; i <= CONTEXT && nl !== -1; i++) nl = a.indexOf(NL, nl + 1);
  if (nl !== -1) tail = a.length - (nl + 1);
  if (head === 0 && tail === 0) return fileDiff(oldPath, newPath, a.toString('utf8'), b.toString('utf8'));
  const path = newPath ?? oldPath ?? '';
  const opts = oldPath !== null && oldPath !== path ? { oldPath } : {};
  const t = trimCommon(a.toString('utf8', head, a.length - tail), b.toString('utf8', head, b.length - tail));
  return shiftedDiff(path, t, countByte(a, NL, 0, head), opts);
}

/** unifiedDiff of the trimmed middle, hunk line numbers shifted back by the skipped lines. */
function shiftedDiff(path: string, t: { oldMid: string; newMid: string; skippedLines: number }, baseLines: number, opts: { oldPath?: string }): string {
  const skipped = t.skippedLines + baseLines;
  const d = unifiedDiff(path, t.oldMid, t.newMid, opts);
  return d.replace(/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@/gm, (_m, a: string, b: string | undefined, c: string, e: string | undefined) => {
    const shift = (n: string) => String(Number(n) === 0 && skipped === 0 ? 0 : Number(n) + skipped);
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
