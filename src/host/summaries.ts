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

export function summarizeToolResult(result: ToolResult): string {
  if (!result.ok) return `${result.error.kind}: ${clip(result.error.message, 160)}`;
  const d = result.data as Record<string, unknown> | null;
  if (d && typeof d === 'object') {
    if (typeof d.exitCode === 'number') return `exit ${d.exitCode}`;
    if (typeof d.totalLines === 'number') return `${d.totalLines} lines`;
    if (Array.isArray(d.matches)) return `${d.matches.length} matches`;
    if (typeof d.sha256 === 'string') return `ok (${String(d.sha256).slice(0, 8)})`;
  }
  return 'ok';
}
