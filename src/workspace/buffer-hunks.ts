import { diffArrays } from 'diff';

/** One replacement in a buffer: old lines [start, start+count) (0-based) become `lines`. */
export interface LineHunk {
  start: number;
  count: number;
  lines: string[];
}

/** Above this many changed lines the middle is sent as a single hunk (no line diff). */
const MAX_DIFF_LINES = 4000;

/**
 * Minimal line hunks turning buffer text `a` into `b` (both "line\n"-joined, see bytesToBufferText):
 * common leading/trailing lines are skipped with native string compares, the middle is line-diffed.
 */
export function lineHunks(a: string, b: string): LineHunk[] {
  if (a === b) return [];
  const max = Math.min(a.length, b.length);
  let p = 0;
  while (p + 4096 <= max && a.slice(p, p + 4096) === b.slice(p, p + 4096)) p += 4096;
  while (p < max && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  const start = p === 0 ? 0 : a.lastIndexOf('\n', p - 1) + 1; // start of the first differing line
  let s = 0;
  const room = max - start;
  while (s + 4096 <= room && a.slice(a.length - s - 4096, a.length - s) === b.slice(b.length - s - 4096, b.length - s)) s += 4096;
  while (s < room && a.charCodeAt(a.length - 1 - s) === b.charCodeAt(b.length - 1 - s)) s++;
  // The common suffix must begin at a line start in both texts.
  let suffix = s;
  while (suffix > 0 && (a.charCodeAt(a.length - suffix - 1) !== 10 || b.charCodeAt(b.length - suffix - 1) !== 10)) suffix--;
  let startLine = 0;
  for (let i = a.indexOf('\n'); i !== -1 && i < start; i = a.indexOf('\n', i + 1)) startLine++;
  const split = (t: string) => (t === '' ? [] : t.slice(0, -1).split('\n'));
  const oldMid = split(a.slice(start, a.length - suffix));
  const newMid = split(b.slice(start, b.length - suffix));
  if (oldMid.length + newMid.length > MAX_DIFF_LINES) return [{ start: startLine, count: oldMid.length, lines: newMid }];
  const hunks: LineHunk[] = [];
  let row = startLine;
  let cur: LineHunk | null = null;
  for (const part of diffArrays(oldMid, newMid)) {
    if (!part.added && !part.removed) {
      if (cur) hunks.push(cur);
      cur = null;
      row += part.count ?? part.value.length;
      continue;
    }
    cur ??= { start: row, count: 0, lines: [] };
    if (part.removed) {
      cur.count += part.value.length;
      row += part.value.length;
    } else cur.lines.push(...part.value);
  }
  if (cur) hunks.push(cur);
  return hunks;
}

/** Applies hunks to "line\n"-joined text (the inverse check used by tests). */
export function applyLineHunks(a: string, hunks: LineHunk[]): string {
  const lines = a === '' ? [] : a.slice(0, -1).split('\n');
  for (const h of [...hunks].reverse()) lines.splice(h.start, h.count, ...h.lines);
  return lines.length ? lines.join('\n') + '\n' : '';
}
