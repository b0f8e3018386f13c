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
 *      chunk        := header* chunk_line+ ("*** End of File" LF)?
 *      header       := "@@" LF | "@@ " context LF        (at least one, except for the first chunk)
 *      chunk_line   := (" " | "-" | "+") text LF | LF      (an empty line is an empty context line)
 *
 *    Several header lines in a row narrow the search: each context line is sought after the previous
 *    one, and the chunk after the last (`@@ class A` then `@@     def m():`).
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
import { Cursor, parseError } from './cursor';
import { parseUnified, looksLikeUnifiedDiff } from './unified';
import {
  ADD_FILE,
  BEGIN_PATCH,
  CHUNK_HEADER,
  DELETE_FILE,
  END_OF_FILE,
  END_PATCH,
  ENVELOPE_MARKER_RE,
  MOVE_TO,
  UNIFIED_HUNK_RE,
  UPDATE_FILE,
  type ChunkLine,
  type PatchChunk,
  type PatchOp,
  type UpdateOp,
} from './types';

export * from './types';

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
  // The first header may be whitespace-padded; the ones after it must start the line (" @@" is context).
  if (isChunkHeader(c.line.trim())) {
    do {
      readChunkHeader(chunk, c.line.trim());
      c.i++;
    } while (!c.done && isChunkHeader(c.line.trimEnd()));
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

function isChunkHeader(t: string): boolean {
  return t === CHUNK_HEADER || t.startsWith(`${CHUNK_HEADER} `);
}

/** One `@@` line: a bare `@@` adds nothing, `@@ ctx` one more context line, `@@ -a,b +c,d @@` a position hint. */
function readChunkHeader(chunk: PatchChunk, t: string): void {
  if (t === CHUNK_HEADER) return;
  const unified = UNIFIED_HUNK_RE.exec(t);
  if (unified) {
    // A unified-diff style header inside the envelope: use its line number as a hint only.
    chunk.oldStart = Number(unified[1]);
    return;
  }
  (chunk.contexts ??= []).push(t.slice(CHUNK_HEADER.length + 1).trim());
}
