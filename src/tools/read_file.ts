import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import { MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, capText } from '../workspace/output';
import type { ToolDefinition } from './tool';
import { fileWorkspace } from '../workspace/workspace';
import { pathField } from '../workspace/tool-support';
import { sliceLines } from '../workspace/encoding';

export const readFileParameters = z.object({
  path: pathField(),
  startLine: z.number().int().min(1).optional().describe('First line to return (1-based, inclusive). Default 1.'),
  endLine: z.number().int().min(1).optional().describe('Last line to return (1-based, inclusive). Default: the last line.'),
  maxBytes: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Most bytes of content to return (at most ${MAX_OUTPUT_BYTES}). Whole lines are kept.`),
});

export interface ReadFileData {
  path: string;
  content: string;
  /** sha256 of the FULL file bytes, even when the content is a slice: use it as expectedSha256. */
  sha256: string;
  totalLines: number;
  startLine: number;
  endLine: number;
  truncated: boolean;
  notice?: string;
  size: number;
  encoding: { bom: boolean; eol: 'lf' | 'crlf'; finalNewline: boolean };
  /** true: the text is an unsaved buffer's; false: the disk's (only reported when Neovim is attached). */
  unsavedBuffer?: boolean;
  /** With unsavedBuffer: sha256 of the file on disk (null when it is not on disk). */
  diskSha256?: string | null;
}

export const readFileTool: ToolDefinition<typeof readFileParameters, ReadFileData> = {
  name: 'read_file',
  description:
    'Read a text file, optionally a range of lines (1-based, inclusive). Returns the content, totalLines, the range ' +
    `returned and sha256 — the hash of the whole file on disk even for a partial read. Keep sha256: write_file, edit_file, ` +
    `delete_file, move_file and apply_patch need it as expectedSha256 to prove you saw the current file. Output is capped ` +
    `at ${MAX_OUTPUT_LINES} lines / 50 KB; when truncated, read on with startLine. CRLF files are shown with \\n line ` +
    'breaks (edits keep the CRLF). Binary files fail with binary_file. When the user has the file open in Neovim with ' +
    'unsaved changes, you see that buffer (unsavedBuffer: true, diskSha256 = the file on disk) and your edits go into it.',
  parameters: readFileParameters,
  policy: 'read',
  async execute(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    const r = ws.resolve(args.path);
    const v = await ws.files.viewChecked(r.abs, r.rel, { remember: true });
    const start = args.startLine ?? 1;
    if (args.endLine !== undefined && args.endLine < start) {
      throw new ToolError('invalid_arguments', `endLine (${args.endLine}) is before startLine (${start}).`, { path: r.rel });
    }
    // Never decode more than the 2,000 lines the output can hold.
    const sl = sliceLines(v.bytes, start, Math.min(args.endLine ?? Infinity, start + MAX_OUTPUT_LINES - 1));
    const { totalLines, text: slice } = sl;
    const end = sl.endLine;
    if (totalLines > 0 && start > totalLines) {
      throw new ToolError('invalid_arguments', `startLine ${start} is past the end: "${r.rel}" has ${totalLines} lines.`, {
        path: r.rel,
        suggestedAction: `Use a startLine between 1 and ${totalLines}.`,
      });
    }
    const maxBytes = Math.min(args.maxBytes ?? MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES);
    const c = capText(slice, MAX_OUTPUT_LINES, maxBytes);
    const base = {
      path: r.rel,
      sha256: v.sha256,
      totalLines,
      startLine: totalLines === 0 ? 0 : start,
      size: v.size,
      encoding: sl.encoding,
      // With Neovim attached, say whether the text came from an unsaved buffer; the library alone stays plain.
      ...(v.source === 'buffer' ? { unsavedBuffer: true, diskSha256: v.diskSha256 ?? null } : ws.files.hasBridge ? { unsavedBuffer: false } : {}),
    };
    const wantedEnd = Math.min(args.endLine ?? totalLines, totalLines);
    if (!c.truncated && end >= wantedEnd) {
      return { ...base, content: slice, endLine: totalLines === 0 ? 0 : end, truncated: false };
    }
    const partial = c.truncated && c.keptLines === 0;
    const lastFull = c.truncated ? start + c.keptLines - 1 : end;
    const next = partial ? start + 1 : lastFull + 1;
    const omittedLines = wantedEnd - (partial ? start : lastFull);
    const notice =
      `[output truncated: showing lines ${start}-${partial ? `${start} (cut at ${maxBytes} bytes)` : lastFull} of ${totalLines}; ` +
      `${omittedLines} more line(s) omitted; call read_file with startLine=${next} to read more]`;
    return { ...base, content: c.truncated ? c.text : slice, endLine: partial ? start : lastFull, truncated: true, notice };
  },
};
