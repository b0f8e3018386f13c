/** The pure patch engine of apply_patch: parse, seek, plan. No disk access. */
export {
  parsePatch,
  chunkOldLines,
  chunkNewLines,
  type PatchOp,
  type PatchChunk,
  type ChunkLine,
  type ChunkLineKind,
  type NewlineAtEof,
} from './parser';
export { seekSequence, normalizePunctuation, SEEK_STAGES, type SeekStage, type SeekMatch, type SeekOptions } from './seek';
export { planPatch, finalContents, applyChunks, type FileState, type PlannedChange } from './plan';
export { unifiedDiff, type UnifiedDiffOptions } from './diff';
