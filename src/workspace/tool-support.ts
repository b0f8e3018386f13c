import { z } from 'zod';
import { capText, truncationNotice } from './output';
import type { PostEditReport } from './post-edit-diagnostics';

/** Shared zod fields and output shaping for the file tools. */

export const pathField = (what = 'File path') =>
  z
    .string()
    .min(1)
    .describe(`${what}, relative to the workspace root (absolute paths must stay inside the workspace).`);

export const EXPECTED_SHA_REQUIRED =
  'required: call read_file first and pass the sha256 it returns (it proves you saw the current file)';

export const expectedShaField = (of = 'the file') =>
  z
    .string({ error: (iss) => (iss.input === undefined ? EXPECTED_SHA_REQUIRED : undefined) })
    .describe(
      `sha256 (hex) of ${of} as you last read it (data.sha256 from read_file or from your previous write). ` +
        'If the file changed since, the call fails with stale_file: re-read and retry.',
    );

export const includeIgnoredField = () =>
  z.boolean().optional().describe('Also include files ignored by .gitignore (default false). .git is always skipped.');

export const STALE_PROTOCOL =
  'Stale-file protocol: pass the sha256 returned by read_file (or by your last write to this file) as expectedSha256; ' +
  'if the file changed since, the call fails with stale_file and you must re-read the file and redo the change.';

/** Appended to the write tools' descriptions. */
export const DIAGNOSTICS_NOTE =
  ' When the file is open in Neovim with a language server, the result also has diagnostics: the errors and warnings ' +
  'your change introduced and resolved (fix the introduced ones).';

/** A write result's report on the diagnostics it changed (agent calls into buffers a language server serves). */
export interface WithDiagnostics {
  diagnostics?: PostEditReport;
}

export interface CappedDiff {
  diff: string;
  diffTruncated: boolean;
  notice?: string;
}

/** A diff in a tool result, capped like every tool output. */
export function capDiff(diff: string, rel: string): CappedDiff {
  const c = capText(diff);
  if (!c.truncated) return { diff, diffTruncated: false };
  return {
    diff: c.text,
    diffTruncated: true,
    notice: truncationNotice(c, `the change was applied in full; read_file "${rel}" to see the result`),
  };
}

/** Count-and-bytes cap for lists, with the notice the model reads. */
export function listNotice(kept: number, total: number, how: string): string | undefined {
  if (kept >= total) return undefined;
  return `[output truncated: ${total - kept} of ${total} results omitted; ${how}]`;
}
