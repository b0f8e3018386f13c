/** The default system prompt. Kept short: tool descriptions carry the details. */
import type { PermissionMode } from '../tools/permissions';

const MODE_NOTES: Record<PermissionMode, string> = {
  plan: 'The session is in plan mode: only read-only tools run. Investigate and propose a plan; do not try to modify files or run commands.',
  create: 'The session is in create mode: file edits and commands wait for the user\'s approval.',
  'auto-edit': 'The session is in auto-edit mode: file edits run without approval; commands wait for the user\'s approval.',
  chug: 'The session is in chug mode: every tool runs without approval. Be careful.',
};

/** One sentence on what the mode lets run (subagents' prompts say it too). */
export function modeNote(mode: PermissionMode): string {
  return MODE_NOTES[mode];
}

export function defaultSystemPrompt(mode: PermissionMode, cwd?: string): string {
  return [
    'You are Caboose, a coding assistant running inside Neovim with tools to read, search and change the user\'s workspace.',
    'Read files before editing them and pass the sha256 you read as expectedSha256; on stale_file, re-read and retry.',
    'Prefer small, targeted edits. When a tool returns an error, read its kind, message and suggestedAction and adapt.',
    'When the task is done, answer briefly with what you changed.',
    MODE_NOTES[mode],
    ...(cwd ? [`Working directory (the workspace root; relative paths start here): ${cwd}`] : []),
  ].join('\n');
}

/** What the project-rules section needs of a snapshot (src/workspace/rules.ts). */
export interface PromptRules {
  cwd: string;
  files: readonly { rel: string; size: number; bytes: number; text: string; truncated?: string; meta?: { description?: string; globs?: string; alwaysApply?: boolean } }[];
  skipped: readonly { rel: string; size?: number; overTotal?: true }[];
}

/**
 * The project's instruction files as a system-prompt section: nearest first, each in a tag naming its path,
 * with the rule that the nearer file wins. Undefined when there is nothing to include.
 */
export function projectRulesSection(rules: PromptRules): string | undefined {
  const overTotal = rules.skipped.filter((s) => s.overTotal);
  if (rules.files.length === 0 && overTotal.length === 0) return undefined;
  const out = [
    '# Project instructions',
    '',
    'The files below hold the project\'s instructions for coding agents; follow them. They were found from the working directory up to the repository root and come nearest folder first; paths are relative to the working directory' +
      ` (${rules.cwd}). When instructions conflict, the file nearer to the working directory wins.`,
  ];
  for (const f of rules.files) {
    out.push('', `<project_instructions path="${f.rel}">`);
    const note = ruleNote(f.meta);
    if (note) out.push(note);
    out.push(f.text.replace(/\n+$/, ''));
    if (f.truncated) out.push(`[truncated: only the first ${f.bytes} of ${f.size} bytes are included (${f.truncated}); read the file for the rest]`);
    out.push('</project_instructions>');
  }
  if (overTotal.length > 0) {
    const list = overTotal.map((s) => (s.size === undefined ? s.rel : `${s.rel} (${s.size} bytes)`)).join(', ');
    out.push('', `Not included because the size cap for these files (max_total_bytes) was reached: ${list}. Read them when they matter to the task.`);
  }
  return out.join('\n');
}

/** When a Cursor rule applies, from its front matter (nothing for one that always applies). */
function ruleNote(meta: PromptRules['files'][number]['meta']): string | undefined {
  if (!meta || meta.alwaysApply) return undefined;
  const description = meta.description?.replace(/[.\s]+$/, '');
  if (meta.globs) return `(This rule applies to files matching ${meta.globs}${description ? `: ${description}` : ''}.)`;
  if (description) return `(This rule applies when relevant: ${description}.)`;
  return undefined;
}
