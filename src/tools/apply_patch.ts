import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { reviewFiles } from '../workspace/review';
import { basisOf, type FileView } from '../workspace/file-view';
import { savedFields } from '../workspace/file-access';
import { sha256Hex } from '../workspace/file-sha';
import { unsavedBufferError } from '../workspace/file-errors';
import type { FileChange } from '../workspace/commit-disk';
import { isBinary } from '../workspace/encoding';
import { finalContents, parsePatch, planPatch, type FileState, type PlannedChange } from '../workspace/patch';
import { fileDiff } from '../workspace/text-diff';
import type { ResolvedPath } from '../workspace/paths';
import { DIAGNOSTICS_NOTE, capDiff, type CappedDiff, type WithDiagnostics } from '../workspace/tool-support';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

export const applyPatchParameters = z.object({
  patch: z
    .string()
    .min(1)
    .describe(
      'The patch: either the envelope "*** Begin Patch" … "*** End Patch" with "*** Add File: p", "*** Delete File: p", ' +
        '"*** Update File: p" (optionally "*** Move to: q") sections, or a plain unified diff (git diff / diff -u).',
    ),
  expectedSha256ByPath: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      'Map of workspace-relative path → sha256 you last read. A changed file fails the whole patch with stale_file. ' +
        '"" asserts the path must not exist (use it for added files). Paths not in the map are not checked.',
    ),
});

export interface ApplyPatchFile {
  path: string;
  action: 'add' | 'update' | 'delete' | 'move';
  moveTo?: string;
  /** New sha256 (absent for deletions). */
  sha256?: string;
  /** Deleted files go to the trash; restore_file takes this id. */
  trashId?: string;
  /** With Neovim attached: false when the change went into a buffer with unsaved changes (not to disk). */
  savedToDisk?: boolean;
  unsavedBuffer?: boolean;
}

export type ApplyPatchData = { files: ApplyPatchFile[] } & CappedDiff & WithDiagnostics;

interface Known {
  r: ResolvedPath;
  view: FileView;
}

/** Reads every file the patch needs (async, buffer-aware), then plans synchronously from that snapshot. */
async function planWithSnapshot(ws: FileWorkspace, ops: ReturnType<typeof parsePatch>): Promise<{ planned: PlannedChange[]; known: Map<string, Known> }> {
  const known = new Map<string, Known>();
  const byAbs = new Map<string, Known>();
  const load = async (p: string): Promise<Known> => {
    const r = ws.resolve(p);
    let k = byAbs.get(r.abs);
    if (!k) {
      k = { r, view: await ws.files.view(r.abs) };
      byAbs.set(r.abs, k);
    }
    known.set(p, k);
    return k;
  };
  for (const op of ops) {
    const k = await load(op.path);
    // Updated, deleted and moved-away files must be writable (added ones do not exist yet).
    if (op.type !== 'add') await ws.files.assertWritable(k.view, k.r.rel);
    if (op.type === 'update' && op.moveTo !== undefined) await load(op.moveTo);
  }
  // Binary or oversized files can be deleted or moved by a patch, never edited.
  const updated = new Set(ops.filter((op) => op.type === 'update').map((op) => op.path));
  const read = (p: string): FileState => {
    const k = known.get(p) ?? byAbs.get(ws.resolve(p).abs);
    if (!k) throw new ToolError('internal_error', `apply_patch: ${p} was not loaded`);
    const v = k.view;
    if (v.kind === 'missing') return { kind: 'missing' };
    if (v.kind === 'directory') return { kind: 'directory' };
    if (v.kind !== 'file' || !v.bytes) throw new ToolError('permission_denied', `"${k.r.rel}" is not a regular file.`, { path: k.r.rel });
    if (updated.has(p) && isBinary(v.bytes)) throw new ToolError('binary_file', `"${k.r.rel}" is a binary file.`, { path: k.r.rel });
    if (updated.has(p) && v.size > ws.files.maxFileBytes) {
      throw new ToolError('file_too_large', `"${k.r.rel}" is too large to patch (limit ${ws.files.maxFileBytes} bytes).`, { path: k.r.rel });
    }
    const hasBom = v.bytes.subarray(0, 3).equals(BOM);
    return { kind: 'file', text: (hasBom ? v.bytes.subarray(3) : v.bytes).toString('utf8') };
  };
  return { planned: planPatch(ops, read), known };
}

async function plan(ws: FileWorkspace, args: z.infer<typeof applyPatchParameters>, d: AuditDraft): Promise<WritePlan<ApplyPatchData>> {
  const ops = parsePatch(args.patch);
  // Files with unsaved buffer changes can be updated (in the buffer), never deleted or moved.
  if (ws.files.hasBridge) {
    for (const op of ops) {
      const r = ws.resolve(op.path);
      const moved = op.type === 'update' && op.moveTo !== undefined;
      if (op.type === 'add' || (await ws.files.view(r.abs)).source !== 'buffer') continue;
      d.path = r.rel;
      if (op.type === 'delete') throw unsavedBufferError(r.rel, 'it cannot be deleted');
      if (moved) throw unsavedBufferError(r.rel, 'it cannot be moved');
      if (ws.files.unsavedBuffers === 'refuse') throw unsavedBufferError(r.rel, 'unsaved_buffers is "refuse"');
    }
  }
  // The stale gate first, against the content read inside the write lock. "" on the target of an Add
  // File (or a move) asserts what the Add File rule enforces anyway, so an existing file is already_exists.
  const created = new Set(ops.flatMap((op) => (op.type === 'add' ? [op.path] : op.type === 'update' && op.moveTo !== undefined ? [op.moveTo] : [])).map((p) => ws.resolve(p).abs));
  for (const [p, sha] of Object.entries(args.expectedSha256ByPath ?? {})) {
    const r = ws.resolve(p);
    d.path = r.rel;
    const view = await ws.files.view(r.abs);
    if (sha === '' && created.has(r.abs) && view.kind !== 'missing') {
      throw new ToolError('already_exists', `"${r.rel}" already exists (apply_patch never overwrites).`, {
        path: r.rel,
        suggestedAction: 'Use "*** Update File:" with the sha256 from read_file, or pick another path.',
      });
    }
    ws.files.assertFresh(view, sha, r.rel);
  }
  d.path = null;
  const { planned, known } = await planWithSnapshot(ws, ops);
  const kOf = (p: string): Known => known.get(p)!;


  const deleted = new Set(planned.filter((c) => c.type === 'delete').map((c) => kOf(c.path).r.abs));
  const changes: FileChange[] = [];
  const files: ApplyPatchFile[] = [];
  const audit: WritePlan<ApplyPatchData>['audit'] = [];
  const stashes: { id: string; abs: string; rel: string; view: FileView }[] = [];
  // A hunk review may drop a delete from `changes`: only the deletes still there are stashed.
  const committed = () => stashes.filter((s) => changes.some((c) => c.type === 'delete' && c.abs === s.abs));
  const finals = finalContents(planned);
  const diffs: string[] = [];
  const newSha = new Map<string, string>();
  const movedFrom = new Map<string, string>();
  for (const c of planned) if (c.type === 'update' && c.moveTo !== undefined) movedFrom.set(kOf(c.moveTo).r.abs, kOf(c.path).r.abs);

  for (const [p, text] of finals) {
    const { r, view } = kOf(p);
    const hadBom = !!view.bytes && view.bytes.subarray(0, 3).equals(BOM);
    if (text === null) {
      if (view.kind === 'missing') continue; // added then deleted within the patch
      changes.push({ type: 'delete', abs: r.abs, ...(view.source === 'disk' && view.sha256 ? { expectSha256: view.sha256 } : {}) });
      if (deleted.has(r.abs)) stashes.push({ id: ws.trash.newId(), abs: r.abs, rel: r.rel, view });
      continue;
    }
    const body = Buffer.from(text, 'utf8');
    const bytes = hadBom ? Buffer.concat([BOM, body]) : body;
    newSha.set(r.rel, sha256Hex(bytes));
    if (view.bytes && bytes.equals(view.bytes)) continue;
    changes.push({
      type: 'write',
      abs: r.abs,
      bytes,
      mode: view.mode ?? undefined,
      createOnly: view.kind === 'missing',
      basis: basisOf(view),
      movedFrom: movedFrom.get(r.abs),
    });
  }
  // Writes before deletes: a move lands at its new path before the old one goes.
  changes.sort((a, b) => (a.type === b.type ? 0 : a.type === 'write' ? -1 : 1));

  for (const c of planned) {
    const from = kOf(c.path);
    if (c.type === 'add') {
      const diff = fileDiff(null, from.r.rel, '', c.newText ?? '');
      diffs.push(diff);
      files.push({ path: from.r.rel, action: 'add', sha256: newSha.get(from.r.rel) });
      audit.push({ operation: 'patch:add', path: from.r.rel, toPath: null, beforeSha256: null, afterSha256: newSha.get(from.r.rel) ?? null, diff });
    } else if (c.type === 'delete') {
      const stash = stashes.find((s) => s.rel === from.r.rel);
      const diff = fileDiff(from.r.rel, null, c.oldText ?? '', '');
      diffs.push(diff);
      files.push({ path: from.r.rel, action: 'delete', ...(stash ? { trashId: stash.id } : {}) });
      audit.push({ operation: 'patch:delete', path: from.r.rel, toPath: null, beforeSha256: from.view.sha256, afterSha256: null, diff });
    } else {
      const to = c.moveTo !== undefined ? kOf(c.moveTo) : from;
      const diff = fileDiff(from.r.rel, to.r.rel, c.oldText ?? '', c.newText ?? '');
      diffs.push(diff);
      const moved = c.moveTo !== undefined;
      files.push({ path: from.r.rel, action: moved ? 'move' : 'update', ...(moved ? { moveTo: to.r.rel } : {}), sha256: newSha.get(to.r.rel) });
      audit.push({
        operation: moved ? 'patch:move' : 'patch:update',
        path: from.r.rel,
        toPath: moved ? to.r.rel : null,
        beforeSha256: from.view.sha256,
        afterSha256: newSha.get(to.r.rel) ?? null,
        diff,
      });
    }
  }
  const diff = diffs.join('');
  d.diff = diff;
  return {
    changes,
    diff,
    result: { files, ...capDiff(diff, 'the patched files') },
    audit,
    beforeCommit: async () => {
      for (const s of committed()) await ws.trash.stash(s.id, s.view.bytes!, { originalPath: s.rel, sha256: s.view.sha256!, mode: s.view.mode ?? 0o644 });
    },
    onFailure: async () => {
      for (const s of committed()) await ws.trash.discard(s.id);
    },
    afterCommit: async (report) => {
      for (const f of files) {
        if (f.action === 'delete') continue;
        const k = known.get(f.moveTo ?? f.path) ?? [...known.values()].find((x) => x.r.rel === (f.moveTo ?? f.path));
        if (!k) continue;
        const s = savedFields(report, k.r.abs);
        if (k.view.source === 'buffer' && !report.buffered.has(k.r.abs)) Object.assign(s, { savedToDisk: false, unsavedBuffer: true });
        Object.assign(f, s);
      }
      const now = new Date().toISOString();
      for (const s of committed()) {
        ws.trash.record({
          id: s.id,
          originalPath: s.rel,
          sha256: s.view.sha256!,
          size: s.view.size,
          mode: s.view.mode ?? 0o644,
          deletedAt: now,
          sessionId: ws.sessionId,
        });
      }
      if (stashes.length) await ws.trash.purge();
    },
  };
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const applyPatchTool: ToolDefinition<typeof applyPatchParameters, ApplyPatchData> = {
  name: 'apply_patch',
  description:
    'Apply a multi-file patch atomically: every file is prepared and checked in memory first, then all are written ' +
    'together; any failure leaves every file as it was. Accepts the "*** Begin Patch" envelope (Add File / Delete File ' +
    '/ Update File with @@ chunks of " " context, "-" removed and "+" added lines, optional Move to) and plain unified ' +
    'diffs. "@@ line" names a line the chunk comes after; when that is not unique, start the chunk with several @@ lines ' +
    '(e.g. "@@ class Foo" then "@@     def run(self):"): each is found after the previous one, then the chunk after the ' +
    'last. Add File never overwrites (already_exists); deleted files go to the trash. Stale-file protocol: put the ' +
    'sha256 from read_file of each file you change in expectedSha256ByPath ("" for files that must not exist yet); ' +
    'a mismatch fails with stale_file — re-read the files and rebuild the patch.' +
    DIAGNOSTICS_NOTE,
  parameters: applyPatchParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('apply_patch', 'patch', empty(), (d) => plan(ws, args, d), { review: ctx.review, signal: ctx.signal, diagnostics: ctx.reportDiagnostics });
  },
  async preview(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    const p = await plan(ws, args, empty());
    const paths = p.result.files.map((f) => f.moveTo ?? f.path);
    return { kind: 'diff', path: paths.length === 1 ? paths[0] : `${paths.length} files`, diff: p.diff, files: await reviewFiles(ws, p.changes) };
  },
};
