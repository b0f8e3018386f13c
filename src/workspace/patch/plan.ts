/**
 * Plan first, write later: computes every file's new content in memory from parsed operations.
 * Pure: files are read through the `read` callback only, nothing is written. Any failure throws a
 * ToolError, so the caller can commit all planned changes or none.
 */
import * as posix from 'node:path/posix';
import { ToolError } from '../errors';
import { chunkOldLines, type ChunkLine, type NewlineAtEof, type PatchChunk, type PatchOp } from './parser';
import { seekSequence } from './seek';

export type FileState = { kind: 'file'; text: string } | { kind: 'missing' } | { kind: 'directory' };

/**
 * One planned change per operation, in patch order.
 * - add: `newText` set. - delete: `oldText` set. - update: both set; `moveTo` when the file is renamed
 *   (the old path disappears, `newText` lands at `moveTo`).
 * `oldText` is the content before this operation: the disk content the first time a path is touched,
 * the in-memory result of an earlier operation afterwards. Use `finalContents` for the net effect.
 */
export interface PlannedChange {
  type: 'add' | 'delete' | 'update';
  path: string;
  moveTo?: string;
  oldText?: string;
  newText?: string;
}

/** Applies `ops` in memory against files obtained from `read`. Throws ToolError on the first problem. */
export function planPatch(ops: PatchOp[], read: (path: string) => FileState): PlannedChange[] {
  const overlay = new Map<string, FileState>();
  const state = (path: string): FileState => {
    const key = pathKey(path);
    let s = overlay.get(key);
    if (s === undefined) {
      s = read(path);
      overlay.set(key, s);
    }
    return s;
  };
  const set = (path: string, s: FileState): void => {
    overlay.set(pathKey(path), s);
  };

  const changes: PlannedChange[] = [];
  for (const op of ops) {
    switch (op.type) {
      case 'add': {
        assertAbsent(op.path, state(op.path), 'cannot add');
        changes.push({ type: 'add', path: op.path, newText: op.content });
        set(op.path, { kind: 'file', text: op.content });
        break;
      }
      case 'delete': {
        const oldText = existingText(op.path, state(op.path), 'delete');
        changes.push({ type: 'delete', path: op.path, oldText });
        set(op.path, { kind: 'missing' });
        break;
      }
      case 'update': {
        const oldText = existingText(op.path, state(op.path), 'update');
        const moveTo = op.moveTo !== undefined && pathKey(op.moveTo) !== pathKey(op.path) ? op.moveTo : undefined;
        if (moveTo !== undefined) assertAbsent(moveTo, state(moveTo), `cannot move ${op.path} to`);
        const newText = applyChunks(op.path, oldText, op.chunks, op.newlineAtEof ?? 'add');
        const change: PlannedChange = { type: 'update', path: op.path, oldText, newText };
        if (moveTo !== undefined) {
          change.moveTo = moveTo;
          set(op.path, { kind: 'missing' });
          set(moveTo, { kind: 'file', text: newText });
        } else {
          set(op.path, { kind: 'file', text: newText });
        }
        changes.push(change);
        break;
      }
    }
  }
  return changes;
}

/**
 * Net effect of a plan: final content per path (`null` = the path no longer exists), in the order
 * paths were first touched. Paths are as written in the patch.
 */
export function finalContents(changes: readonly PlannedChange[]): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const byKey = new Map<string, string>();
  const put = (path: string, text: string | null): void => {
    const key = pathKey(path);
    const first = byKey.get(key) ?? path;
    byKey.set(key, first);
    out.set(first, text);
  };
  for (const c of changes) {
    if (c.type === 'add') put(c.path, c.newText ?? '');
    else if (c.type === 'delete') put(c.path, null);
    else if (c.moveTo !== undefined) {
      put(c.path, null);
      put(c.moveTo, c.newText ?? '');
    } else put(c.path, c.newText ?? '');
  }
  return out;
}

function pathKey(path: string): string {
  return posix.normalize(path.replace(/\\/g, '/'));
}

function assertAbsent(path: string, s: FileState, what: string): void {
  if (s.kind === 'file') {
    throw new ToolError('already_exists', `${what} ${path}: the file already exists (apply_patch never overwrites)`, {
      path,
      suggestedAction: 'Use "*** Update File:" to change an existing file, or pick another path.',
    });
  }
  if (s.kind === 'directory') {
    throw new ToolError('already_exists', `${what} ${path}: a directory exists at that path`, { path });
  }
}

function existingText(path: string, s: FileState, verb: 'update' | 'delete'): string {
  if (s.kind === 'missing') {
    throw new ToolError('not_found', `cannot ${verb} ${path}: no such file`, { path });
  }
  if (s.kind === 'directory') {
    throw new ToolError('is_directory', `cannot ${verb} ${path}: it is a directory`, { path });
  }
  return s.text;
}

// ---------------------------------------------------------------------------------------------
// Applying chunks to one file
// ---------------------------------------------------------------------------------------------

interface Replacement {
  start: number;
  oldLength: number;
  newLines: string[];
}

type EolStyle = 'lf' | 'crlf' | 'mixed';

/**
 * Computes a file's new text. Lines are split on '\n' with any '\r' kept in the line, so CRLF files
 * round-trip; added lines follow the file's line-ending style when it is consistent.
 */
export function applyChunks(path: string, text: string, chunks: readonly PatchChunk[], newline: NewlineAtEof): string {
  const hadFinalNewline = text === '' || text.endsWith('\n');
  const lines = text === '' ? [] : text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  const eol = eolStyle(lines, text.endsWith('\n'));
  const styled = (s: string): string =>
    eol === 'crlf' && !s.endsWith('\r') ? `${s}\r` : eol === 'lf' && s.endsWith('\r') ? s.slice(0, -1) : s;
  // Lines are matched without their CR: it belongs to the line break. Otherwise, in a CRLF file, only the
  // unterminated last line matches "exactly" and pulls every chunk towards it.
  const keys = lines.map(withoutCr);

  const replacements: Replacement[] = [];
  let lineIndex = 0;
  for (const chunk of chunks) {
    for (const context of chunk.contexts ?? []) {
      const found = seekSequence(keys, [withoutCr(context)], { start: lineIndex });
      if (!found) {
        throw new ToolError('patch_apply_error', `Failed to find context '${context}' in ${path}`, {
          path,
          details: { context, ...(chunk.contexts!.length > 1 ? { contexts: chunk.contexts } : {}) },
          suggestedAction:
            chunk.contexts!.length > 1
              ? 'Re-read the file: each @@ line must exist after the previous @@ line, in that order.'
              : 'Re-read the file and make the @@ header a line that exists in it.',
        });
      }
      lineIndex = found.index + 1;
    }

    let body: readonly ChunkLine[] = chunk.lines;
    let oldLines = chunkOldLines(chunk);
    if (oldLines.length === 0) {
      const at =
        chunk.oldStart !== undefined
          ? clamp(chunk.oldStart, lineIndex, lines.length)
          : chunk.contexts !== undefined
            ? lineIndex
            : lines.length;
      replacements.push({ start: at, oldLength: 0, newLines: body.map((l) => styled(l.text)) });
      continue;
    }

    const hint = chunk.oldStart === undefined ? undefined : Math.max(0, chunk.oldStart - 1);
    let found = seekSequence(keys, oldLines.map(withoutCr), { start: lineIndex, eof: chunk.isEndOfFile, hint });
    const lastLine = body[body.length - 1];
    if (!found && lastLine?.kind === 'context' && lastLine.text.trim() === '' && oldLines.length > 1) {
      // A trailing blank context line is often just a separator: retry without it.
      body = body.slice(0, -1);
      oldLines = oldLines.slice(0, -1);
      found = seekSequence(keys, oldLines.map(withoutCr), { start: lineIndex, eof: chunk.isEndOfFile, hint });
    }
    if (!found) {
      throw new ToolError(
        'patch_apply_error',
        `Failed to find expected lines in ${path}:\n${chunkOldLines(chunk).join('\n')}`,
        {
          path,
          details: { expected: chunkOldLines(chunk) },
          suggestedAction: 'Re-read the file and copy the context and removed lines exactly.',
        },
      );
    }

    // Context lines keep the file's own text (matching may have been lenient); added lines come from the patch.
    const newLines: string[] = [];
    let oi = found.index;
    for (const l of body) {
      if (l.kind === 'context') newLines.push(lines[oi++] as string);
      else if (l.kind === 'remove') oi++;
      else newLines.push(styled(l.text));
    }
    replacements.push({ start: found.index, oldLength: oldLines.length, newLines });
    lineIndex = found.index + oldLines.length;
  }

  const result = [...lines];
  const ordered = replacements.map((r, i) => ({ r, i })).sort((a, b) => a.r.start - b.r.start || a.i - b.i);
  for (let k = ordered.length - 1; k >= 0; k--) {
    const { r } = ordered[k] as { r: Replacement };
    result.splice(r.start, r.oldLength, ...r.newLines);
  }

  const finalNewline = newline === 'add' || (newline === 'keep' && hadFinalNewline);
  if (result.length === 0) return '';
  if (finalNewline) {
    if (eol === 'crlf') result[result.length - 1] = styled(result[result.length - 1] as string);
    return `${result.join('\n')}\n`;
  }
  if (eol === 'crlf') result[result.length - 1] = (result[result.length - 1] as string).replace(/\r$/, '');
  return result.join('\n');
}

function withoutCr(s: string): string {
  return s.endsWith('\r') ? s.slice(0, -1) : s;
}

function eolStyle(lines: readonly string[], lastTerminated: boolean): EolStyle {
  const terminated = lastTerminated ? lines.length : lines.length - 1;
  if (terminated <= 0) return 'mixed';
  let cr = 0;
  for (let i = 0; i < terminated; i++) if ((lines[i] as string).endsWith('\r')) cr++;
  return cr === terminated ? 'crlf' : cr === 0 ? 'lf' : 'mixed';
}

function clamp(n: number, lo: number, hi: number): number {
  return Math.min(Math.max(n, lo), hi);
}
