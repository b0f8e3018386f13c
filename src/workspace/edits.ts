import { ToolError } from './errors';

export interface TextEdit {
  oldText: string;
  newText: string;
  replaceAll?: boolean;
}

interface Range {
  start: number;
  end: number;
  newText: string;
  edit: number;
}

/**
 * Applies exact-string edits to `text`, all or none. Every `oldText` is searched in the ORIGINAL text:
 * no match → old_text_not_found (with the closest lines as a hint), several → multiple_matches
 * (unless replaceAll), ranges that touch each other → overlapping_edits.
 */
export function applyEdits(text: string, edits: TextEdit[], rel: string): string {
  const ranges: Range[] = [];
  edits.forEach((e, idx) => {
    if (e.oldText.length === 0) {
      throw new ToolError('invalid_arguments', `Edit ${idx + 1}: oldText is empty.`, {
        path: rel,
        suggestedAction: 'Give the exact text to replace, or use write_file to replace the whole file.',
      });
    }
    const starts = findAll(text, e.oldText);
    if (starts.length === 0) {
      const candidates = closestCandidates(text, e.oldText);
      throw new ToolError('old_text_not_found', `Edit ${idx + 1}: oldText was not found in "${rel}".`, {
        path: rel,
        suggestedAction:
          'oldText must match the file exactly (whitespace and indentation included). Re-read the file and copy the text.' +
          (candidates.length ? ` Closest lines: ${candidates.map((c) => `line ${c.line}: ${JSON.stringify(c.text)}`).join('; ')}` : ''),
        details: { edit: idx, candidates },
      });
    }
    if (starts.length > 1 && !e.replaceAll) {
      throw new ToolError('multiple_matches', `Edit ${idx + 1}: oldText matches ${starts.length} places in "${rel}".`, {
        path: rel,
        suggestedAction: 'Add surrounding lines to oldText so it matches exactly once, or set replaceAll: true.',
        details: { edit: idx, count: starts.length },
      });
    }
    for (const s of starts) ranges.push({ start: s, end: s + e.oldText.length, newText: e.newText, edit: idx });
  });
  ranges.sort((a, b) => a.start - b.start);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i].start < ranges[i - 1].end) {
      throw new ToolError('overlapping_edits', `Edits ${ranges[i - 1].edit + 1} and ${ranges[i].edit + 1} overlap in "${rel}".`, {
        path: rel,
        suggestedAction: 'Merge the overlapping edits into one edit.',
        details: { edits: [ranges[i - 1].edit, ranges[i].edit] },
      });
    }
  }
  let out = '';
  let pos = 0;
  for (const r of ranges) {
    out += text.slice(pos, r.start) + r.newText;
    pos = r.end;
  }
  return out + text.slice(pos);
}

/**
 * applyEdits on the UTF-8 bytes of a text (UTF-8 is self-synchronising: a byte match of a well-formed
 * needle is a character match), without decoding it. Returns the pieces of the result in order, or
 * null whenever applyEdits would throw (or a string is not well-formed UTF-16): the caller then runs
 * applyEdits, which gives the same result or error.
 */
export function applyEditsToBytes(body: Buffer, edits: TextEdit[]): Buffer[] | null {
  const ranges: { start: number; end: number; repl: Buffer }[] = [];
  for (const e of edits) {
    if (e.oldText.length === 0 || LONE_SURROGATE.test(e.oldText) || LONE_SURROGATE.test(e.newText)) return null;
    const needle = Buffer.from(e.oldText, 'utf8');
    const repl = Buffer.from(e.newText, 'utf8');
    const first = ranges.length;
    for (let i = body.indexOf(needle); i !== -1; i = body.indexOf(needle, i + needle.length)) {
      if (ranges.length > first && !e.replaceAll) return null;
      ranges.push({ start: i, end: i + needle.length, repl });
    }
    if (ranges.length === first) return null;
  }
  ranges.sort((a, b) => a.start - b.start);
  const pieces: Buffer[] = [];
  let pos = 0;
  for (const r of ranges) {
    if (r.start < pos) return null;
    pieces.push(body.subarray(pos, r.start), r.repl);
    pos = r.end;
  }
  pieces.push(body.subarray(pos));
  return pieces;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Non-overlapping occurrences, left to right. */
function findAll(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) out.push(i);
  return out;
}

export interface Candidate {
  line: number;
  text: string;
  score: number;
}

/** Up to 3 lines most similar to the first non-blank line of `needle` (bigram similarity). */
export function closestCandidates(text: string, needle: string, max = 3): Candidate[] {
  const probe = needle.split('\n').find((l) => l.trim().length > 0)?.trim();
  if (!probe) return [];
  const pb = bigrams(probe);
  const lines = text.split('\n');
  const scored: Candidate[] = [];
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].trim();
    if (!t) continue;
    const score = dice(pb, bigrams(t));
    if (score > 0.3) scored.push({ line: i + 1, text: lines[i].slice(0, 200), score: Math.round(score * 100) / 100 });
  }
  scored.sort((a, b) => b.score - a.score || a.line - b.line);
  return scored.slice(0, max);
}

function bigrams(s: string): Map<string, number> {
  const m = new Map<string, number>();
  const lower = s.toLowerCase();
  for (let i = 0; i < lower.length - 1; i++) {
    const g = lower.slice(i, i + 2);
    m.set(g, (m.get(g) ?? 0) + 1);
  }
  if (lower.length === 1) m.set(lower, 1);
  return m;
}

function dice(a: Map<string, number>, b: Map<string, number>): number {
  let inter = 0;
  let na = 0;
  let nb = 0;
  for (const v of a.values()) na += v;
  for (const v of b.values()) nb += v;
  for (const [k, v] of a) inter += Math.min(v, b.get(k) ?? 0);
  return na + nb === 0 ? 0 : (2 * inter) / (na + nb);
}
