import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { planNewFile } from './create_file';
import { fileWorkspace, notFound, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { reviewFiles } from '../workspace/review';
import { basisOf, toTextView } from '../workspace/file-view';
import { savedFields } from '../workspace/file-access';
import { sha256Hex } from '../workspace/file-sha';
import { unsavedBufferError } from '../workspace/file-errors';
import { decodeText, encodeText, isBinary, normalizeEol } from '../workspace/encoding';
import { fileDiff } from '../workspace/text-diff';
import { DIAGNOSTICS_NOTE, STALE_PROTOCOL, capDiff, expectedShaField, pathField, type CappedDiff, type WithDiagnostics } from '../workspace/tool-support';

export const writeFileParameters = z.object({
  path: pathField('Path of an existing file'),
  content: z.string().describe('The complete new content of the file.'),
  expectedSha256: expectedShaField(),
});

export type WriteFileData = { path: string; sha256: string; previousSha256: string; savedToDisk?: boolean; unsavedBuffer?: boolean } & CappedDiff & WithDiagnostics;

async function plan(ws: FileWorkspace, args: z.infer<typeof writeFileParameters>, d: AuditDraft): Promise<WritePlan<WriteFileData>> {
  const r = ws.resolve(args.path);
  d.path = r.rel;
  const v = await ws.files.view(r.abs);
  if (v.kind === 'missing') {
    // expectedSha256 "" asserts the file does not exist yet: then write_file creates it (as create_file).
    if (args.expectedSha256 !== '') throw notFound(r.rel, 'write_file replaces existing files; use create_file (or expectedSha256 "") for a new one.');
    const p = planNewFile(r, args.content, d);
    return { ...p, result: { ...p.result, previousSha256: '' } };
  }
  if (v.kind === 'directory') throw new ToolError('is_directory', `"${r.rel}" is a directory.`, { path: r.rel });
  d.beforeSha256 = v.sha256;
  if (v.source === 'buffer' && ws.files.unsavedBuffers === 'refuse') throw unsavedBufferError(r.rel, 'unsaved_buffers is "refuse"');
  await ws.files.assertWritable(v, r.rel);
  ws.files.assertFresh(v, args.expectedSha256, r.rel);
  // Keep the file's BOM and CRLF line breaks (a binary file being replaced keeps nothing).
  const old = v.bytes && !isBinary(v.bytes) ? toTextView(v, r.rel) : null;
  const enc = old?.encoding ?? decodeText(Buffer.alloc(0)).encoding;
  const text = normalizeEol(args.content, enc);
  const bytes = encodeText(text, enc);
  const sha = sha256Hex(bytes);
  const diff = fileDiff(r.rel, r.rel, old?.text ?? '', text);
  Object.assign(d, { afterSha256: sha, diff });
  const result: WriteFileData = { path: r.rel, sha256: sha, previousSha256: v.sha256!, ...capDiff(diff, r.rel) };
  return {
    changes: bytes.equals(v.bytes!) ? [] : [{ type: 'write', abs: r.abs, bytes, mode: v.mode ?? undefined, basis: basisOf(v) }],
    diff,
    result,
    audit: [{ ...d, operation: 'write' }],
    afterCommit: async (report) => {
      Object.assign(result, savedFields(report, r.abs), v.source === 'buffer' && !report.buffered.has(r.abs) ? { savedToDisk: false, unsavedBuffer: true } : {});
    },
  };
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const writeFileTool: ToolDefinition<typeof writeFileParameters, WriteFileData> = {
  name: 'write_file',
  description:
    'Replace the whole content of an existing file (edit_file is better for small changes); with expectedSha256 "" it ' +
    'creates a file that must not exist yet. ' +
    STALE_PROTOCOL +
    ' The file keeps its permissions, BOM and CRLF line breaks. The write is atomic. Returns the new sha256 and a diff.' +
    DIAGNOSTICS_NOTE,
  parameters: writeFileParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('write_file', 'write', empty(), (d) => plan(ws, args, d), { review: ctx.review, signal: ctx.signal, diagnostics: ctx.reportDiagnostics });
  },
  async preview(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    const p = await plan(ws, args, empty());
    return { kind: 'diff', path: p.result.path, diff: p.diff, files: await reviewFiles(ws, p.changes) };
  },
};
