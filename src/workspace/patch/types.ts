/** Patch operations as the parser produces them, and the envelope's markers. */

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
  /**
   * Envelope `@@ context` headers, in order: each line is sought after the previous one, then the
   * chunk after the last (several narrow the search, e.g. a class then one of its methods).
   */
  contexts?: string[];
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

export const ENVELOPE_MARKER_RE = /^\*\*\*\s*(Begin Patch|End Patch|Add File:|Delete File:|Update File:|Move to:|End of File)/;
export const UNIFIED_HUNK_RE = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

