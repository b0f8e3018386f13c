/**
 * Hunk-level review of a write: what the user sees (the new text, each hunk's removed and added lines,
 * the changed words) and how a partial decision becomes the bytes that are committed. Hunks are computed
 * the same way for the proposal and for the commit, so "hunk 2" means the same lines in both.
 */
import { MAX_DIFF_EDIT_LENGTH } from './patch/diff';
import { ToolError } from './errors';
import { decodeText, encodeText, isBinary } from './encoding';
import { sha256Hex } from './file-sha';
import type { CommitReport, FileAccess } from './file-access';
import type { FileChange } from './commit-disk';
import type { FileView } from './file-view';
import { fileDiff } from './text-diff';
import type { PathResolver } from './paths';
/** jsdiff, loaded on first use: its evaluation (the word tokenizer's tables) cost ≈ 3 ms of every cold start before the first request (issue 24). */
const jsdiff = (): typeof import('diff') => require('diff') as typeof import('diff');

/** What the review reads of the workspace (FileWorkspace has both; named here so workspace.ts imports review.ts one way). */
export interface ReviewWorkspace {
  files: Pick<FileAccess, 'view'>;
  paths: Pick<PathResolver, 'relative'>;
}

/** The parts of a write plan (WritePlan in workspace.ts) that a review rewrites. */
export interface ReviewablePlan {
  changes: FileChange[];
  audit: { path: string | null; afterSha256: string | null; diff: string | null }[];
  result: unknown;
  afterCommit?: (report: CommitReport) => Promise<void>;
}

export interface ReviewHunk {
  /** 1-based first line in the old text (the line before, for a pure insertion). */
  oldStart: number;
  oldLines: number;
  /** 1-based first line in the new text (the line before, for a pure deletion). */
  newStart: number;
  newLines: number;
  removed: string[];
  added: string[];
  /** Changed words inside the added lines: [line offset in `added`, byte start, byte end). */
  words: [number, number, number][];
}

export interface ReviewFile {
  path: string;
  abs: string;
  /** 'edit' is reviewed hunk by hunk; the others are one decision for the whole file. */
  operation: 'edit' | 'create' | 'delete' | 'move';
  toPath?: string;
  /** sha256 of the text the proposal was computed from (null: the file did not exist). */
  beforeSha256: string | null;
  /** The new text's lines (what the review shows). */
  lines: string[];
  hunks: ReviewHunk[];
}

/** The user's decision on a reviewed call: the hunks (1-based) rejected per file, with reasons. */
export interface ReviewSelection {
  files: { path: string; beforeSha256: string | null; rejected: { hunk: number; reason?: string }[] }[];
}

/** What the model is told about a partially applied change. */
export interface ReviewOutcome {
  applied: { path: string; hunks: number[] }[];
  rejected: { path: string; hunk: number; removed: string; added: string; reason?: string }[];
  message: string;
}

const MAX_WORD_DIFF_CHARS = 20_000;

/** Lines of a text; a final line break gives no extra empty line. */
function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/** The hunks between two texts (no context lines: each change is its own hunk). */
export function computeHunks(before: string, after: string): ReviewHunk[] {
  const a = linesOf(before);
  const b = linesOf(after);
  const hunks: ReviewHunk[] = [];
  let oi = 0;
  let ni = 0;
  let cur: ReviewHunk | null = null;
  const open = (): ReviewHunk => {
    cur ??= { oldStart: oi, oldLines: 0, newStart: ni, newLines: 0, removed: [], added: [], words: [] };
    return cur;
  };
  for (const part of lineParts(a, b)) {
    const n = part.value.length;
    if (part.added) {
      const h = open();
      h.added.push(...part.value);
      h.newLines += n;
      ni += n;
    } else if (part.removed) {
      const h = open();
      h.removed.push(...part.value);
      h.oldLines += n;
      oi += n;
    } else {
      if (cur) hunks.push(cur);
      cur = null;
      oi += n;
      ni += n;
    }
  }
  if (cur) hunks.push(cur);
  for (const h of hunks) {
    // Unified-diff numbering: the first changed line, or the line before a pure insertion/deletion.
    if (h.oldLines > 0) h.oldStart += 1;
    if (h.newLines > 0) h.newStart += 1;
    h.words = changedWords(h.removed, h.added);
  }
  return hunks;
}

/**
 * The line diff behind computeHunks; past MAX_DIFF_EDIT_LENGTH changed lines the region between the
 * common leading and trailing lines is one replacement (a bounded cost for a rewritten file).
 */
function lineParts(a: string[], b: string[]): { value: string[]; added?: boolean; removed?: boolean }[] {
  const parts = jsdiff().diffArrays(a, b, { maxEditLength: MAX_DIFF_EDIT_LENGTH });
  if (parts) return parts;
  const max = Math.min(a.length, b.length);
  let p = 0;
  while (p < max && a[p] === b[p]) p++;
  let s = 0;
  while (s < max - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const out: { value: string[]; added?: boolean; removed?: boolean }[] = [];
  if (p > 0) out.push({ value: a.slice(0, p) });
  if (p < a.length - s) out.push({ value: a.slice(p, a.length - s), removed: true });
  if (p < b.length - s) out.push({ value: b.slice(p, b.length - s), added: true });
  if (s > 0) out.push({ value: a.slice(a.length - s) });
  return out;
}

/** Byte ranges of the added lines that differ from the removed ones (empty when nothing is in common). */
function changedWords(removed: string[], added: string[]): [number, number, number][] {
  if (removed.length === 0 || added.length === 0) return [];
  const oldText = removed.join('\n');
  const newText = added.join('\n');
  if (oldText.length + newText.length > MAX_WORD_DIFF_CHARS) return [];
  const parts = jsdiff().diffWordsWithSpace(oldText, newText);
  if (!parts.some((p) => !p.added && !p.removed && p.value.trim() !== '')) return [];
  const out: [number, number, number][] = [];
  let line = 0;
  let col = 0;
  for (const p of parts) {
    if (p.removed) continue;
    const pieces = p.value.split('\n');
    pieces.forEach((piece, i) => {
      if (i > 0) {
        line += 1;
        col = 0;
      }
      const bytes = Buffer.byteLength(piece);
      if (p.added && bytes > 0) out.push([line, col, col + bytes]);
      col += bytes;
    });
  }
  return out;
}

/** `before` with only the hunks not in `rejected` applied (same hunks as computeHunks). */
export function applyHunks(before: string, after: string, rejected: Set<number>): string {
  const out: string[] = [];
  let index = 0;
  let inHunk = false;
  for (const part of lineParts(linesOf(before), linesOf(after))) {
    if (!part.added && !part.removed) {
      inHunk = false;
      out.push(...part.value);
      continue;
    }
    if (!inHunk) index += 1;
    inHunk = true;
    if (rejected.has(index) ? part.removed : part.added) out.push(...part.value);
  }
  // The final line break goes with the last line: the old text's when a hunk at the end was rejected.
  const endRejected = inHunk && rejected.has(index);
  const finalNewline = (endRejected ? before : after).endsWith('\n');
  return out.length === 0 ? '' : out.join('\n') + (finalNewline ? '\n' : '');
}

function decoded(bytes: Buffer | null): string | null {
  if (!bytes || isBinary(bytes)) return null;
  return decodeText(bytes).text;
}

/** The review of a plan's changes, file by file (deleting and moving are whole-file decisions). */
export async function reviewFiles(ws: ReviewWorkspace, changes: FileChange[]): Promise<ReviewFile[]> {
  const files: ReviewFile[] = [];
  const moves = new Set(changes.flatMap((c) => (c.type === 'write' && c.movedFrom ? [c.movedFrom] : [])));
  for (const c of changes) {
    if (c.type === 'delete') {
      if (moves.has(c.abs)) continue; // the other half of a move
      const v = await ws.files.view(c.abs);
      const old = decoded(v.bytes) ?? '';
      files.push({ path: ws.paths.relative(c.abs), abs: c.abs, operation: 'delete', beforeSha256: v.sha256, lines: [], hunks: computeHunks(old, '') });
      continue;
    }
    const from = c.movedFrom ?? c.abs;
    const v = await ws.files.view(from);
    const beforeText = v.kind === 'missing' ? '' : decoded(v.bytes);
    const afterText = decoded(c.bytes);
    const operation = c.movedFrom ? 'move' : v.kind === 'missing' ? 'create' : 'edit';
    const textual = beforeText !== null && afterText !== null;
    files.push({
      path: ws.paths.relative(from),
      abs: from,
      operation: textual ? operation : operation === 'edit' ? 'create' : operation,
      ...(c.movedFrom ? { toPath: ws.paths.relative(c.abs) } : {}),
      beforeSha256: v.kind === 'missing' ? null : v.sha256,
      lines: afterText !== null ? linesOf(afterText) : ['(binary content)'],
      hunks: textual ? computeHunks(beforeText, afterText) : [],
    });
  }
  return files;
}

/**
 * Applies the user's selection to a plan computed against the current content (inside the write lock):
 * refuses as stale_file when a reviewed file changed since the review began, writes only the accepted
 * hunks, drops the files rejected whole, and tells the model what was applied and what was not.
 */
export async function applyReviewSelection<P extends ReviewablePlan>(ws: ReviewWorkspace, p: P, sel: ReviewSelection): Promise<P> {
  const proposal = await reviewFiles(ws, p.changes);
  const outcome: ReviewOutcome = { applied: [], rejected: [], message: '' };
  const dropped = new Set<string>();
  const rewritten = new Map<string, { sha256: string; diff: string }>();
  for (const f of proposal) {
    const chosen = sel.files.find((s) => s.path === f.path);
    if (!chosen) {
      outcome.applied.push({ path: f.path, hunks: f.hunks.map((_, i) => i + 1) });
      continue;
    }
    if (chosen.beforeSha256 !== f.beforeSha256) {
      throw new ToolError('stale_file', `"${f.path}" changed while the user was reviewing this change; nothing was written.`, {
        path: f.path,
        suggestedAction: `Read ${f.path} again and propose the change against its current content.`,
      });
    }
    const rejected = new Map(chosen.rejected.map((r) => [r.hunk, r.reason]));
    const describe = (i: number) => ({
      path: f.path,
      hunk: i,
      removed: f.hunks[i - 1]?.removed.join('\n') ?? '',
      added: f.hunks[i - 1]?.added.join('\n') ?? '',
      ...(rejected.get(i) ? { reason: rejected.get(i) } : {}),
    });
    const whole = f.operation !== 'edit';
    const count = Math.max(1, f.hunks.length);
    const allRejected = whole ? rejected.size > 0 : f.hunks.every((_, i) => rejected.has(i + 1));
    if (allRejected) {
      dropped.add(f.abs);
      for (let i = 1; i <= count; i++) outcome.rejected.push(describe(i));
      continue;
    }
    const accepted = f.hunks.map((_, i) => i + 1).filter((i) => !rejected.has(i));
    outcome.applied.push({ path: f.path, hunks: accepted });
    for (const i of rejected.keys()) outcome.rejected.push(describe(i));
    if (whole || rejected.size === 0) continue;
    const change = p.changes.find((c): c is Extract<FileChange, { type: 'write' }> => c.type === 'write' && (c.movedFrom ?? c.abs) === f.abs);
    if (!change) continue;
    const v: FileView = await ws.files.view(f.abs);
    const before = decodeText(v.bytes!);
    const after = decodeText(change.bytes);
    const merged = applyHunks(before.text, after.text, new Set(rejected.keys()));
    change.bytes = encodeText(merged, after.encoding);
    change.sha256 = sha256Hex(change.bytes);
    rewritten.set(f.path, { sha256: change.sha256, diff: fileDiff(f.path, f.path, before.text, merged) });
  }
  // Files rejected whole: no write, no delete (a move is both), no audit row, no entry in the result.
  const keep = p.changes.filter((c) => !dropped.has(c.type === 'write' ? (c.movedFrom ?? c.abs) : c.abs));
  p.changes.splice(0, p.changes.length, ...keep);
  const droppedRel = new Set([...dropped].map((abs) => ws.paths.relative(abs)));
  p.audit.splice(0, p.audit.length, ...p.audit.filter((a) => !droppedRel.has(a.path ?? '')));
  outcome.message = outcomeMessage(outcome);
  const afterCommit = p.afterCommit;
  p.afterCommit = async (report) => {
    await afterCommit?.(report);
    patchResult(p.result, rewritten, droppedRel);
    for (const a of p.audit) {
      const r = a.path ? rewritten.get(a.path) : undefined;
      if (r) Object.assign(a, { afterSha256: r.sha256, diff: r.diff });
    }
    Object.assign(p.result as object, { review: outcome });
  };
  return p;
}

/** Puts the committed sha256/diff of partially applied files into the tool's result. */
function patchResult(result: unknown, rewritten: Map<string, { sha256: string; diff: string }>, dropped: Set<string>): void {
  const r = result as { path?: string; sha256?: string; diff?: string; files?: { path: string; moveTo?: string; sha256?: string }[] };
  if (typeof r.path === 'string') {
    const w = rewritten.get(r.path);
    if (w) Object.assign(r, { sha256: w.sha256, diff: w.diff });
  }
  if (Array.isArray(r.files)) {
    r.files = r.files.filter((f) => !dropped.has(f.path));
    for (const f of r.files) {
      const w = rewritten.get(f.path);
      if (w) f.sha256 = w.sha256;
    }
    const diffs = [...rewritten.values()].map((w) => w.diff);
    if (diffs.length) r.diff = diffs.join('');
  }
}

function outcomeMessage(o: ReviewOutcome): string {
  const parts: string[] = [];
  for (const a of o.applied) if (a.hunks.length) parts.push(`applied ${a.path} hunk${a.hunks.length > 1 ? 's' : ''} ${a.hunks.join(', ')}`);
  for (const r of o.rejected) parts.push(`rejected ${r.path} hunk ${r.hunk}${r.reason ? ` (reason: ${r.reason})` : ''}`);
  return `The user reviewed this change: ${parts.join('; ')}. Only the applied hunks were written; the sha256 in this result is the file's new content.`;
}
