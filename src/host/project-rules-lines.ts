/**
 * The rules options in force and the chat's lines for them: apart from project-rules.ts (which holds the
 * stored snapshot's zod schema) for the first-request bundle, which holds no zod (issue 24).
 */
import {
  DEFAULT_RULES_FILES,
  DEFAULT_RULES_MAX_BYTES_PER_FILE,
  DEFAULT_RULES_MAX_TOTAL_BYTES,
  type RulesOptions,
  type RulesSnapshot,
} from '../workspace/rules';
import type { HostConfig } from './protocol';

/** The rules options in force, or null when `rules = false` (or an empty file list). */
export function rulesOptions(config: HostConfig): RulesOptions | null {
  const r = config.rules;
  if (r === false) return null;
  const files = r?.files ?? DEFAULT_RULES_FILES;
  if (files.length === 0) return null;
  return {
    files,
    maxBytesPerFile: r?.max_bytes_per_file ?? DEFAULT_RULES_MAX_BYTES_PER_FILE,
    maxTotalBytes: r?.max_total_bytes ?? DEFAULT_RULES_MAX_TOTAL_BYTES,
    denyGlobs: config.deny_globs,
  };
}

/** The chat's lines for a snapshot: which files the conversation follows, and which were left out and why. */
export function rulesChatLines(snap: Pick<RulesSnapshot, 'files' | 'skipped'>): string[] {
  const lines: string[] = [];
  if (snap.files.length > 0) lines.push(`Rules: ${snap.files.map((f) => (f.truncated ? `${f.rel} (truncated)` : f.rel)).join(', ')}`);
  if (snap.skipped.length > 0) lines.push(`Rules skipped: ${snap.skipped.map((s) => `${s.rel} (${s.reason})`).join(', ')}`);
  return lines;
}
