/** jsdiff, loaded on first use: its evaluation (the word tokenizer's tables) cost ≈ 3 ms of every cold start before the first request (issue 24). */
const jsdiff = (): typeof import('diff') => require('diff') as typeof import('diff');

/** One replacement in a buffer: old lines [start, start+count) (0-based) become `lines`. */
export interface LineHunk {
  start: number;
  count: number;
  lines: string[];
}

/** Above this many changed lines the middle is sent as a single hunk (no line diff). */
const MAX_DIFF_LINES = 4000;
const BLOCK = 64 * 1024;
const NL = 10;

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
  return middleHunks(startLine, split(a.slice(start, a.length - suffix)), split(b.slice(start, b.length - suffix)));
}

/**
 * lineHunks over the UTF-8 bytes of the two texts: the common prefix and suffix are found with native
 * byte compares and only the differing middle is decoded and split into lines (a 100,000-line buffer
 * with a one-line change costs one newline count up to the change instead of two decodes and splits).
 */
export function lineHunksBytes(a: Buffer, b: Buffer): LineHunk[] {
  const max = Math.min(a.length, b.length);
  const p = commonPrefix(a, b, max);
  if (p === max && a.length === b.length) return [];
  const start = p === 0 ? 0 : a.lastIndexOf(NL, p - 1) + 1;
  const s = commonSuffix(a, b, max - start);
  let suffix = s;
  while (suffix > 0 && (a[a.length - suffix - 1] !== NL || b[b.length - suffix - 1] !== NL)) suffix--;
  const split = (t: Buffer) => (t.length === 0 ? [] : t.toString('utf8', 0, t.length - 1).split('\n'));
  return middleHunks(countByte(a, NL, 0, start), split(a.subarray(start, a.length - suffix)), split(b.subarray(start, b.length - suffix)));
}

/** Length of the common prefix of `a` and `b` (at most `max` bytes), by native block compares. */
export function commonPrefix(a: Buffer, b: Buffer, max = Math.min(a.length, b.length)): number {
  let p = 0;
  while (p + BLOCK <= max && a.compare(b, p, p + BLOCK, p, p + BLOCK) === 0) p += BLOCK;
  // Binary lifting inside the first differing block.
  for (let step = BLOCK >> 1; step > 0; step >>= 1) if (p + step <= max && a.compare(b, p, p + step, p, p + step) === 0) p += step;
  return p;
}

/** Length of the common suffix of `a` and `b` (at most `max` bytes). */
export function commonSuffix(a: Buffer, b: Buffer, max = Math.min(a.length, b.length)): number {
  const eq = (s: number, n: number) => a.compare(b, b.length - s - n, b.length - s, a.length - s - n, a.length - s) === 0;
  let s = 0;
  while (s + BLOCK <= max && eq(s, BLOCK)) s += BLOCK;
  for (let step = BLOCK >> 1; step > 0; step >>= 1) if (s + step <= max && eq(s, step)) s += step;
  return s;
}

/** Occurrences of byte `c` in `buf[from, to)`. */
export function countByte(buf: Buffer, c: number, from = 0, to = buf.length): number {
  if (from === 0 && c === NL) return lineBreaksBefore(buf, to);
  return countRange(buf, c, from, to);
}

function countRange(buf: Buffer, c: number, from: number, to: number): number {
  let n = 0;
  for (let i = buf.indexOf(c, from); i !== -1 && i < to; i = buf.indexOf(c, i + 1)) n++;
  return n;
}

/**
 * The line breaks in `buf[0, to)`, the last such count remembered per memory block: an edit's diff and its
 * buffer hunks both count the lines before the change in the same old bytes (≈ 0.5 ms each for half of a
 * 4.9 MB file, issue 24); the second count only covers the few lines between the two positions. Bytes are
 * never changed in place here (file contents are replaced, not edited), so a remembered count stays true.
 */
const lineCounts = new WeakMap<ArrayBufferLike, { offset: number; length: number; to: number; count: number }>();

function lineBreaksBefore(buf: Buffer, to: number): number {
  const end = Math.min(Math.max(to, 0), buf.length);
  const m = lineCounts.get(buf.buffer);
  let count: number;
  if (m && m.offset === buf.byteOffset && m.length === buf.length) {
    count = end >= m.to ? m.count + countRange(buf, NL, m.to, end) : m.count - countRange(buf, NL, end, m.to);
  } else count = countRange(buf, NL, 0, end);
  lineCounts.set(buf.buffer, { offset: buf.byteOffset, length: buf.length, to: end, count });
  return count;
}

function middleHunks(startLine: number, oldMid: string[], newMid: string[]): LineHunk[] {
  if (oldMid.length + newMid.length > MAX_DIFF_LINES) return [{ start: startLine, count: oldMid.length, lines: newMid }];
  const hunks: LineHunk[] = [];
  let row = startLine;
  let cur: LineHunk | null = null;
  for (const part of jsdiff().diffArrays(oldMid, newMid)) {
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
