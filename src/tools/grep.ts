import fsp from 'node:fs/promises';
import { z } from 'zod';
import type { ToolContext, ToolDefinition } from './tool';
import { fileWorkspace, notFound } from '../workspace/workspace';
import { capItems, grep, type GrepMatch } from '../workspace/search';
import { includeIgnoredField, listNotice } from '../workspace/tool-support';

export const grepParameters = z.object({
  pattern: z.string().min(1).describe('Regular expression searched line by line (JavaScript/ripgrep syntax, case-sensitive).'),
  path: z.string().min(1).optional().describe('Folder or file to search, relative to the workspace root. Default: the root.'),
  include: z.string().min(1).optional().describe('Only search files whose name matches this glob, e.g. "*.ts" or "*.{js,jsx}".'),
  includeIgnored: includeIgnoredField(),
});

export interface GrepData {
  matches: GrepMatch[];
  truncated: boolean;
  omitted: number;
  engine: 'rg' | 'js';
  notice?: string;
}

export async function runGrep(
  ctx: ToolContext,
  q: { pattern: string; fixed: boolean; path?: string; include?: string; includeIgnored?: boolean; engine?: 'auto' | 'rg' | 'js' },
): Promise<GrepData> {
  const ws = fileWorkspace(ctx.workspace);
  const r = ws.resolve(q.path ?? '.', { allowRoot: true });
  if (!(await fsp.stat(r.abs).catch(() => null))) throw notFound(r.rel || '.');
  const res = await grep(ws.searchContext(ctx.signal), {
    pattern: q.pattern,
    fixed: q.fixed,
    startRel: r.rel,
    include: q.include,
    gitignore: !q.includeIgnored,
    engine: q.engine,
  });
  const kept = capItems(res.matches, (m) => m.path.length + m.text.length + 40);
  const notice = listNotice(kept, res.total, 'narrow the pattern, path or include to see the rest');
  return {
    matches: res.matches.slice(0, kept),
    truncated: kept < res.total,
    omitted: res.total - kept,
    engine: res.engine,
    ...(notice ? { notice } : {}),
  };
}

export const grepTool: ToolDefinition<typeof grepParameters, GrepData> = {
  name: 'grep',
  description:
    'Search file contents for a regular expression. Returns {path, line, text} per matching line, sorted by path then ' +
    'line. .git and binary files are skipped and .gitignore is honoured unless includeIgnored is true. Uses ripgrep ' +
    'when installed. Capped, with a count of what was left out.',
  parameters: grepParameters,
  policy: 'read',
  execute: (args, ctx) => runGrep(ctx, { ...args, fixed: false }),
};
