/**
 * Patch parser: text in, operations out. No disk access.
 *
 * Two input forms are accepted and detected automatically.
 *
 * 1. The apply_patch envelope (the format of OpenAI Codex's `apply_patch`):
 *
 *      patch        := "*** Begin Patch" LF op+ "*** End Patch" LF?
 *      op           := add | delete | update
 *      add          := "*** Add File: " path LF ("+" line LF)*
 *      delete       := "*** Delete File: " path LF
 *      update       := "*** Update File: " path LF ("*** Move to: " path LF)? chunk+
 *      chunk        := header? chunk_line+ ("*** End of File" LF)?
 *      header       := "@@" LF | "@@ " context LF        (optional only for the first chunk)
 *      chunk_line   := (" " | "-" | "+") text LF | LF      (an empty line is an empty context line)
 *
 *    Markers may be padded with whitespace; blank lines between operations and chunks are ignored.
 *    A shell heredoc wrapper (`<<'EOF'` … `EOF`) or a Markdown code fence around the patch is removed.
 *
 * 2. Unified diffs (`git diff`, `diff -u`): `diff --git` headers, `---`/`+++` with optional a/ b/
 *    prefixes and `/dev/null`, `new file mode`, `deleted file mode`, `rename from/to`,
 *    `@@ -a,b +c,d @@` hunks and `\ No newline at end of file`.
 *
 * Every error is a ToolError of kind `patch_parse_error` whose message starts with the 1-based line
 * number in the text as given.
 */
import { ToolError } from '../../tools/errors';

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

export type ChunkLineKind = 'context' | 'remove' | 'add';

export interface ChunkLine {
  kind: ChunkLineKind;
  /** Line content without the leading marker and without '\n' (a '\r' is kept). */
  text: string;
}

export interface PatchChunk {
  /** Envelope `@@ context` header: a line to find first; the chunk is then sought after it. */
  context?: string;
  /** The chunk body in order. Old lines = context + remove; new lines = context + add. */
  lines: ChunkLine[];
  /** `*** End of File`: the chunk's old lines end the file. */
  isEndOfFile: boolean;
  /** Unified diffs: the `-a` of `@@ -a,b +c,d @@` (1-based), used as a position hint. */
  oldStart?: number;
}

/**
 * What the updated file's last line gets:
 * - `add`: always ends with a newline (apply_patch envelope semantics; the default),
 * - `remove`: no final newline (`\ No newline at end of file` on the new side),
 * - `keep`: as the original file (unified diff that does not touch the end of the file).
 */
export type NewlineAtEof = 'add' | 'remove' | 'keep';

export type PatchOp =
  | { type: 'add'; path: string; content: string }
  | { type: 'delete'; path: string }
  | { type: 'update'; path: string; moveTo?: string; chunks: PatchChunk[]; newlineAtEof?: NewlineAtEof };

export type UpdateOp = Extract<PatchOp, { type: 'update' }>;

export function chunkOldLines(chunk: PatchChunk): string[] {
  return chunk.lines.filter((l) => l.kind !== 'add').map((l) => l.text);
}

export function chunkNewLines(chunk: PatchChunk): string[] {
  return chunk.lines.filter((l) => l.kind !== 'remove').map((l) => l.text);
}

// ---------------------------------------------------------------------------------------------
// Markers
// ---------------------------------------------------------------------------------------------

export const BEGIN_PATCH = '*** Begin Patch';
export const END_PATCH = '*** End Patch';
export const ADD_FILE = '*** Add File:';
export const DELETE_FILE = '*** Delete File:';
export const UPDATE_FILE = '*** Update File:';
export const MOVE_TO = '*** Move to:';
export const END_OF_FILE = '*** End of File';
export const CHUNK_HEADER = '@@';

const ENVELOPE_MARKER_RE = /^\*\*\*\s*(Begin Patch|End Patch|Add File:|Delete File:|Update File:|Move to:|End of File)/;
const UNIFIED_HUNK_RE = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

/** Parses an apply_patch envelope or a unified diff. Throws ToolError('patch_parse_error'). */
export function parsePatch(text: string): PatchOp[] {
  const lines = text.split('\n');
  let lo = 0;
  let hi = lines.length;
  const blank = (i: number): boolean => (lines[i] as string).trim() === '';
  // Leading whitespace-only lines are dropped; trailing ones only when truly empty, because a unified
  // diff's last line may be a context line holding a single space.
  const trimEmpty = (): void => {
    while (lo < hi && blank(lo)) lo++;
    while (hi > lo && (lines[hi - 1] === '' || lines[hi - 1] === '\r')) hi--;
  };
  const lastNonBlank = (): number => {
    let i = hi - 1;
    while (i > lo && blank(i)) i--;
    return i;
  };
  trimEmpty();
  if (lo === hi) throw parseError(1, 'the patch is empty');

  // Unwrap one heredoc (`apply_patch <<'EOF'` … `EOF`) or Markdown fence (```diff … ```).
  const first = (lines[lo] as string).trim();
  const lastIndex = lastNonBlank();
  const lastLine = (lines[lastIndex] as string).trim();
  const heredoc = /^(?:[\w./-]+\s+)?<<-?\s*(['"]?)([A-Za-z_]\w*)\1$/.exec(first);
  if (lastIndex > lo && ((heredoc && lastLine === heredoc[2]) || (/^```[\w+-]*$/.test(first) && lastLine === '```'))) {
    lo++;
    hi = lastIndex;
    trimEmpty();
  }
  if (lo === hi) throw parseError(lo + 1, 'the patch is empty');

  const cursor = new Cursor(lines, lo, hi);
  let ops: PatchOp[];
  if ((lines[lo] as string).trim() === BEGIN_PATCH) {
    ops = parseEnvelope(cursor);
  } else if (looksLikeUnifiedDiff(lines, lo, hi)) {
    ops = parseUnified(cursor);
  } else {
    throw parseError(
      lo + 1,
      `the first line of the patch must be '${BEGIN_PATCH}' (or the patch must be a unified diff), got: '${lines[lo]}'`,
    );
  }
  if (ops.length === 0) throw parseError(lo + 1, 'the patch contains no file operations');
  return ops;
}

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

class Cursor {
  constructor(
    readonly lines: readonly string[],
    public i: number,
    public end: number,
  ) {}
  get done(): boolean {
    return this.i >= this.end;
  }
  /** Current line (only valid when not done). */
  get line(): string {
    return this.lines[this.i] as string;
  }
  at(i: number): string | undefined {
    return i < this.end ? this.lines[i] : undefined;
  }
  /** 1-based line number of the current line in the text as given. */
  get lineNo(): number {
    return this.i + 1;
  }
}

function parseError(lineNo: number, message: string, path?: string): ToolError {
  return new ToolError('patch_parse_error', `line ${lineNo}: ${message}`, path === undefined ? {} : { path });
}

// ---------------------------------------------------------------------------------------------
// Envelope
// ---------------------------------------------------------------------------------------------

function parseEnvelope(c: Cursor): PatchOp[] {
  let last = c.end - 1;
  while (last > c.i && (c.lines[last] as string).trim() === '') last--;
  if ((c.lines[last] as string).trim() !== END_PATCH || last === c.i) {
    throw parseError(last + 1, `the last line of the patch must be '${END_PATCH}'`);
  }
  c.i++; // Begin Patch
  c.end = last;
  const ops: PatchOp[] = [];
  while (!c.done) {
    const t = c.line.trim();
    if (t === '') {
      c.i++;
      continue;
    }
    const lineNo = c.lineNo;
    const add = markerArg(t, ADD_FILE);
    const del = markerArg(t, DELETE_FILE);
    const upd = markerArg(t, UPDATE_FILE);
    if (add !== undefined) {
      ops.push({ type: 'add', path: requirePath(add, lineNo, ADD_FILE), content: parseAddBody(c) });
    } else if (del !== undefined) {
      c.i++;
      ops.push({ type: 'delete', path: requirePath(del, lineNo, DELETE_FILE) });
    } else if (upd !== undefined) {
      ops.push(parseUpdate(c, requirePath(upd, lineNo, UPDATE_FILE)));
    } else {
      throw parseError(
        lineNo,
        `'${t}' is not a valid hunk header. Valid hunk headers: '${ADD_FILE} {path}', '${DELETE_FILE} {path}', '${UPDATE_FILE} {path}'`,
      );
    }
  }
  return ops;
}

/** `*** Add File: x` → 'x'; tolerant of padding and a missing space after the colon. */
function markerArg(trimmed: string, marker: string): string | undefined {
  if (!trimmed.startsWith(marker)) return undefined;
  return trimmed.slice(marker.length).trim();
}

function requirePath(path: string, lineNo: number, marker: string): string {
  if (path === '') throw parseError(lineNo, `'${marker}' needs a path`);
  return path;
}

function parseAddBody(c: Cursor): string {
  c.i++; // the Add File line
  const out: string[] = [];
  while (!c.done) {
    const line = c.line;
    if (line.startsWith('+')) {
      out.push(line.slice(1));
      c.i++;
    } else if (line.trim() === '' && !line.startsWith(' ')) {
      // A blank line followed by more '+' lines is an empty line whose '+' was forgotten.
      let j = c.i;
      while (j < c.end && (c.lines[j] as string).trim() === '') j++;
      if (j < c.end && (c.lines[j] as string).startsWith('+')) {
        for (let k = c.i; k < j; k++) out.push('');
        c.i = j;
      } else {
        break;
      }
    } else {
      break;
    }
  }
  return out.map((l) => `${l}\n`).join('');
}

function parseUpdate(c: Cursor, path: string): PatchOp {
  const headerLineNo = c.lineNo;
  c.i++;
  let moveTo: string | undefined;
  if (!c.done) {
    const arg = markerArg(c.line.trim(), MOVE_TO);
    if (arg !== undefined) {
      moveTo = requirePath(arg, c.lineNo, MOVE_TO);
      c.i++;
    }
  }
  const chunks: PatchChunk[] = [];
  while (!c.done) {
    const t = c.line.trim();
    if (t === '') {
      c.i++;
      continue;
    }
    if (t.startsWith('***') && t !== END_OF_FILE) break;
    chunks.push(parseChunk(c, path, chunks.length === 0));
  }
  if (chunks.length === 0) {
    throw parseError(headerLineNo, `Update File hunk for path '${path}' is empty`, path);
  }
  const op: UpdateOp = { type: 'update', path, chunks };
  if (moveTo !== undefined) op.moveTo = moveTo;
  return op;
}

function parseChunk(c: Cursor, path: string, allowMissingHeader: boolean): PatchChunk {
  const chunk: PatchChunk = { lines: [], isEndOfFile: false };
  const headerLineNo = c.lineNo;
  const t = c.line.trim();
  if (t === CHUNK_HEADER) {
    c.i++;
  } else if (t.startsWith(`${CHUNK_HEADER} `)) {
    const unified = UNIFIED_HUNK_RE.exec(t);
    if (unified) {
      // A unified-diff style header inside the envelope: use its line number as a hint only.
      chunk.oldStart = Number(unified[1]);
    } else {
      chunk.context = t.slice(CHUNK_HEADER.length + 1).trim();
    }
    c.i++;
  } else if (!allowMissingHeader) {
    throw parseError(headerLineNo, `expected update hunk to start with a @@ context marker, got: '${c.line}'`, path);
  }

  while (!c.done) {
    const line = c.line;
    const trimmed = line.trim();
    if (trimmed === END_OF_FILE) {
      if (chunk.lines.length === 0) throw parseError(c.lineNo, 'update hunk does not contain any lines', path);
      chunk.isEndOfFile = true;
      c.i++;
      break;
    }
    if (ENVELOPE_MARKER_RE.test(trimmed)) break; // next operation, possibly whitespace-padded
    const marker = line[0];
    if (line === '' || line === '\r') {
      chunk.lines.push({ kind: 'context', text: line });
    } else if (marker === ' ') {
      chunk.lines.push({ kind: 'context', text: line.slice(1) });
    } else if (marker === '+') {
      chunk.lines.push({ kind: 'add', text: line.slice(1) });
    } else if (marker === '-') {
      chunk.lines.push({ kind: 'remove', text: line.slice(1) });
    } else {
      if (chunk.lines.length === 0) {
        throw parseError(
          c.lineNo,
          `unexpected line found in update hunk: '${line}'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)`,
          path,
        );
      }
      break; // start of the next chunk
    }
    c.i++;
  }
  if (chunk.lines.length === 0) throw parseError(headerLineNo, 'update hunk does not contain any lines', path);
  return chunk;
}

// ---------------------------------------------------------------------------------------------
// Unified diff
// ---------------------------------------------------------------------------------------------

function looksLikeUnifiedDiff(lines: readonly string[], lo: number, hi: number): boolean {
  for (let i = lo; i < hi; i++) {
    const line = lines[i] as string;
    if (line.startsWith('diff --git ')) return true;
    if (line.startsWith('--- ') && i + 1 < hi && (lines[i + 1] as string).startsWith('+++ ')) return true;
  }
  return false;
}

interface FileBlock {
  lineNo: number;
  gitOld?: string;
  gitNew?: string;
  /** undefined = not given; null = /dev/null */
  oldPath?: string | null;
  newPath?: string | null;
  renameFrom?: string;
  renameTo?: string;
  isNew: boolean;
  isDeleted: boolean;
  hunks: Hunk[];
}

interface Hunk {
  lineNo: number;
  oldStart?: number;
  lines: ChunkLine[];
  oldNoNewline: boolean;
  newNoNewline: boolean;
}

function isFileHeaderAt(c: Cursor, i: number): boolean {
  const a = c.at(i);
  const b = c.at(i + 1);
  return a !== undefined && b !== undefined && a.startsWith('--- ') && b.startsWith('+++ ');
}

function parseUnified(c: Cursor): PatchOp[] {
  const ops: PatchOp[] = [];
  while (!c.done) {
    const line = c.line;
    if (line.startsWith('diff --git ')) {
      const block = newBlock(c.lineNo);
      const names = splitGitNames(line.slice('diff --git '.length));
      if (names) [block.gitOld, block.gitNew] = names;
      c.i++;
      parseGitExtendedHeaders(c, block);
      if (isFileHeaderAt(c, c.i)) parseFileHeaders(c, block);
      parseHunks(c, block);
      pushBlock(ops, block);
    } else if (isFileHeaderAt(c, c.i)) {
      const block = newBlock(c.lineNo);
      parseFileHeaders(c, block);
      parseHunks(c, block);
      pushBlock(ops, block);
    } else if (line.startsWith('@@')) {
      throw parseError(c.lineNo, "hunk without a file header (expected '--- a/path' and '+++ b/path' before it)");
    } else if (line === '-- ' || line === '--') {
      break; // format-patch signature: the rest is a trailer
    } else {
      c.i++; // commit message, index lines outside a block, etc.
    }
  }
  return ops;
}

function newBlock(lineNo: number): FileBlock {
  return { lineNo, isNew: false, isDeleted: false, hunks: [] };
}

function parseGitExtendedHeaders(c: Cursor, block: FileBlock): void {
  while (!c.done) {
    const line = c.line;
    if (line.startsWith('--- ') || line.startsWith('@@') || line.startsWith('diff ')) return;
    if (line.startsWith('new file mode')) block.isNew = true;
    else if (line.startsWith('deleted file mode')) block.isDeleted = true;
    else if (line.startsWith('rename from ')) block.renameFrom = unquote(line.slice('rename from '.length), c.lineNo);
    else if (line.startsWith('rename to ')) block.renameTo = unquote(line.slice('rename to '.length), c.lineNo);
    else if (line.startsWith('copy from ') || line.startsWith('copy to ')) {
      throw parseError(c.lineNo, 'copy patches are not supported; use an Add File operation instead');
    } else if (line.startsWith('Binary files ') || line.startsWith('GIT binary patch')) {
      throw parseError(c.lineNo, 'binary patches are not supported');
    } else if (
      !/^(index |old mode |new mode |similarity index |dissimilarity index )/.test(line) &&
      line.trim() !== ''
    ) {
      return; // something else: let the caller decide
    }
    c.i++;
  }
}

function parseFileHeaders(c: Cursor, block: FileBlock): void {
  const oldRaw = headerPath(c.line.slice(4), c.lineNo);
  c.i++;
  const newRaw = headerPath(c.line.slice(4), c.lineNo);
  c.i++;
  // Strip git's a/ b/ prefixes when the pair uses them.
  const oldPrefixed = oldRaw === null || oldRaw.startsWith('a/');
  const newPrefixed = newRaw === null || newRaw.startsWith('b/');
  const strip = oldPrefixed && newPrefixed && !(oldRaw === null && newRaw === null);
  block.oldPath = oldRaw === null ? null : strip ? oldRaw.slice(2) : oldRaw;
  block.newPath = newRaw === null ? null : strip ? newRaw.slice(2) : newRaw;
}

/** The path part of a `---`/`+++` line: unquoted, timestamp removed; null for /dev/null. */
function headerPath(rest: string, lineNo: number): string | null {
  let p: string;
  if (rest.startsWith('"')) {
    p = unquote(rest, lineNo);
  } else {
    const tab = rest.indexOf('\t');
    p = (tab >= 0 ? rest.slice(0, tab) : rest).trimEnd();
  }
  if (p === '/dev/null') return null;
  if (p === '') throw parseError(lineNo, 'missing file name in diff header');
  return p;
}

/** `a/x b/y` of a `diff --git` line, prefixes removed. */
function splitGitNames(rest: string): [string, string] | undefined {
  const r = rest.trimEnd();
  if (r.startsWith('"')) {
    const m = /^("(?:[^"\\]|\\.)*")\s+(.*)$/.exec(r);
    if (!m) return undefined;
    return [stripPrefix(unquote(m[1] as string, 0)), stripPrefix(unquote(m[2] as string, 0))];
  }
  // Same name on both sides (the common case): "a/" + X + " b/" + X.
  const half = (r.length - 1) / 2;
  if (Number.isInteger(half) && r[half] === ' ') {
    const a = r.slice(0, half);
    const b = r.slice(half + 1);
    if (stripPrefix(a) === stripPrefix(b)) return [stripPrefix(a), stripPrefix(b)];
  }
  const sep = r.indexOf(' b/');
  if (sep < 0) return undefined;
  return [stripPrefix(r.slice(0, sep)), stripPrefix(unquote(r.slice(sep + 1), 0))];
}

function stripPrefix(p: string): string {
  return /^[abciow]\//.test(p) ? p.slice(2) : p;
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/** Git's C-style quoting ("a/t\303\251st.txt"); unquoted input is returned as is. */
function unquote(s: string, lineNo: number): string {
  const t = s.trimEnd();
  if (!t.startsWith('"')) return t;
  const bytes: number[] = [];
  let i = 1;
  for (; i < t.length && t[i] !== '"'; i++) {
    const ch = t[i] as string;
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const next = t[i + 1] ?? '';
    const octal = /^[0-7]{3}/.exec(t.slice(i + 1));
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else if (next in C_ESCAPES) {
      bytes.push(C_ESCAPES[next] as number);
      i += 1;
    } else {
      throw parseError(lineNo, `bad escape in quoted file name: ${t}`);
    }
  }
  if (t[i] !== '"') throw parseError(lineNo, `unterminated quoted file name: ${t}`);
  return Buffer.from(bytes).toString('utf8');
}

function parseHunks(c: Cursor, block: FileBlock): void {
  while (!c.done && c.line.startsWith('@@')) {
    block.hunks.push(parseHunk(c, block));
  }
}

function parseHunk(c: Cursor, block: FileBlock): Hunk {
  const header = c.line;
  const hunk: Hunk = { lineNo: c.lineNo, lines: [], oldNoNewline: false, newNoNewline: false };
  const m = UNIFIED_HUNK_RE.exec(header);
  let oldLeft = Infinity;
  let newLeft = Infinity;
  if (m) {
    hunk.oldStart = Number(m[1]);
    oldLeft = m[2] === undefined ? 1 : Number(m[2]);
    newLeft = m[4] === undefined ? 1 : Number(m[4]);
  } else if (/^@@+\s*[-+]/.test(header) || !/^@@(\s.*)?$/.test(header.trimEnd())) {
    throw parseError(c.lineNo, `invalid hunk header '${header}' (expected '@@ -a,b +c,d @@')`, pathOf(block));
  }
  const counted = m !== null;
  c.i++;
  let lastKind: ChunkLineKind | undefined;
  while (!c.done) {
    const line = c.line;
    if (line.startsWith('\\')) {
      // "\ No newline at end of file" refers to the line before it.
      if (lastKind === 'remove') hunk.oldNoNewline = true;
      else if (lastKind === 'add') hunk.newNoNewline = true;
      else if (lastKind === 'context') hunk.oldNoNewline = hunk.newNoNewline = true;
      c.i++;
      continue;
    }
    if (counted && oldLeft <= 0 && newLeft <= 0) break;
    if (isFileHeaderAt(c, c.i) && (!counted || (c.at(c.i + 2) ?? '').startsWith('@@'))) break;
    const marker = line[0];
    let kind: ChunkLineKind;
    let text: string;
    if (line === '') {
      kind = 'context';
      text = '';
    } else if (marker === ' ') {
      kind = 'context';
      text = line.slice(1);
    } else if (marker === '-') {
      kind = 'remove';
      text = line.slice(1);
    } else if (marker === '+') {
      kind = 'add';
      text = line.slice(1);
    } else {
      break; // '@@', 'diff ', or anything else ends the hunk
    }
    hunk.lines.push({ kind, text });
    lastKind = kind;
    if (kind !== 'add') oldLeft--;
    if (kind !== 'remove') newLeft--;
    c.i++;
  }
  if (!counted) {
    // Trailing blank lines of an uncounted hunk are separators, not context.
    while (hunk.lines.length > 0 && hunk.lines[hunk.lines.length - 1]?.kind === 'context' && hunk.lines[hunk.lines.length - 1]?.text === '') {
      hunk.lines.pop();
    }
  } else if (!c.done && /^[-+ ]/.test(c.line) && !isFileHeaderAt(c, c.i) && c.line !== '-- ') {
    throw parseError(
      c.lineNo,
      `hunk starting at line ${hunk.lineNo} has more lines than its header '${header.trim()}' announces`,
      pathOf(block),
    );
  }
  if (hunk.lines.length === 0) throw parseError(hunk.lineNo, 'hunk does not contain any lines', pathOf(block));
  return hunk;
}

function pathOf(block: FileBlock): string | undefined {
  return block.newPath ?? block.oldPath ?? block.renameTo ?? block.gitNew ?? undefined;
}

function pushBlock(ops: PatchOp[], block: FileBlock): void {
  const oldPath = block.oldPath === undefined ? (block.renameFrom ?? block.gitOld) : block.oldPath;
  const newPath = block.newPath === undefined ? (block.renameTo ?? block.gitNew) : block.newPath;

  if (block.isNew || (oldPath === null && newPath !== null)) {
    const path = newPath ?? undefined;
    if (path === undefined) throw parseError(block.lineNo, 'cannot tell which file this diff creates');
    const added: string[] = [];
    let noNewline = false;
    for (const hunk of block.hunks) {
      for (const l of hunk.lines) {
        if (l.kind !== 'add') throw parseError(hunk.lineNo, `a new file's hunk may only add lines`, path);
        added.push(l.text);
      }
      noNewline ||= hunk.newNoNewline;
    }
    const content = added.join('\n') + (added.length > 0 && !noNewline ? '\n' : '');
    ops.push({ type: 'add', path, content });
    return;
  }
  if (block.isDeleted || newPath === null) {
    const path = oldPath ?? undefined;
    if (path === undefined) throw parseError(block.lineNo, 'cannot tell which file this diff deletes');
    ops.push({ type: 'delete', path });
    return;
  }
  if (oldPath === undefined || oldPath === null || newPath === undefined) {
    throw parseError(block.lineNo, "cannot tell which file this diff changes (missing '---'/'+++' lines)");
  }
  const moveTo = newPath !== oldPath ? newPath : undefined;
  if (block.hunks.length === 0 && moveTo === undefined) return; // mode change only: nothing to do
  const chunks: PatchChunk[] = block.hunks.map((h) => {
    const chunk: PatchChunk = { lines: h.lines, isEndOfFile: false };
    if (h.oldStart !== undefined) chunk.oldStart = h.oldStart;
    return chunk;
  });
  const newlineAtEof: NewlineAtEof = block.hunks.some((h) => h.newNoNewline)
    ? 'remove'
    : block.hunks.some((h) => h.oldNoNewline)
      ? 'add'
      : 'keep';
  const op: UpdateOp = { type: 'update', path: oldPath, chunks, newlineAtEof };
  if (moveTo !== undefined) op.moveTo = moveTo;
  ops.push(op);
}
