import { z } from 'zod';
import { ToolError, STALE_FILE_ACTION } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { reviewFiles } from '../workspace/review';
import { sha256Hex } from '../workspace/file-sha';
import { fileDiff } from '../workspace/text-diff';
import { DIAGNOSTICS_NOTE, capDiff, pathField, type CappedDiff, type WithDiagnostics } from '../workspace/tool-support';

export const createFileParameters = z.object({
  path: pathField('Path of the new file'),
  content: z.string().describe('The complete content of the new file.'),
});

export type CreateFileData = { path: string; sha256: string; created: true } & CappedDiff & WithDiagnostics;

async function plan(ws: FileWorkspace, args: z.infer<typeof createFileParameters>, d: AuditDraft): Promise<WritePlan<CreateFileData>> {
  const r = ws.resolve(args.path);
  d.path = r.rel;
  const v = await ws.files.view(r.abs);
  if (v.kind === 'directory') throw new ToolError('is_directory', `"${r.rel}" is a directory.`, { path: r.rel });
  if (v.kind !== 'missing') {
    throw new ToolError('already_exists', `"${r.rel}" already exists.`, {
      path: r.rel,
      suggestedAction: `Read it with read_file, then use edit_file or write_file with its sha256. ${STALE_FILE_ACTION}`,
    });
  }
  const p = planNewFile(r, args.content, d);
  return { ...p, result: { ...p.result, created: true } };
}

/** Writing a file that must not exist yet (create_file, and write_file with expectedSha256 ""). */
export function planNewFile(r: { abs: string; rel: string }, content: string, d: AuditDraft): WritePlan<{ path: string; sha256: string } & CappedDiff> {
  const bytes = Buffer.from(content, 'utf8');
  const sha = sha256Hex(bytes);
  const diff = fileDiff(null, r.rel, '', content);
  Object.assign(d, { afterSha256: sha, diff });
  return {
    changes: [{ type: 'write', abs: r.abs, bytes, createOnly: true }],
    diff,
    result: { path: r.rel, sha256: sha, ...capDiff(diff, r.rel) },
    audit: [{ ...d, operation: 'create' }],
  };
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const createFileTool: ToolDefinition<typeof createFileParameters, CreateFileData> = {
  name: 'create_file',
  description:
    'Create a NEW file with the given content; missing parent folders are created. Fails with already_exists if the ' +
    'path exists (then read it and use edit_file/write_file). Returns the new sha256 (use it as expectedSha256 for ' +
    'later edits) and a diff.' +
    DIAGNOSTICS_NOTE,
  parameters: createFileParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('create_file', 'create', empty(), (d) => plan(ws, args, d), { review: ctx.review, signal: ctx.signal, diagnostics: ctx.reportDiagnostics });
  },
  async preview(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    const p = await plan(ws, args, empty());
    return { kind: 'diff', path: p.result.path, diff: p.diff, files: await reviewFiles(ws, p.changes) };
  },
};
