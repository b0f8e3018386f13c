import fsp from 'node:fs/promises';
import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolDefinition } from './tool';
import { fileWorkspace, notFound } from '../workspace/workspace';
import { capItems, listDirectory, type ListEntry } from '../workspace/search';
import { includeIgnoredField, listNotice } from '../workspace/tool-support';

export const listDirectoryParameters = z.object({
  path: z.string().min(1).optional().describe('Folder to list, relative to the workspace root. Default: the root.'),
  recursive: z.boolean().optional().describe('List the whole tree below the folder (default false).'),
  includeIgnored: includeIgnoredField(),
});

export interface ListDirectoryData {
  path: string;
  entries: ListEntry[];
  truncated: boolean;
  omitted: number;
  notice?: string;
}

export const listDirectoryTool: ToolDefinition<typeof listDirectoryParameters, ListDirectoryData> = {
  name: 'list_directory',
  description:
    'List the entries of a folder (name order; type file, dir or symlink), optionally the whole tree with recursive: true. ' +
    '.git is skipped and .gitignore is honoured unless includeIgnored is true. Long listings are capped with a count ' +
    'of what was left out; list a sub-folder to see the rest.',
  parameters: listDirectoryParameters,
  policy: 'read',
  async execute(args, ctx) {
    const ws = fileWorkspace(ctx.workspace);
    const r = ws.resolve(args.path ?? '.', { allowRoot: true });
    const st = await fsp.stat(r.abs).catch(() => null);
    if (!st) throw notFound(r.rel || '.');
    if (!st.isDirectory()) {
      throw new ToolError('invalid_arguments', `"${r.rel}" is a file, not a folder.`, { path: r.rel, suggestedAction: 'Use read_file to read it.' });
    }
    const all = await listDirectory(ws.searchContext(ctx.signal), r.rel, args.recursive ?? false, !args.includeIgnored);
    const kept = capItems(all, (e) => e.path.length + 32);
    const notice = listNotice(kept, all.length, 'list a sub-folder (or use glob) to see the rest');
    return {
      path: r.rel || '.',
      entries: all.slice(0, kept),
      truncated: kept < all.length,
      omitted: all.length - kept,
      ...(notice ? { notice } : {}),
    };
  },
};
