import fsp from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { ToolContext, ToolDefinition } from './tool';
import { fileWorkspace, notFound } from '../workspace/workspace';
import { MAX_MATCH_TEXT, capItems, compileSearchRegex, grep, type GrepMatch } from '../workspace/search';
import { decodeText, isBinary } from '../workspace/encoding';
import { compileGlob } from '../workspace/glob-match';
import { isIgnoredPath, type IgnoreMatcher } from '../workspace/ignore';
import type { FileWorkspace } from '../workspace/workspace';
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
  /** Files that could not be read (the search went on without them). */
  unreadable?: { path: string; reason: string }[];
  /** Special files (FIFOs, sockets, devices) that were not searched. */
  skipped?: { path: string; reason: string }[];
}

/** What a special file is, in words (null for regular files and folders). */
function specialKind(st: { isFIFO(): boolean; isSocket(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isFile(): boolean; isDirectory(): boolean }): string | null {
  if (st.isFile() || st.isDirectory()) return null;
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

export async function runGrep(
  ctx: ToolContext,
  q: { pattern: string; fixed: boolean; path?: string; include?: string; includeIgnored?: boolean; engine?: 'auto' | 'rg' | 'js' },
): Promise<GrepData> {
  const ws = fileWorkspace(ctx.workspace);
  const r = ws.resolve(q.path ?? '.', { allowRoot: true });
  const st = await fsp.stat(r.abs).catch(() => null);
  if (!st) throw notFound(r.rel || '.');
  const special = specialKind(st);
  if (special) {
    // Reading a FIFO would block until a writer comes (forever): special files are never opened.
    return { matches: [], truncated: false, omitted: 0, engine: 'js', skipped: [{ path: r.rel, reason: special }], notice: `[skipped ${r.rel}: it is ${special}, not a regular file; nothing was searched]` };
  }
  const res = await grep(ws.searchContext(ctx.signal), {
    pattern: q.pattern,
    fixed: q.fixed,
    startRel: r.rel,
    include: q.include,
    gitignore: !q.includeIgnored,
    engine: q.engine,
  });
  await overlayUnsavedBuffers(ws, res, q, r.rel);
  const kept = capItems(res.matches, (m) => m.path.length + m.text.length + 40);
  let notice = res.stopped
    ? `[output truncated: the search stopped after ${res.total} matches; there are more. Narrow the pattern, path or include to see the rest]`
    : listNotice(kept, res.total, 'narrow the pattern, path or include to see the rest');
  if (res.unreadable.length) {
    const u = `[${res.unreadable.length} file(s) could not be read and were not searched: ${res.unreadable.map((x) => `${x.path} (${x.reason})`).join(', ')}]`;
    notice = notice ? `${notice}\n${u}` : u;
  }
  if (res.secretFiles?.length) {
    const n = res.secretFiles.length;
    const names = res.secretFiles.slice(0, 5).join(', ') + (n > 5 ? ', …' : '');
    const secret = `Matches in ${n} file${n === 1 ? '' : 's'} that usually hold secrets (${names}) were left out; to search one, name it in \`path\` (the user is asked first).`;
    notice = notice ? `${notice} ${secret}` : secret;
  }
  return {
    matches: res.matches.slice(0, kept),
    truncated: kept < res.total || res.stopped,
    omitted: res.total - kept,
    engine: res.engine,
    ...(notice ? { notice } : {}),
    ...(res.unreadable.length ? { unreadable: res.unreadable } : {}),
  };
}

/**
 * Files loaded in Neovim buffers with unsaved changes are searched in the buffer's text instead of
 * on disk (one round trip for all of them): their disk matches are replaced by buffer matches.
 */
async function overlayUnsavedBuffers(
  ws: FileWorkspace,
  res: { matches: GrepMatch[]; total: number; secretFiles?: string[] },
  q: { pattern: string; fixed: boolean; include?: string; includeIgnored?: boolean },
  startRel: string,
): Promise<void> {
  if (!ws.files.hasBridge) return;
  const buffers = await ws.files.unsavedBufferTexts();
  if (buffers.size === 0) return;
  const re = compileSearchRegex(q.pattern, q.fixed);
  const include = q.include ? compileGlob(q.include) : null;
  const cache = new Map<string, IgnoreMatcher>();
  for (const [abs, bytes] of buffers) {
    const rel = path.relative(ws.root, abs).split(path.sep).join('/');
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) continue;
    if (startRel !== '' && rel !== startRel && !rel.startsWith(startRel + '/')) continue;
    if (include && !include(path.posix.basename(rel))) continue;
    if (ws.paths.isDenied(rel) || rel === '.git' || rel.startsWith('.git/')) continue;
    if (ws.isSecret(rel) && !ws.isSecret(startRel)) continue; // left out like its disk matches (secret_globs)
    if (!q.includeIgnored && (await isIgnoredPath(ws.root, rel, false, cache))) continue;
    res.matches = res.matches.filter((m) => m.path !== rel);
    if (isBinary(bytes)) continue;
    const lines = decodeText(bytes).text.split('\n');
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    lines.forEach((line, i) => {
      if (re.test(line)) res.matches.push({ path: rel, line: i + 1, text: line.length > MAX_MATCH_TEXT ? line.slice(0, MAX_MATCH_TEXT) + '…' : line });
    });
  }
  res.matches.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
  res.total = res.matches.length;
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
