import fsp from 'node:fs/promises';
import { z } from 'zod';
import type { ToolDefinition } from './tool';
import { fileWorkspace, notFound } from '../workspace/workspace';
import { capItems, globFiles } from '../workspace/search';
import { includeIgnoredField, listNotice } from '../workspace/tool-support';

export const globParameters = z.object({
  pattern: z.string().min(1).describe('Glob pattern (fast-glob syntax), e.g. "**/*.ts" or "src/**/test_*.py". Folders end with "/".'),
  path: z.string().min(1).optional().describe('Folder the pattern is relative to, relative to the workspace root. Default: the root.'),
  includeIgnored: includeIgnoredField(),
});

export interface GlobData {
  paths: string[];
  truncated: boolean;
  omitted: number;
  notice?: string;
}

export async function runGlob(
  ctx: Parameters<ToolDefinition['execute']>[1],
  pattern: string,
  pathArg: string | undefined,
  includeIgnored: boolean,
): Promise<GlobData> {
  const ws = fileWorkspace(ctx.workspace);
  const r = ws.resolve(pathArg ?? '.', { allowRoot: true });
  const st = await fsp.stat(r.abs).catch(() => null);
  if (!st || !st.isDirectory()) throw notFound(r.rel || '.', 'The path must be an existing folder.');
  const res = await globFiles(ws.searchContext(ctx.signal), pattern, r.rel, !includeIgnored);
  const kept = capItems(res.paths, (p) => p.length + 4);
  const notice = listNotice(kept, res.total, 'narrow the pattern or the path to see the rest');
  return { paths: res.paths.slice(0, kept), truncated: kept < res.total, omitted: res.total - kept, ...(notice ? { notice } : {}) };
}

export const globTool: ToolDefinition<typeof globParameters, GlobData> = {
  name: 'glob',
  description:
    'Find files and folders whose workspace-relative path matches a glob pattern (fast-glob: *, **, ?, [..], {a,b}). ' +
    'Results are sorted paths relative to the workspace root; .git is skipped and .gitignore is honoured unless ' +
    'includeIgnored is true. Capped, with a count of what was left out.',
  parameters: globParameters,
  policy: 'read',
  execute: (args, ctx) => runGlob(ctx, args.pattern, args.path, args.includeIgnored ?? false),
};
