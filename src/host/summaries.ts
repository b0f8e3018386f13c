import type { ToolResult } from '../tools/tool';

const clip = (s: string, n = 80) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** One line for the chat: the tool and its most telling argument. */
export function summarizeToolCall(name: string, args: unknown): string {
  if (!args || typeof args !== 'object') return name;
  const a = args as Record<string, unknown>;
  const key = ['path', 'command', 'pattern', 'query', 'url', 'from', 'question'].find((k) => typeof a[k] === 'string');
  if (key) return `${name} ${clip(String(a[key]).split('\n')[0])}`;
  if (typeof a.patch === 'string') {
    const files = [...a.patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)].map((m) => m[1].trim());
    return `${name} ${clip(files.join(', ') || '(patch)')}`;
  }
  return name;
}

export type ToolStatus = 'ok' | 'error' | 'rejected' | 'cancelled';

/** What the chat shows of a finished call: a status, a few words for the call's line, and foldable details. */
export interface ToolResultView {
  status: ToolStatus;
  summary: string;
  details: string[];
}

const MAX_DETAIL_LINES = 40;

/** Counts a unified diff's added and removed lines (not its ---/+++ headers). */
export function diffStat(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diff.split('\n')) {
    if (line.startsWith('+++ ') || line.startsWith('--- ')) continue;
    if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  return { added, removed };
}

/** At most `max` lines: the first ones, then a count of what was left out. */
function capLines(lines: string[], max = MAX_DETAIL_LINES): string[] {
  if (lines.length <= max) return lines;
  return [...lines.slice(0, max - 1), `… ${lines.length - max + 1} more lines`];
}

const textLines = (s: string) => s.replace(/\n$/, '').split('\n');

/** The call's arguments as readable lines: no sha256 proofs, long text shown by size only. */
function argumentLines(args: unknown): string[] {
  if (!args || typeof args !== 'object') return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
    if (/sha256/i.test(k) || v === undefined || v === null) continue;
    if (typeof v === 'string') {
      const n = v.split('\n').length;
      out.push(n > 1 || v.length > 120 ? `${k}: (${n} lines, ${v.length} chars)` : `${k}: ${v}`);
    } else if (Array.isArray(v)) {
      out.push(`${k}: ${v.length} item${v.length === 1 ? '' : 's'}`);
    } else if (typeof v === 'object') {
      out.push(`${k}: ${Object.keys(v as object).length} entries`);
    } else {
      out.push(`${k}: ${String(v)}`);
    }
  }
  return out;
}

/** One line per finished call for the chat (`edit_file src/a.ts +3 −1`, `bash npm test → exit 1`) plus details. */
export function describeToolResult(name: string, args: unknown, result: ToolResult): ToolResultView {
  const details = argumentLines(args);
  if (!result.ok) {
    const kind = result.error.kind;
    const status: ToolStatus = kind === 'rejected_by_user' ? 'rejected' : kind === 'cancelled' ? 'cancelled' : 'error';
    details.push(`${kind}: ${result.error.message}`);
    if (result.error.suggestedAction) details.push(`→ ${result.error.suggestedAction}`);
    return { status, summary: status === 'error' ? `${kind}: ${clip(result.error.message, 100)}` : clip(result.error.message, 100), details: capLines(details) };
  }
  const d = (result.data ?? {}) as Record<string, unknown>;
  const words: string[] = [];
  if (typeof d.diff === 'string' && d.diff !== '') {
    const { added, removed } = diffStat(d.diff);
    words.push(`+${added} −${removed}`);
    details.push(...capLines(textLines(d.diff)));
  }
  if (d.savedToDisk === false) {
    words.push('(not saved: unsaved buffer)');
    details.push('not saved: unsaved buffer (the change is in the buffer; :w saves it)');
  }
  if ('exitCode' in d) {
    words.push(d.timedOut ? '→ timed out' : `→ exit ${d.exitCode === null ? '?' : String(d.exitCode)}`);
    if (typeof d.output === 'string' && d.output !== '') details.push(...capLines(textLines(d.output)));
  } else if (name === 'ask_user') {
    const answer = typeof d.answer === 'string' ? d.answer : '(no answer)';
    words.push(`→ ${clip(answer, 60)}`);
    details.push(`answer: ${answer}`);
  } else if (typeof d.totalLines === 'number') {
    words.push(`${d.totalLines} lines${d.unsavedBuffer === true ? ' (unsaved buffer)' : ''}`);
  } else if (Array.isArray(d.matches)) {
    words.push(`${d.matches.length} matches`);
  } else if (Array.isArray(d.entries)) {
    words.push(`${d.entries.length} entries`);
  } else if (Array.isArray(d.files)) {
    words.push(`${d.files.length} files`);
  } else if (typeof d.status === 'number') {
    words.push(`→ ${d.status}`);
  }
  return { status: 'ok', summary: words.join(' '), details };
}
