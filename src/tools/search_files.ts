import { z } from 'zod';
import type { ToolDefinition } from './tool';
import { runGlob, type GlobData } from './glob';
import { runGrep, type GrepData } from './grep';
import { includeIgnoredField } from '../workspace/tool-support';

export const searchFilesParameters = z.object({
  mode: z
    .enum(['glob', 'text', 'regex'])
    .describe('"glob": match file paths against query; "text": find a literal string in file contents; "regex": find a regular expression.'),
  query: z.string().min(1).describe('The glob pattern, literal text or regular expression (depending on mode).'),
  path: z.string().min(1).optional().describe('Folder to search, relative to the workspace root. Default: the root.'),
  include: z.string().min(1).optional().describe('text/regex modes: only search files whose name matches this glob, e.g. "*.ts".'),
  includeIgnored: includeIgnoredField(),
});

export type SearchFilesData = ({ mode: 'glob' } & GlobData) | ({ mode: 'text' | 'regex' } & GrepData);

export const searchFilesTool: ToolDefinition<typeof searchFilesParameters, SearchFilesData> = {
  name: 'search_files',
  description:
    'Search the workspace by file name (mode "glob") or by content (mode "text" for a literal string, "regex" for a ' +
    'regular expression). Content matches are {path, line, text}, sorted by path then line. .git and binary files ' +
    'are skipped and .gitignore is honoured unless includeIgnored is true. Capped, with a count of what was left out.',
  parameters: searchFilesParameters,
  policy: 'read',
  async execute(args, ctx) {
    if (args.mode === 'glob') {
      return { mode: 'glob', ...(await runGlob(ctx, args.query, args.path, args.includeIgnored ?? false)) };
    }
    const data = await runGrep(ctx, {
      pattern: args.query,
      fixed: args.mode === 'text',
      path: args.path,
      include: args.include,
      includeIgnored: args.includeIgnored,
    });
    return { mode: args.mode, ...data };
  },
};
