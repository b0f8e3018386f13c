/** The default system prompt. Kept short: tool descriptions carry the details. */
import type { PermissionMode } from './permissions';

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
