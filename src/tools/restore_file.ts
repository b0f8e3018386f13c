import { z } from 'zod';
import { ToolError } from './errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { fileDiff } from '../workspace/text-diff';
import { isBinary } from '../workspace/encoding';
import { capDiff, type CappedDiff, type WithDiagnostics } from '../workspace/tool-support';

export const restoreFileParameters = z.object({
  trashId: z.string().min(1).describe('The trashId returned by delete_file (or apply_patch for deleted files).'),
  targetPath: z
    .string()
    .min(1)
    .optional()
    .describe('Where to restore the file, relative to the workspace root. Default: its original path.'),
});

export type RestoreFileData = { path: string; sha256: string; trashId: string } & CappedDiff & WithDiagnostics;

async function plan(ws: FileWorkspace, args: z.infer<typeof restoreFileParameters>, d: AuditDraft): Promise<WritePlan<RestoreFileData>> {
  const entry = ws.trash.get(args.trashId);
  if (!entry || entry.restoredAt) {
    throw new ToolError('not_found', entry ? `Trash entry ${args.trashId} was already restored (to ${entry.restoredTo}).` : `No trash entry ${args.trashId}.`, {
      suggestedAction: 'List the trash to find a valid trashId.',
    });
  }
  const r = ws.resolve(args.targetPath ?? entry.originalPath);
  Object.assign(d, { path: entry.originalPath, toPath: r.rel, afterSha256: entry.sha256 });
  const v = await ws.files.view(r.abs);
  if (v.kind !== 'missing') {
    throw new ToolError('already_exists', `"${r.rel}" already exists; restore_file never overwrites.`, {
      path: r.rel,
      suggestedAction: 'Pass a targetPath that does not exist yet.',
    });
  }
  if (entry.size > ws.files.maxFileBytes) {
    // Too large to hold in memory: streamed from the trash into a temp file, checked, then linked into place.
    const diff = `Restore ${r.rel} (${entry.size} bytes, sha256 ${entry.sha256.slice(0, 12)}…)`;
    d.diff = diff;
    return {
      changes: [],
      diff,
      result: { path: r.rel, sha256: entry.sha256, trashId: entry.id, ...capDiff(diff, r.rel) },
      audit: [{ ...d, operation: 'restore' }],
      beforeCommit: () =>
        ws.files.createStreamed(r.abs, entry.sha256, async (tmp) => {
          if (!(await ws.trash.copyOut(entry, tmp, entry.mode))) throw new ToolError('not_found', `The content of trash entry ${entry.id} is missing or damaged.`);
        }),
      afterCommit: () => ws.trash.markRestored(entry.id, r.rel),
    };
  }
  const bytes = await ws.trash.read(entry);
  if (!bytes) throw new ToolError('not_found', `The content of trash entry ${entry.id} is missing or damaged.`);
  const diff = isBinary(bytes) ? `Restore ${r.rel} (binary, ${bytes.length} bytes)` : fileDiff(null, r.rel, '', bytes.toString('utf8'));
  d.diff = diff;
  return {
    changes: [{ type: 'write', abs: r.abs, bytes, mode: entry.mode, createOnly: true, reload: true }],
    diff,
    result: { path: r.rel, sha256: entry.sha256, trashId: entry.id, ...capDiff(diff, r.rel) },
    audit: [{ ...d, operation: 'restore' }],
    afterCommit: () => ws.trash.markRestored(entry.id, r.rel),
  };
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const restoreFileTool: ToolDefinition<typeof restoreFileParameters, RestoreFileData> = {
  name: 'restore_file',
  description:
    'Restore a file deleted into the workspace trash, to its original path or to targetPath. Never overwrites: fails ' +
    'with already_exists when the target exists. Returns the restored sha256.',
  parameters: restoreFileParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('restore_file', 'restore', empty(), (d) => plan(ws, args, d), { signal: ctx.signal, diagnostics: ctx.reportDiagnostics });
  },
  async preview(args, ctx) {
    const p = await plan(fileWorkspace(ctx.workspace), args, empty());
    return { kind: 'diff', path: p.result.path, diff: p.diff };
  },
};
