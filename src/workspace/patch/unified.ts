/** Unified diffs (`git diff`, `diff -u`) → patch operations. See parser.ts for the grammar. */
import { Cursor, parseError } from './cursor';
import { UNIFIED_HUNK_RE, type ChunkLine, type ChunkLineKind, type NewlineAtEof, type PatchChunk, type PatchOp, type UpdateOp } from './types';

// ---------------------------------------------------------------------------------------------
// Unified diff
// ---------------------------------------------------------------------------------------------

export function looksLikeUnifiedDiff(lines: readonly string[], lo: number, hi: number): boolean {
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

export function parseUnified(c: Cursor): PatchOp[] {
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

