import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, notFound, type AuditDraft, type FileWorkspace, type WritePlan } from '../workspace/workspace';
import { expectedShaField, pathField } from '../workspace/tool-support';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { unsavedBufferError } from '../workspace/file-errors';
import type { FileView } from '../workspace/file-view';
import { sliceLines, type LineSlice } from '../workspace/encoding';

export const deleteFileParameters = z.object({
  path: pathField(),
  expectedSha256: expectedShaField(),
});

export interface DeleteFileData {
  path: string;
  trashId: string;
  sha256: string;
  /** How many lines the deleted file had (what the chat line says instead of a diff count). */
  lines: number;
  diff: string;
}

/** `seen` receives what the approval preview shows of the file about to be deleted. */
async function plan(ws: FileWorkspace, args: z.infer<typeof deleteFileParameters>, d: AuditDraft, seen?: { preview?: string }): Promise<WritePlan<DeleteFileData>> {
  const r = ws.resolve(args.path);
  d.path = r.rel;
  // A file too large to load is hashed and copied to the trash in chunks (never held in memory).
  const st = await fsp.stat(r.abs).catch(() => null);
  if (st?.isFile() && st.size > ws.files.maxFileBytes) return planLarge(ws, args, d, r, st, seen);
  const v = await ws.files.view(r.abs);
  if (v.kind === 'missing') throw notFound(r.rel);
  if (v.kind === 'directory') {
    throw new ToolError('is_directory', `"${r.rel}" is a directory; delete_file removes single files.`, { path: r.rel });
  }
  if (v.kind !== 'file' || !v.bytes || !v.sha256) throw new ToolError('permission_denied', `"${r.rel}" is not a regular file.`, { path: r.rel });
  d.beforeSha256 = v.sha256;
  if (v.source === 'buffer') throw unsavedBufferError(r.rel, 'it cannot be deleted');
  await ws.files.assertWritable(v, r.rel);
  ws.files.assertFresh(v, args.expectedSha256, r.rel);
  const trashId = ws.trash.newId();
  const bytes = v.bytes;
  const sha = v.sha256;
  const head = sliceLines(bytes, 1, PREVIEW_LINES);
  if (seen) seen.preview = deletePreview(r.rel, bytes, head);
  const diff = `Delete ${r.rel} (${bytes.length} bytes, sha256 ${sha.slice(0, 12)}…) — recoverable with restore_file trashId=${trashId}`;
  d.diff = diff;
  return {
    changes: [{ type: 'delete', abs: r.abs, expectSha256: sha }],
    diff,
    result: { path: r.rel, trashId, sha256: sha, lines: head.totalLines, diff },
    audit: [{ ...d, operation: 'delete' }],
    beforeCommit: () => ws.trash.stash(trashId, bytes, { originalPath: r.rel, sha256: sha, mode: v.mode ?? 0o644 }),
    onFailure: () => ws.trash.discard(trashId),
    afterCommit: async () => {
      ws.trash.record({
        id: trashId,
        originalPath: r.rel,
        sha256: sha,
        size: bytes.length,
        mode: v.mode ?? 0o644,
        deletedAt: new Date().toISOString(),
        sessionId: ws.sessionId,
      });
      await ws.trash.purge();
    },
  };
}

/** delete_file of a file larger than maxFileBytes: streamed hash and copy, bounded memory. */
async function planLarge(
  ws: FileWorkspace,
  args: z.infer<typeof deleteFileParameters>,
  d: AuditDraft,
  r: { abs: string; rel: string },
  st: fs.Stats,
  seen?: { preview?: string },
): Promise<WritePlan<DeleteFileData>> {
  // One pass in 1 MiB chunks: the sha256 and the line count (what the chat line says).
  const h = createHash('sha256');
  let newlines = 0;
  let last = -1;
  for await (const chunk of fs.createReadStream(r.abs, { highWaterMark: 1 << 20 })) {
    const b = chunk as Buffer;
    h.update(b);
    for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) newlines++;
    if (b.length) last = b[b.length - 1];
  }
  const sha = h.digest('hex');
  const lineCount = newlines + (last !== -1 && last !== 10 ? 1 : 0);
  d.beforeSha256 = sha;
  const v: FileView = { abs: r.abs, kind: 'file', bytes: null, sha256: sha, mode: st.mode & 0o7777, size: st.size, source: 'disk' };
  await ws.files.assertWritable(v, r.rel);
  ws.files.assertFresh(v, args.expectedSha256, r.rel);
  const trashId = ws.trash.newId();
  const fh = await fsp.open(r.abs, 'r');
  let headBytes: Buffer;
  try {
    const buf = Buffer.alloc(64 * 1024);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    headBytes = buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
  const head = sliceLines(headBytes, 1, PREVIEW_LINES);
  if (seen) seen.preview = `Delete ${r.rel} (${st.size} bytes); it goes to the trash (:CabooseRestore brings it back).` + (headBytes.includes(0) ? '' : `\n\n${head.text.replace(/\n$/, '')}\n…`);
  const diff = `Delete ${r.rel} (${st.size} bytes, sha256 ${sha.slice(0, 12)}…) — recoverable with restore_file trashId=${trashId}`;
  d.diff = diff;
  return {
    changes: [{ type: 'delete', abs: r.abs, expectSha256: sha }],
    diff,
    result: { path: r.rel, trashId, sha256: sha, lines: lineCount, diff },
    audit: [{ ...d, operation: 'delete' }],
    beforeCommit: () => ws.trash.stash(trashId, { file: r.abs }, { originalPath: r.rel, sha256: sha, mode: v.mode ?? 0o644 }),
    onFailure: () => ws.trash.discard(trashId),
    afterCommit: async () => {
      ws.trash.record({ id: trashId, originalPath: r.rel, sha256: sha, size: st.size, mode: v.mode ?? 0o644, deletedAt: new Date().toISOString(), sessionId: ws.sessionId });
      await ws.trash.purge();
    },
  };
}

const PREVIEW_LINES = 40;

/** What the user approves: the file, its size, where it goes, and its first lines (not for binary files). */
function deletePreview(rel: string, bytes: Buffer, head: LineSlice): string {
  const n = head.totalLines;
  const what = `Delete ${rel} (${n} line${n === 1 ? '' : 's'}, ${bytes.length} byte${bytes.length === 1 ? '' : 's'}); it goes to the trash (:CabooseRestore brings it back).`;
  if (bytes.length === 0 || bytes.includes(0)) return what;
  const shown = head.text.replace(/\n$/, '').split('\n');
  if (n > PREVIEW_LINES) shown.push(`… ${n - PREVIEW_LINES} more lines`);
  return [what, '', ...shown].join('\n');
}

const empty = (): AuditDraft => ({ path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null });

export const deleteFileTool: ToolDefinition<typeof deleteFileParameters, DeleteFileData> = {
  name: 'delete_file',
  description:
    'Delete a file by moving it to the workspace trash; returns a trashId that restore_file accepts. expectedSha256 ' +
    '(required: the sha256 from read_file) proves you delete the version you saw: if the file changed, the call ' +
    'fails with stale_file — re-read it and decide again. Folders are refused (is_directory).',
  parameters: deleteFileParameters,
  policy: 'edit',
  execute: (args, ctx) => {
    const ws = fileWorkspace(ctx.workspace);
    return ws.runWrite('delete_file', 'delete', empty(), (d) => plan(ws, args, d), { signal: ctx.signal });
  },
  async preview(args, ctx) {
    const seen: { preview?: string } = {};
    await plan(fileWorkspace(ctx.workspace), args, empty(), seen);
    return { kind: 'text', text: seen.preview ?? '' };
  },
};
