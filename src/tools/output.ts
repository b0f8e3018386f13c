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
