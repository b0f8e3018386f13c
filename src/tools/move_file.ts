import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, notFound, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { expectedShaField, pathField } from '../workspace/tool-support';
import { unsavedBufferError } from '../workspace/file-errors';

export const moveFileParameters = z.object({
  from: pathField('Current path of the file'),
  to: pathField('New path (must not exist; missing folders are created)'),
  expectedSha256: expectedShaField('the file at `from`'),
});

export interface MoveFileData {
  from: string;
  to: string;
  sha256: string;
  diff: string;
}

async function plan(ws: FileWorkspace, args: z.infer<typeof moveFileParameters>, d: AuditDraft): Promise<WritePlan<MoveFileData>> {
  const from = ws.resolve(args.from);
  d.path = from.rel;
  const to = ws.resolve(args.to);
  d.toPath = to.rel;
  const v = await ws.files.view(from.abs);
  if (v.kind === 'missing') throw notFound(from.rel);
  if (v.kind === 'directory') throw new ToolError('is_directory', `"${from.rel}" is a directory; move_file moves single files.`, { path: from.rel });
  if (v.kind !== 'file' || !v.bytes || !v.sha256) throw new ToolError('permission_denied', `"${from.rel}" is not a regular file.`, { path: from.rel });
  d.beforeSha256 = v.sha256;
  if (v.source === 'buffer') throw unsavedBufferError(from.rel, 'it cannot be moved');
  await ws.files.assertWritable(v, from.rel);
  ws.files.assertFresh(v, args.expectedSha256, from.rel);
  if (from.abs === to.abs) throw new ToolError('already_exists', `"${to.rel}" is the file itself.`, { path: to.rel });
  const target = await ws.files.view(to.abs);
  if (target.kind !== 'missing') {
    throw new ToolError('already_exists', `"${to.rel}" already exists; move_file never overwrites.`, {
      path: to.rel,
      suggestedAction: 'Choose a destination that does not exist, or delete it first.',
    });
  }
  const diff = `Move ${from.rel} → ${to.rel}`;
  Object.assign(d, { afterSha256: v.sha256, diff });
  return {
    // New file first (no-clobber), then the old one goes: a failure in between rolls both back.
    changes: [
      { type: 'write', abs: to.abs, bytes: v.bytes, mode: v.mode ?? undefined, createOnly: true, movedFrom: from.abs },
      { type: 'delete', abs: from.abs, ...(v.source === 'disk' && v.sha256 ? { expectSha256: v.sha256 } : {}) },
    ],
    diff,
    result: { from: from.rel, to: to.rel, sha256: v.sha256, diff },
    audit: [{ ...d, operation: 'move' }],
  };
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const moveFileTool: ToolDefinition<typeof moveFileParameters, MoveFileData> = {
  name: 'move_file',
  description:
    'Move or rename a file. Never overwrites: fails with already_exists when the destination exists. Missing folders ' +
    'of the destination are created. expectedSha256 (required: the sha256 from read_file) proves you move the version ' +
    'you saw (stale_file otherwise: re-read and decide again). The sha256 is unchanged by a move.',
  parameters: moveFileParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('move_file', 'move', empty(), (d) => plan(ws, args, d), { signal: ctx.signal });
  },
  async preview(args, ctx) {
    const p = await plan(fileWorkspace(ctx.workspace), args, empty());
    return { kind: 'text', text: p.diff };
  },
};
