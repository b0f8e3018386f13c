import fsp from 'node:fs/promises';
import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, notFound, type FileWorkspace } from '../workspace/workspace';
import { isUnder } from '../workspace/paths';
import { SEVERITIES, compareDiagnostics, severityRank, type BufferDiagnostics, type LocatedDiagnostic, type SeverityCounts } from '../workspace/diagnostics';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 500;
const MAX_FILES = 200;

export const diagnosticsParameters = z.object({
  path: z
    .string()
    .min(1)
    .optional()
    .describe('A file or folder, relative to the workspace root. Omit it for every file loaded in Neovim inside the workspace.'),
  severity: z
    .enum(SEVERITIES)
    .optional()
    .describe('Lowest severity returned: "error" = errors only, "warning" = errors and warnings, "info", or "hint" (default: all).'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .describe(`Most diagnostics returned (default ${DEFAULT_LIMIT}); the most severe are kept.`),
});

export interface DiagnosticsFile {
  path: string;
  /** The buffer has unsaved changes: its diagnostics describe that text, not the disk. */
  modified: boolean;
  /** Language servers attached to its buffer. */
  clients: string[];
  counts: SeverityCounts;
}

export interface DiagnosticsData {
  /** With a file path: whether the file is loaded in a Neovim buffer (only loaded buffers have diagnostics). */
  loaded?: boolean;
  /** The loaded files looked at. */
  files: DiagnosticsFile[];
  diagnostics: LocatedDiagnostic[];
  /** Diagnostics at or above the severity asked, before the limit. */
  total: number;
  truncated: boolean;
  notice?: string;
}

export const diagnosticsTool: ToolDefinition<typeof diagnosticsParameters, DiagnosticsData> = {
  name: 'diagnostics',
  description:
    "Errors, warnings and hints that the user's language servers (and linters) report in Neovim, including for unsaved " +
    'buffers: the editor\'s own view of the code, without running a build. With a file path: that file (only files loaded ' +
    'in Neovim have diagnostics; loaded: false says it is not). With a folder, or no path: every loaded file in it, or in ' +
    'the workspace. Each entry has path, severity, line, col, endLine, endCol (1-based; columns count characters; the end ' +
    'is exclusive), message, source and code; files lists the files looked at with modified (unsaved buffer), clients ' +
    '(attached language servers) and counts per severity. Your edits to a loaded file report by themselves the ' +
    'diagnostics they introduced or resolved (diagnostics in the write result).',
  parameters: diagnosticsParameters,
  policy: 'read',
  async execute(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    // A hostile path is refused as such, whether or not Neovim is attached.
    const r = args.path === undefined ? null : ws.resolve(args.path, { allowRoot: true });
    const source = ws.diagnostics;
    if (!source) throw new ToolError('internal_error', 'Diagnostics come from Neovim, and no Neovim is attached to this workspace.');
    const minSeverity = args.severity ?? 'hint';
    const limit = args.limit ?? DEFAULT_LIMIT;
    let base = ws.root;
    if (r) {
      const st = await fsp.stat(r.abs).catch(() => null);
      if (st?.isDirectory()) base = r.abs;
      else {
        const bufs = await source.list({ paths: [r.abs], root: ws.root, minSeverity, limit });
        if (bufs.length === 0) {
          if (!st) throw notFound(r.rel);
          return {
            loaded: false,
            files: [],
            diagnostics: [],
            total: 0,
            truncated: false,
            notice:
              `"${r.rel}" is not loaded in Neovim: only loaded buffers have diagnostics (language servers report on open files). ` +
              'Ask the user to open it, or check it another way (a type check or build with bash).',
          };
        }
        const data = { loaded: true, ...shape(ws, bufs, limit) };
        if (bufs[0].clients.length === 0) {
          data.notice ??= `No language server is attached to "${r.rel}": only what other sources (linters, plugins) set is shown.`;
        }
        return data;
      }
    }
    const bufs = (await source.list({ root: base, minSeverity, limit })).filter((b) => isUnder(base, b.abs) && !ws.paths.isDenied(ws.paths.relative(b.abs)));
    const data = shape(ws, bufs, limit);
    if (bufs.length === 0) {
      const where = base === ws.root ? 'the workspace' : `"${ws.paths.relative(base)}"`;
      data.notice = `No file of ${where} is loaded in Neovim: only loaded buffers have diagnostics (language servers report on open files).`;
    }
    return data;
  },
};

/** Files sorted by path; the `limit` most severe diagnostics over all files, sorted by path, severity, position. */
function shape(ws: FileWorkspace, bufs: BufferDiagnostics[], limit: number): DiagnosticsData {
  const located = bufs.map((b) => ({ b, rel: ws.paths.relative(b.abs) })).sort((x, y) => (x.rel < y.rel ? -1 : x.rel > y.rel ? 1 : 0));
  const files = located.map(({ b, rel }) => ({ path: rel, modified: b.modified, clients: b.clients, counts: b.counts }));
  const all = located.flatMap(({ b, rel }) => b.diagnostics.map((d) => ({ path: rel, ...d })));
  const kept = all
    .sort((x, y) => severityRank(x.severity) - severityRank(y.severity) || compareDiagnostics(x, y))
    .slice(0, limit)
    .sort(compareDiagnostics);
  const total = bufs.reduce((n, b) => n + b.matched, 0);
  const data: DiagnosticsData = { files: files.slice(0, MAX_FILES), diagnostics: kept, total, truncated: total > kept.length };
  const notes: string[] = [];
  if (data.truncated) notes.push(`${total - kept.length} of ${total} diagnostics omitted (the most severe are kept); pass a path or severity "error" to narrow`);
  if (files.length > MAX_FILES) notes.push(`${files.length - MAX_FILES} of ${files.length} files not listed`);
  if (notes.length > 0) data.notice = `[output truncated: ${notes.join('; ')}]`;
  return data;
}
