import type { ApprovalPreview, ToolResult } from '../tools/tool';
import type { ChatMessage } from '../agent/provider';
import type { SubagentProgress, SubagentTranscript } from '../agent/subagent';
import type { LocatedDiagnostic, Severity } from '../workspace/diagnostics';
import type { PostEditReport } from '../workspace/post-edit-diagnostics';
import type { DiagnosticsData } from '../tools/diagnostics';

const clip = (s: string, n = 80) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One line for the chat: the tool and its most telling argument. */
export function summarizeToolCall(name: string, args: unknown): string {
  if (!args || typeof args !== 'object') return name;
  const a = args as Record<string, unknown>;
  const first = (v: unknown, n = 80) => clip(String(v).split('\n')[0], n);
  // Every line names what the call acts on: a move its source and destination, a listing its folder.
  if (name === 'move_file' && typeof a.from === 'string' && typeof a.to === 'string') return `${name} ${first(a.from, 60)} → ${first(a.to, 60)}`;
  if (name === 'list_directory' && typeof a.path !== 'string') return `${name} .`;
  if (name === 'recall' && typeof a.id === 'number') return `${name} #${a.id}`;
  if (name === 'restore_file' && typeof a.targetPath === 'string') return `${name} to ${first(a.targetPath)}`;
  const key = ['path', 'command', 'pattern', 'query', 'url', 'from', 'question', 'task'].find((k) => typeof a[k] === 'string');
  if (key) return `${name} ${clip(String(a[key]).split('\n')[0])}`;
  if (typeof a.patch === 'string') {
    const files = [...a.patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$/gm)].map((m) => m[1].trim());
    return `${name} ${clip(files.join(', ') || '(patch)')}`;
  }
  // MCP tools (`server__tool`): their first short argument.
  if (name.includes('__')) {
    const first = Object.entries(a).find(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean');
    if (first) return `${name} ${clip(`${first[0]}=${String(first[1]).split('\n')[0]}`)}`;
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
      out.push(n > 1 || v.length > 120 ? `${k}: (${plural(n, 'line')}, ${plural(v.length, 'char')})` : `${k}: ${v}`);
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

function statusOf(result: ToolResult): ToolStatus {
  if (result.ok) return 'ok';
  return result.error.kind === 'rejected_by_user' ? 'rejected' : result.error.kind === 'cancelled' ? 'cancelled' : 'error';
}

/**
 * One line per finished call for the chat (`edit_file src/a.ts +3 −1`, `bash npm test → exit 1`) plus details.
 * A subagent's details list its steps (from its transcript) and the first lines of its answer.
 */
export function describeToolResult(name: string, args: unknown, result: ToolResult, transcript?: SubagentTranscript): ToolResultView {
  const details = argumentLines(args);
  if (transcript) details.push(...subagentSteps(transcript.messages));
  if (!result.ok) {
    const kind = result.error.kind;
    const status = statusOf(result);
    details.push(`${kind}: ${result.error.message}`);
    if (result.error.suggestedAction) details.push(`→ ${result.error.suggestedAction}`);
    return { status, summary: status === 'error' ? `${kind}: ${clip(result.error.message, 100)}` : clip(result.error.message, 100), details: capLines(details) };
  }
  const d = (result.data ?? {}) as Record<string, unknown>;
  const words: string[] = [];
  // The trash entry's path is known once it is restored (the call only names the entry).
  if (name === 'restore_file' && typeof d.path === 'string' && !(args && typeof args === 'object' && 'targetPath' in args)) words.push(d.path);
  if (typeof d.answer === 'string' && typeof d.toolCalls === 'number') {
    words.push(`${plural(d.toolCalls, 'tool call')}${d.truncated === true ? ' (answer cut)' : ''}`);
    const answer = textLines(d.answer);
    details.push('answer:', ...answer.slice(0, SUBAGENT_ANSWER_LINES).map((l) => `  ${l}`));
    if (answer.length > SUBAGENT_ANSWER_LINES) details.push(`  … ${answer.length - SUBAGENT_ANSWER_LINES} more lines`);
    return { status: 'ok', summary: words.join(' '), details: capLines(details) };
  }
  if (name === 'delete_file' && typeof d.trashId === 'string') {
    const lines = typeof d.lines === 'number' ? ` (${plural(d.lines, 'line')})` : '';
    words.push(`deleted${lines} · :CabooseRestore brings it back`);
    details.push(`in the trash as ${d.trashId}`);
  } else if (typeof d.diff === 'string' && d.diff !== '') {
    const { added, removed } = diffStat(d.diff);
    // A move changes no line: its call line says from where to where.
    if (!(name === 'move_file' && added === 0 && removed === 0)) words.push(`+${added} −${removed}`);
    details.push(...capLines(textLines(d.diff)));
  }
  const review = d.review as { applied?: { hunks: number[] }[]; rejected?: { path: string; hunk: number; reason?: string }[] } | undefined;
  if (review?.rejected?.length) {
    const applied = (review.applied ?? []).reduce((n, a) => n + a.hunks.length, 0);
    words.push(`(${applied} hunk${applied === 1 ? '' : 's'} applied, ${review.rejected.length} rejected)`);
    for (const r of review.rejected) details.push(`rejected ${r.path} hunk ${r.hunk}${r.reason ? `: ${r.reason}` : ''}`);
  }
  const diag = d.diagnostics as PostEditReport | undefined;
  if (diag && Array.isArray(diag.introduced) && Array.isArray(diag.resolved)) {
    const changed = diagnosticsWords(diag);
    if (changed) words.push(`· ${changed}`);
    details.push(...diag.introduced.map((x) => `new ${diagnosticLine(x)}`), ...diag.resolved.map((x) => `fixed ${diagnosticLine(x)}`));
    if (diag.timedOut) details.push(`diagnostics: no language server report within ${diag.waitedMs} ms`);
  }
  if (d.savedToDisk === false) {
    words.push('(not saved: unsaved buffer)');
    details.push('not saved: unsaved buffer (the change is in the buffer; :w saves it)');
  }
  if (name === 'diagnostics' && Array.isArray(d.diagnostics)) {
    const data = d as unknown as DiagnosticsData;
    words.push(data.loaded === false ? 'not loaded in Neovim' : diagnosticsTotals(data));
    details.push(...capLines(data.diagnostics.map(diagnosticLine)));
    return { status: 'ok', summary: words.join(' '), details };
  }
  if (typeof d.server === 'string' && typeof d.output === 'string') {
    // An MCP tool's answer.
    const lines = d.output === '' ? [] : textLines(d.output);
    words.push(`${plural(lines.length, 'line')}${d.truncated === true ? ' (cut)' : ''}`);
    details.push(...capLines(lines));
  } else if ('exitCode' in d) {
    words.push(d.timedOut ? '→ timed out' : `→ exit ${d.exitCode === null ? '?' : String(d.exitCode)}`);
    // What the sandbox blocked (issue 19), before the output.
    if (typeof d.sandboxBlocked === 'string') {
      words.push('(blocked by the sandbox)');
      details.push(d.sandboxBlocked);
    }
    if (typeof d.output === 'string' && d.output !== '') details.push(...capLines(textLines(d.output)));
  } else if (name === 'ask_user') {
    const answer = typeof d.answer === 'string' ? d.answer : '(no answer)';
    words.push(`→ ${clip(answer, 60)}`);
    details.push(`answer: ${answer}`);
  } else if (typeof d.totalLines === 'number') {
    words.push(`${plural(d.totalLines, 'line')}${d.unsavedBuffer === true ? ' (unsaved buffer)' : ''}`);
  } else if (Array.isArray(d.matches)) {
    words.push(`${d.matches.length} ${d.matches.length === 1 ? 'match' : 'matches'}`);
  } else if (Array.isArray(d.entries)) {
    words.push(`${d.entries.length} ${d.entries.length === 1 ? 'entry' : 'entries'}`);
  } else if (Array.isArray(d.paths)) {
    words.push(`${plural(d.paths.length, 'path')}${d.truncated === true ? ' (cut)' : ''}`);
  } else if (Array.isArray(d.todos)) {
    words.push(plural(d.todos.length, 'task'));
  } else if (Array.isArray(d.files) && (name !== 'apply_patch' || d.files.length > 1)) {
    // apply_patch's call line names its files; a count helps only when the names were cut.
    words.push(plural(d.files.length, 'file'));
  } else if (typeof d.status === 'number') {
    words.push(`→ ${d.status}`);
  }
  return { status: 'ok', summary: words.join(' '), details };
}

/* ------------------------------------------------------------------------------------------------
 * Diagnostics
 * ---------------------------------------------------------------------------------------------- */

/** `a.ts:3:7 error Type 'string' is not … [typescript 2322]` */
function diagnosticLine(x: LocatedDiagnostic): string {
  const origin = [x.source, x.code].filter((v) => v !== undefined && v !== '').join(' ');
  return `${x.path}:${x.line}:${x.col} ${x.severity} ${clip(x.message.split('\n')[0], 100)}${origin ? ` [${origin}]` : ''}`;
}

/** What an edit did to the diagnostics, for its chat line: `1 new error, 2 warnings fixed`; '' when nothing changed. */
export function diagnosticsWords(r: PostEditReport): string {
  const parts: string[] = [];
  const count = (list: LocatedDiagnostic[], sev: Severity) => list.filter((x) => x.severity === sev).length;
  for (const sev of ['error', 'warning'] as const) {
    const n = count(r.introduced, sev);
    if (n > 0) parts.push(`${n} new ${sev}${n === 1 ? '' : 's'}`);
  }
  for (const sev of ['error', 'warning'] as const) {
    const n = count(r.resolved, sev);
    if (n > 0) parts.push(`${plural(n, sev)} fixed`);
  }
  return parts.join(', ');
}

/** `2 errors, 1 warning in 3 files`, or `no diagnostics in 3 files`. */
function diagnosticsTotals(d: DiagnosticsData): string {
  const sum = (sev: Severity) => d.files.reduce((n, f) => n + (f.counts?.[sev] ?? 0), 0);
  const parts = (['error', 'warning', 'info', 'hint'] as const).map((sev) => [sev, sum(sev)] as const).filter(([, n]) => n > 0);
  const what = parts.length ? parts.map(([sev, n]) => (sev === 'info' ? `${n} info` : plural(n, sev))).join(', ') : 'no diagnostics';
  return `${what} in ${plural(d.files.length, 'file')}`;
}

/* ------------------------------------------------------------------------------------------------
 * Subagents
 * ---------------------------------------------------------------------------------------------- */

const SUBAGENT_ANSWER_LINES = 8;
const STEP_ICONS: Record<ToolStatus, string> = { ok: '✓', error: '✗', rejected: '⊘', cancelled: '⊘' };

/** The tool line's live summary while a subagent works: `[#2] step 3: edit_file src/a.ts`. */
export function describeSubagentProgress(p: SubagentProgress): string {
  const n = /#(\d+)/.exec(p.label)?.[1];
  return `${n ? `[#${n}] ` : ''}step ${p.step}: ${summarizeToolCall(p.tool, p.args)}`;
}

/** One line per tool call of a child's conversation: `step 1: ✓ read_file src/a.ts 120 lines`. */
function subagentSteps(messages: ChatMessage[]): string[] {
  const results = new Map<string, ToolResult>();
  for (const m of messages) {
    if (m.role === 'tool' && typeof m.tool_call_id === 'string') results.set(m.tool_call_id, parseResult(m.content));
  }
  const out: string[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.tool_calls)) continue;
    for (const c of m.tool_calls) {
      if (c.type !== 'function') continue;
      const args = parseArgs(c.function.arguments);
      const result = results.get(c.id);
      const call = summarizeToolCall(c.function.name, args);
      if (!result) {
        out.push(`step ${out.length + 1}: ◌ ${call} (no result)`);
        continue;
      }
      const view = describeToolResult(c.function.name, args, result);
      out.push(`step ${out.length + 1}: ${STEP_ICONS[view.status]} ${call}${view.summary ? ` ${view.summary}` : ''}`);
    }
  }
  return out;
}

function parseResult(content: unknown): ToolResult {
  try {
    const r = JSON.parse(String(content)) as ToolResult;
    if (r && typeof r === 'object' && typeof r.ok === 'boolean') return r;
  } catch {
    /* not a tool result */
  }
  return { ok: false, error: { kind: 'internal_error', message: 'unreadable result' } };
}

function parseArgs(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return {};
  }
}

/* ------------------------------------------------------------------------------------------------
 * Approval float
 * ---------------------------------------------------------------------------------------------- */

/** Shown first, in this order; the other arguments follow in the order the model sent them. */
const FIRST_KEYS = ['path', 'from', 'to', 'command', 'url', 'method', 'query', 'question', 'task'];

/** Files an apply_patch patch touches: envelope headers, or a unified diff's ---/+++ lines. */
function patchFiles(patch: string): string[] {
  const files: string[] = [];
  const lines = patch.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const env = /^\*\*\* (Add|Update|Delete) File: (.+)$/.exec(lines[i]);
    if (env) {
      const moved = /^\*\*\* Move to: (.+)$/.exec(lines[i + 1] ?? '');
      files.push(`${env[1].toLowerCase()} ${env[2].trim()}${moved ? ` → ${moved[1].trim()}` : ''}`);
      continue;
    }
    const from = /^--- (?:a\/)?(.+?)(?:\t.*)?$/.exec(lines[i]);
    const to = /^\+\+\+ (?:b\/)?(.+?)(?:\t.*)?$/.exec(lines[i + 1] ?? '');
    if (from && to) {
      const [a, b] = [from[1].trim(), to[1].trim()];
      files.push(a === '/dev/null' ? `add ${b}` : b === '/dev/null' ? `delete ${a}` : a === b ? `update ${a}` : `update ${a} → ${b}`);
      i++;
    }
  }
  return files;
}

/** One argument as one short line, or null to leave it out. */
function argumentLine(key: string, value: unknown, preview: ApprovalPreview | undefined): string | null {
  if (value === undefined || value === null) return null;
  // Hashes mean nothing to a reader; "" is the one value that says something.
  if (/sha256/i.test(key)) return key === 'expectedSha256' && value === '' ? 'creates the file (it must not exist yet)' : null;
  if (key === 'command' && preview?.kind === 'command') return null; // the preview shows it in full
  if (key === 'cwd' && preview?.kind === 'command') return `cwd: ${preview.cwd}`;
  if (key === 'edits' && Array.isArray(value)) {
    const all = value.filter((e) => e && typeof e === 'object' && (e as { replaceAll?: unknown }).replaceAll === true).length;
    return `${plural(value.length, 'edit')}${all > 0 ? ` (${all} replacing every occurrence)` : ''}`;
  }
  if (key === 'patch' && typeof value === 'string') {
    const files = patchFiles(value);
    return files.length > 0 ? `${plural(files.length, 'file')}: ${clip(files.join(', '), 200)}` : 'patch';
  }
  if (typeof value === 'string') {
    const lines = value.split('\n');
    if (key === 'content' || key === 'body') return `${key}: ${plural(value === '' ? 0 : lines.length - (value.endsWith('\n') ? 1 : 0), 'line')}, ${plural(Buffer.byteLength(value), 'byte')}`;
    return `${key}: ${clip(lines[0], 200)}${lines.length > 1 ? ` (+${plural(lines.length - 1, 'line')})` : ''}`;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return `${key}: ${String(value)}`;
  if (Array.isArray(value)) {
    const short = value.every((v) => typeof v === 'string' && !v.includes('\n'));
    return short && value.length > 0 ? `${key}: ${clip(value.join(', '), 200)}` : `${key}: ${plural(value.length, 'item')}`;
  }
  if (typeof value === 'object') {
    const keys = Object.keys(value);
    return keys.length > 0 ? `${key}: ${clip(keys.join(', '), 200)}` : null;
  }
  return null;
}

/**
 * What the approval float says about a call's arguments, a few readable lines (`path: src/a.ts`,
 * `2 edits`, `cwd: …`): no hashes, no raw structures. What the preview shows in full (a command) is left out.
 */
export function summarizeApprovalArgs(args: unknown, preview?: ApprovalPreview): string[] {
  if (preview?.kind === 'text' && preview.showsArguments) return [];
  const a = args && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
  const keys = [...FIRST_KEYS.filter((k) => k in a), ...Object.keys(a).filter((k) => !FIRST_KEYS.includes(k))];
  const lines = keys.map((k) => argumentLine(k, a[k], preview)).filter((l): l is string => l !== null);
  if (preview?.kind === 'command' && !('cwd' in a)) lines.push(`cwd: ${preview.cwd}`);
  return lines;
}
