import { FileWorkspace, type Workspace } from '../workspace/workspace';
import { parsePatch } from '../workspace/patch';
import { ToolError } from '../workspace/errors';

/**
 * Tools whose result shows a file's content (or a diff of it, or lines matching in it), and those that
 * could give a secret file another name to read it by (move_file, restore_file to another path).
 */
const READING_TOOLS = new Set(['read_file', 'edit_file', 'write_file', 'grep', 'search_files', 'apply_patch', 'move_file', 'restore_file']);

/**
 * The files that usually hold secrets (secret_globs) a call would read or search, workspace-relative
 * (issue 18, item 11): the agent asks the user before running such a call, in every mode. A search of a
 * folder is not listed: it leaves secret files out itself (search.ts). Paths that do not resolve are
 * left to the tool (it refuses them).
 */
export function secretTargets(tool: string, args: unknown, workspace: Workspace): string[] {
  if (!READING_TOOLS.has(tool) || !(workspace instanceof FileWorkspace)) return [];
  const a = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
  const paths: string[] = [];
  if (tool === 'search_files' && a.mode === 'glob') return [];
  if (typeof a.path === 'string') paths.push(a.path);
  if (tool === 'move_file' && typeof a.from === 'string') paths.push(a.from);
  if (tool === 'restore_file' && typeof a.trashId === 'string' && typeof a.targetPath === 'string') {
    // Restoring a trashed secret under another name would let it be read by that name.
    const entry = workspace.trash.get(a.trashId);
    if (entry && workspace.isSecret(entry.originalPath) && !workspace.isSecret(a.targetPath)) return [entry.originalPath];
  }
  if (tool === 'apply_patch' && typeof a.patch === 'string') {
    try {
      for (const op of parsePatch(a.patch)) if (op.type === 'update') paths.push(op.path);
    } catch {
      // an unparsable patch fails in the tool
    }
  }
  const out = new Set<string>();
  for (const p of paths) {
    try {
      const r = workspace.resolve(p, { allowRoot: true });
      if (workspace.isSecret(r.rel)) out.add(r.rel);
    } catch {
      // refused by the tool itself
    }
  }
  return [...out];
}

/**
 * What the workspace says of a path the user attaches from the editor (a selection's, a buffer's
 * diagnostics'): `secret` (secret_globs: sent only after a read the user is asked for), `ok`, or why it is
 * refused as read_file refuses it (outside_workspace, permission_denied for deny_globs and .git…).
 */
export type AttachVerdict = 'ok' | 'secret' | { refused: string; message: string };

export function attachVerdict(workspace: Workspace, p: string): AttachVerdict {
  if (!(workspace instanceof FileWorkspace)) return 'ok';
  try {
    const r = workspace.resolve(p, { allowRoot: true });
    return workspace.isSecret(r.rel) ? 'secret' : 'ok';
  } catch (e) {
    return { refused: e instanceof ToolError ? e.kind : 'invalid_arguments', message: e instanceof Error ? e.message : String(e) };
  }
}

/** What the approval and the chat say about such a call. */
export function secretReason(tool: string, rels: string[]): string {
  const what =
    tool === 'grep' || tool === 'search_files' ? 'search' : tool === 'read_file' ? 'read' : tool === 'move_file' || tool === 'restore_file' ? 'give another name to' : 'read and change';
  return `${tool} would ${what} ${rels.join(', ')}: ${rels.length === 1 ? 'a file that usually holds' : 'files that usually hold'} secrets (secret_globs), so you are asked in every mode.`;
}
