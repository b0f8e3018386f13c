/** Every tool's textual output is capped at 2,000 lines or 50 KB, whichever comes first. */
export const MAX_OUTPUT_LINES = 2000;
export const MAX_OUTPUT_BYTES = 50 * 1024;

export interface CappedText {
  text: string;
  truncated: boolean;
  /** Lines kept (complete lines, counted from the start). */
  keptLines: number;
  totalLines: number;
  omittedLines: number;
  omittedBytes: number;
}

/** Keeps whole lines from the start until either cap would be exceeded. */
export function capText(text: string, maxLines = MAX_OUTPUT_LINES, maxBytes = MAX_OUTPUT_BYTES): CappedText {
  const totalBytes = Buffer.byteLength(text, 'utf8');
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const totalLines = lines.length;
  if (totalLines <= maxLines && totalBytes <= maxBytes) {
    return { text, truncated: false, keptLines: totalLines, totalLines, omittedLines: 0, omittedBytes: 0 };
  }
  let bytes = 0;
  let kept = 0;
  for (; kept < lines.length && kept < maxLines; kept++) {
    const add = Buffer.byteLength(lines[kept], 'utf8') + 1;
    if (bytes + add > maxBytes) break;
    bytes += add;
  }
  let out = lines.slice(0, kept).join('\n');
  if (kept > 0) out += '\n';
  if (kept === 0) {
    // A single enormous line: cut it at a character boundary.
    out = Buffer.from(lines[0], 'utf8').subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '');
    bytes = Buffer.byteLength(out, 'utf8');
  }
  return {
    text: out,
    truncated: true,
    keptLines: kept,
    totalLines,
    omittedLines: totalLines - kept,
    omittedBytes: Math.max(0, totalBytes - bytes),
  };
}

/** A notice the model can act on; `how` says how to get the rest (e.g. "read_file with startLine=2001"). */
export function truncationNotice(c: CappedText, how: string): string {
  return `[output truncated: ${c.omittedLines} of ${c.totalLines} lines (${c.omittedBytes} bytes) omitted; ${how}]`;
}

/**
 * The cap every tool result obeys on its way to the model, whatever the tool: the longest text fields
 * are cut (with a notice) until the serialized result fits 2,000 lines / 50 KB. Tools that cap their own
 * output with a better "how to get the rest" are untouched (they already fit).
 */
export function capToolResultJson(result: unknown, maxBytes = MAX_OUTPUT_BYTES, maxLines = MAX_OUTPUT_LINES): string {
  const json = JSON.stringify(result);
  // Lines are those of the text fields (the JSON itself escapes its newlines).
  const fits = (s: string, node: unknown) => Buffer.byteLength(s, 'utf8') <= maxBytes + 1024 && textLines(node) <= maxLines;
  if (json === undefined || fits(json, result)) return json;
  const copy = JSON.parse(json) as unknown;
  // Cut the longest strings first, each to what the budget leaves, until the whole fits.
  for (let round = 0; round < 8; round++) {
    const strings: StringSlot[] = [];
    collectStrings(copy, strings);
    strings.sort((a, b) => b.value.length - a.value.length);
    const top = strings[0];
    if (!top || top.value.length < 256) break;
    const encoded = Buffer.byteLength(JSON.stringify(top.value), 'utf8');
    const others = Buffer.byteLength(JSON.stringify(copy), 'utf8') - encoded;
    // JSON escapes (\n, quotes) make the encoded text longer than the text itself.
    const overhead = encoded / Math.max(1, Buffer.byteLength(top.value, 'utf8'));
    const budget = Math.max(256, Math.floor((maxBytes - others - 400) / overhead));
    const lineBudget = Math.max(1, maxLines - (textLines(copy) - countNewlines(top.value)) - 1);
    const c = capText(top.value, lineBudget, budget);
    const cut = c.truncated ? c : capText(top.value, lineBudget, Math.floor(top.value.length / 2));
    (top.holder as Record<string | number, unknown>)[top.key] = `${cut.text}\n${truncationNotice(cut, 'the result exceeded the 50 KB / 2,000-line cap for tool output; narrow the request to see the rest')}`;
    const out = JSON.stringify(copy);
    if (fits(out, copy)) return out;
  }
  const c = capText(json, maxLines, maxBytes);
  return `${c.text}\n${truncationNotice(c, 'the result exceeded the cap for tool output; narrow the request')}`;
}

/** Newlines across every text field of a result. */
function textLines(node: unknown): number {
  const strings: StringSlot[] = [];
  collectStrings(node, strings);
  return strings.reduce((n, s) => n + countNewlines(s.value), 0);
}

function countNewlines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/** A string inside a parsed result, and where it sits (to replace it). */
type StringSlot = { holder: Record<string, unknown> | unknown[]; key: string | number; value: string };

function collectStrings(node: unknown, out: StringSlot[]): void {
  if (Array.isArray(node)) {
    node.forEach((v, i) => (typeof v === 'string' ? out.push({ holder: node, key: i, value: v }) : collectStrings(v, out)));
  } else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
      if (typeof v === 'string') out.push({ holder: node as Record<string, unknown>, key: k, value: v });
      else collectStrings(v, out);
    }
  }
}
