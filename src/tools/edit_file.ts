import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, notFound, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { reviewFiles } from '../workspace/review';
import { SpeculativeViewMissed, assertTextFile, basisOf, toTextView, type FileView } from '../workspace/file-view';
import { savedFields } from '../workspace/file-access';
import { sha256After } from '../workspace/file-sha';
import { unsavedBufferError } from '../workspace/file-errors';
import { encodeText, keepFinalNewline, normalizeEol } from '../workspace/encoding';
import { applyEdits, applyEditsToBytes, type TextEdit } from '../workspace/edits';
import { fileDiff, fileDiffBytes } from '../workspace/text-diff';
import { traceMark, traceStartIfIdle } from '../workspace/trace';
import { duringIo, type Deferred } from '../workspace/io-idle';
import { DIAGNOSTICS_NOTE, STALE_PROTOCOL, capDiff, expectedShaField, pathField, type CappedDiff, type WithDiagnostics } from '../workspace/tool-support';

export const editFileParameters = z.object({
  path: pathField(),
  expectedSha256: expectedShaField(),
  edits: z
    .array(
      z.object({
        oldText: z.string().describe('Exact text to replace, as it appears in the file (whitespace included); must match exactly once.'),
        newText: z.string().describe('Replacement text.'),
        replaceAll: z.boolean().optional().describe('Replace every occurrence of oldText instead of requiring exactly one.'),
      }),
    )
    .min(1)
    .describe('Edits, each matched against the ORIGINAL file (not against the result of earlier edits). All apply or none.'),
});

export type EditFileData = { path: string; sha256: string; previousSha256: string; edits: number; savedToDisk?: boolean; unsavedBuffer?: boolean } & CappedDiff & WithDiagnostics;

/** The plan, with the diff and the new sha256 still being computed (see plan). */
type EditPlan = WritePlan<EditFileData> & { diffReady: Promise<string>; runDiff: () => void };

/**
 * Plans the edit against the current content. The new bytes' sha256 (on the thread pool) and the diff
 * (on the next turn of the event loop) are computed while the commit waits for Neovim and the disk;
 * both are in the result and the audit row before the tool returns.
 */
async function plan(ws: FileWorkspace, args: z.infer<typeof editFileParameters>, d: AuditDraft, speculate = false): Promise<EditPlan> {
  traceStartIfIdle();
  const r = ws.resolve(args.path);
  d.path = r.rel;
  // Speculative (runWrite): the disk view comes before Neovim said the file has no unsaved changes. Its
  // answer decides before the commit point; whatever this plan refused is only the answer once the view
  // is confirmed (a refusal computed from the wrong view is a miss: planned again from the real one).
  // The disk cache may answer: the commit compares the file it displaces with these bytes.
  const v = await ws.files.view(r.abs, { speculate, forWrite: args.expectedSha256 });
  traceMark('view');
  try {
    return await planFrom(ws, args, d, r, v);
  } catch (err) {
    if (v.confirmed && !(await v.confirmed)) throw new SpeculativeViewMissed();
    throw err;
  }
}

async function planFrom(ws: FileWorkspace, args: z.infer<typeof editFileParameters>, d: AuditDraft, r: { abs: string; rel: string }, v: FileView): Promise<EditPlan> {
  if (v.kind === 'missing') throw notFound(r.rel);
  if (v.kind === 'directory') throw new ToolError('is_directory', `"${r.rel}" is a directory.`, { path: r.rel });
  d.beforeSha256 = v.sha256;
  if (v.source === 'buffer' && ws.files.unsavedBuffers === 'refuse') throw unsavedBufferError(r.rel, 'unsaved_buffers is "refuse"');
  await ws.files.assertWritable(v, r.rel);
  ws.files.assertFresh(v, args.expectedSha256, r.rel);
  const fast = editBytes(v, args.edits, r.rel, ws.files.maxFileBytes);
  let bytes: Buffer;
  let diffReady: Promise<string>;
  let hash: Deferred<string>;
  let runDiff = (): void => undefined;
  if (fast) {
    bytes = fast.bytes;
    // The new bytes' sha256, then the diff: computed while the commit waits for the temp file's write and
    // fsync (io-idle.ts; the thread pool's digest first copied the 4.9 MB on this thread), or when first needed.
    const b = bytes;
    // Resumed from the old bytes' hash states where both start alike (file-sha.ts sha256After).
    const old = v.bytes;
    hash = duringIo(() => sha256After(old, b));
    const d = duringIo(() => fileDiffBytes(r.rel, r.rel, fast.oldBody, fast.newBody));
    diffReady = d.promise;
    runDiff = d.run;
  } else {
    const tv = toTextView(v, r.rel, ws.files.maxFileBytes);
    const enc = tv.encoding;
    const edits = args.edits.map((e) => ({ ...e, oldText: normalizeEol(e.oldText, enc), newText: normalizeEol(e.newText, enc) }));
    const text = keepFinalNewline(applyEdits(tv.text, edits, r.rel), enc.finalNewline);
    bytes = encodeText(text, enc);
    diffReady = Promise.resolve(fileDiff(r.rel, r.rel, tv.text, text));
    const b = bytes;
    const old = v.bytes;
    hash = duringIo(() => sha256After(old, b));
  }
  traceMark('edit applied');
  const shaReady = hash.promise;
  const runQueued = (): void => {
    hash.run();
    runDiff();
  };
  // Awaited in afterCommit/onFailure; marked handled so a failed commit cannot leave them unobserved.
  shaReady.catch(() => undefined);
  diffReady.catch(() => undefined);
  const unchanged = bytes.equals(v.bytes!);
  // No change to commit: nothing would wait for a speculative view's confirmation (plan catches the miss).
  if (unchanged && v.confirmed && !(await v.confirmed)) throw new SpeculativeViewMissed();
  const result: EditFileData = { path: r.rel, sha256: '', previousSha256: v.sha256!, edits: args.edits.length } as EditFileData;
  const audit = { ...d, operation: 'edit' };
  const finish = async () => {
    runQueued();
    const [sha, diff] = await Promise.all([shaReady, diffReady]);
    Object.assign(d, { afterSha256: sha, diff });
    Object.assign(audit, { afterSha256: sha, diff });
    Object.assign(result, { sha256: sha }, capDiff(diff, r.rel));
    p.diff = diff;
  };
  const p: EditPlan = {
    changes: unchanged ? [] : [{ type: 'write', abs: r.abs, bytes, sha256: shaReady, mode: v.mode ?? undefined, basis: basisOf(v) }],
    diff: '',
    diffReady,
    runDiff: runQueued,
    result,
    audit: [audit],
    afterCommit: async (report) => {
      traceMark('commit returned');
      await finish();
      Object.assign(result, savedFields(report, r.abs), v.source === 'buffer' && !report.buffered.has(r.abs) ? { savedToDisk: false, unsavedBuffer: true } : {});
      traceMark('result (sha256, diff)');
    },
    onFailure: finish,
  };
  return p;
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NEWLINE = Buffer.from('\n');

/**
 * The common case without decoding the file: a UTF-8 text without any CR, edits applied to its bytes.
 * Same result as the text path (decodeText → applyEdits → keepFinalNewline → encodeText); null when the
 * text path has to run (CR line breaks, an edit that does not apply cleanly: it then gives the error).
 */
function editBytes(v: FileView, edits: TextEdit[], rel: string, maxFileBytes: number): { bytes: Buffer; oldBody: Buffer; newBody: Buffer } | null {
  assertTextFile(v, rel, maxFileBytes);
  const all = v.bytes!;
  const bom = all.length >= 3 && all[0] === 0xef && all[1] === 0xbb && all[2] === 0xbf;
  const oldBody = bom ? all.subarray(3) : all;
  if (oldBody.indexOf(13) !== -1) return null;
  const pieces = applyEditsToBytes(oldBody, edits);
  if (!pieces) return null;
  // keepFinalNewline: the result ends with a line break exactly when the file did (unless it is empty).
  const finalNewline = oldBody.length === 0 || oldBody[oldBody.length - 1] === 10;
  const last = pieces.findLast((p) => p.length > 0);
  if (last) {
    const endsNl = last[last.length - 1] === 10;
    if (finalNewline && !endsNl) pieces.push(NEWLINE);
    else if (!finalNewline && endsNl) pieces[pieces.lastIndexOf(last)] = last.subarray(0, last.length - 1);
  }
  traceMark('edit: found (search, CR/UTF-8 checks)');
  const bytes = Buffer.concat(bom ? [BOM, ...pieces] : pieces);
  return { bytes, oldBody, newBody: bom ? bytes.subarray(3) : bytes };
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const editFileTool: ToolDefinition<typeof editFileParameters, EditFileData> = {
  name: 'edit_file',
  description:
    'Change a file by exact-string replacement: each edit replaces oldText (which must occur exactly once in the ' +
    'original file, unless replaceAll) with newText. All edits apply or none: old_text_not_found (with the closest ' +
    'lines as a hint), multiple_matches (with the count) and overlapping_edits leave the file untouched. ' +
    STALE_PROTOCOL +
    ' CRLF, BOM, the final newline and permissions are preserved. Returns the new sha256 (use it for the next edit) and a unified diff.' +
    DIAGNOSTICS_NOTE,
  parameters: editFileParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('edit_file', 'edit', empty(), (d, how) => plan(ws, args, d, how.speculate), { review: ctx.review, signal: ctx.signal, diagnostics: ctx.reportDiagnostics });
  },
  async preview(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    const p = await plan(ws, args, empty());
    p.runDiff();
    return { kind: 'diff', path: p.result.path, diff: await p.diffReady, files: await reviewFiles(ws, p.changes) };
  },
};
