import { isUtf8 } from 'node:buffer';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const BINARY_SNIFF_BYTES = 8192;

/** How a text file is stored on disk, so a rewrite can keep it that way. */
export interface TextEncodingInfo {
  /** The file starts with a UTF-8 byte order mark. */
  bom: boolean;
  /** `crlf` only when every line break is CRLF; mixed files are kept byte for byte as `lf`. */
  eol: 'lf' | 'crlf';
  /** The file ends with a line break (or is empty). */
  finalNewline: boolean;
}

/** NUL in the first 8 KB, or bytes that are not valid UTF-8. */
export function isBinary(bytes: Buffer): boolean {
  const head = bytes.subarray(0, BINARY_SNIFF_BYTES);
  if (head.includes(0)) return true;
  return !isUtf8(bytes);
}

/** Decodes UTF-8 bytes into the text the model sees: no BOM, `\n` line breaks when the file is CRLF. */
export function decodeText(bytes: Buffer): { text: string; encoding: TextEncodingInfo } {
  const bom = bytes.length >= 3 && bytes.subarray(0, 3).equals(BOM);
  let text = (bom ? bytes.subarray(3) : bytes).toString('utf8');
  const lf = countChar(text, '\n');
  const crlf = lf === 0 ? 0 : countSub(text, '\r\n');
  const eol: 'lf' | 'crlf' = lf > 0 && crlf === lf ? 'crlf' : 'lf';
  if (eol === 'crlf') text = text.split('\r\n').join('\n');
  return { text, encoding: { bom, eol, finalNewline: text.length === 0 || text.endsWith('\n') } };
}

/** Inverse of decodeText: applies the file's line breaks and BOM to model text. */
export function encodeText(text: string, enc: Pick<TextEncodingInfo, 'bom' | 'eol'>): Buffer {
  let out = text;
  if (enc.eol === 'crlf') out = out.replace(/\r\n/g, '\n').replace(/\n/g, '\r\n');
  const body = Buffer.from(out, 'utf8');
  return enc.bom ? Buffer.concat([BOM, body]) : body;
}

/** Text from the model for a CRLF file may carry `\r\n`; match in `\n` space. */
export function normalizeEol(text: string, enc: Pick<TextEncodingInfo, 'eol'>): string {
  return enc.eol === 'crlf' ? text.replace(/\r\n/g, '\n') : text;
}

/** Gives `text` the same final-newline state as the original file. */
export function keepFinalNewline(text: string, finalNewline: boolean): string {
  if (text.length === 0) return text;
  if (finalNewline && !text.endsWith('\n')) return text + '\n';
  if (!finalNewline && text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

function countChar(s: string, c: string): number {
  let n = 0;
  for (let i = s.indexOf(c); i !== -1; i = s.indexOf(c, i + 1)) n++;
  return n;
}

function countSub(s: string, sub: string): number {
  let n = 0;
  for (let i = s.indexOf(sub); i !== -1; i = s.indexOf(sub, i + sub.length)) n++;
  return n;
}

export interface LineSlice {
  totalLines: number;
  /** Clamped range actually returned (0/0 for an empty file). */
  startLine: number;
  endLine: number;
  /** Decoded like decodeText: no BOM, `\n` breaks for CRLF files; ends with `\n` unless it is the unterminated last line. */
  text: string;
  encoding: TextEncodingInfo;
}

/**
 * Lines `startLine..endLine` (1-based, inclusive) of a UTF-8 file, decoding only that range.
 * One native scan for line breaks, so large files are not split into strings (read_file's fast path).
 */
export function sliceLines(bytes: Buffer, startLine: number, endLine = Infinity): LineSlice {
  const bom = bytes.length >= 3 && bytes.subarray(0, 3).equals(BOM);
  const body = bom ? bytes.subarray(3) : bytes;
  let lf = 0;
  let crlf = 0;
  let startOff = startLine <= 1 ? 0 : -1;
  let endOff = -1;
  for (let i = body.indexOf(10); i !== -1; i = body.indexOf(10, i + 1)) {
    lf++;
    if (i > 0 && body[i - 1] === 13) crlf++;
    if (lf === startLine - 1) startOff = i + 1;
    if (lf === endLine) endOff = i + 1;
  }
  const finalNewline = body.length === 0 || body[body.length - 1] === 10;
  const totalLines = body.length === 0 ? 0 : lf + (finalNewline ? 0 : 1);
  const eol: 'lf' | 'crlf' = lf > 0 && crlf === lf ? 'crlf' : 'lf';
  const encoding: TextEncodingInfo = { bom, eol, finalNewline };
  if (totalLines === 0 || startOff === -1 || startLine > totalLines) {
    return { totalLines, startLine: totalLines === 0 ? 0 : startLine, endLine: totalLines === 0 ? 0 : startLine - 1, text: '', encoding };
  }
  const end = Math.min(endLine, totalLines);
  let text = body.subarray(startOff, endOff === -1 ? body.length : endOff).toString('utf8');
  if (eol === 'crlf') text = text.split('\r\n').join('\n');
  return { totalLines, startLine, endLine: end, text, encoding };
}
