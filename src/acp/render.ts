/**
 * What the chat shows of an ACP agent's `session/update`s: pure functions from the protocol's tool calls,
 * plans and content blocks to our tool lines (a status, a few words, foldable details) and todo items.
 */
import type * as acp from '@agentclientprotocol/sdk';

export type ToolLineStatus = 'ok' | 'error' | 'rejected' | 'cancelled';

/** A tool call as the agent described it so far (tool_call, then tool_call_updates merged in). */
export interface AcpToolCallState {
  id: string;
  title: string;
  kind: acp.ToolKind;
  status: acp.ToolCallStatus;
  content: acp.ToolCallContent[];
  locations: acp.ToolCallLocation[];
  rawInput?: unknown;
  rawOutput?: unknown;
}

const MAX_DETAIL_LINES = 40;

export function newToolCall(c: acp.ToolCall): AcpToolCallState {
  return {
    id: c.toolCallId,
    title: c.title || c.kind || 'tool',
    kind: c.kind ?? 'other',
    status: c.status ?? 'pending',
    content: c.content ?? [],
    locations: c.locations ?? [],
    rawInput: c.rawInput,
    rawOutput: c.rawOutput,
  };
}

/** A tool_call_update merged into what is known (fields it leaves out keep their value). */
export function mergeToolCall(prev: AcpToolCallState | undefined, u: acp.ToolCallUpdate): AcpToolCallState {
  const base: AcpToolCallState = prev ?? { id: u.toolCallId, title: 'tool', kind: 'other', status: 'pending', content: [], locations: [] };
  return {
    ...base,
    ...(u.title ? { title: u.title } : {}),
    ...(u.kind ? { kind: u.kind } : {}),
    ...(u.status ? { status: u.status } : {}),
    ...(u.content ? { content: u.content } : {}),
    ...(u.locations ? { locations: u.locations } : {}),
    ...(u.rawInput !== undefined ? { rawInput: u.rawInput } : {}),
    ...(u.rawOutput !== undefined ? { rawOutput: u.rawOutput } : {}),
  };
}

export function isFinished(c: AcpToolCallState): boolean {
  return c.status === 'completed' || c.status === 'failed';
}

/** The text of a content block (images and audio by their kind, links by their name). */
export function blockText(b: acp.ContentBlock): string {
  switch (b.type) {
    case 'text':
      return b.text;
    case 'resource_link':
      return `[${b.name}](${b.uri})`;
    case 'resource':
      return 'text' in b.resource ? b.resource.text : `[${b.resource.uri}]`;
    case 'image':
      return '[image]';
    case 'audio':
      return '[audio]';
    default:
      return '';
  }
}

/** The foldable lines under a finished tool call: its text output, diffs by path, terminal output. */
export function toolDetails(c: AcpToolCallState, terminalOutput: (id: string) => string | undefined): string[] {
  const out: string[] = [];
  for (const loc of c.locations) if (out.length < 3) out.push(`at ${loc.path}${loc.line ? `:${loc.line}` : ''}`);
  for (const item of c.content) {
    if (item.type === 'content') out.push(...blockText(item.content).split('\n'));
    else if (item.type === 'diff') {
      const oldN = item.oldText ? item.oldText.split('\n').length : 0;
      out.push(`diff ${item.path} (${oldN} → ${item.newText.split('\n').length} lines)`);
    } else if (item.type === 'terminal') {
      const t = terminalOutput(item.terminalId);
      if (t) out.push(...t.replace(/\n$/, '').split('\n'));
    }
  }
  if (out.length > MAX_DETAIL_LINES) return [...out.slice(0, MAX_DETAIL_LINES), `… ${out.length - MAX_DETAIL_LINES} more lines`];
  return out;
}

export function toolStatus(c: AcpToolCallState, cancelled: boolean): ToolLineStatus {
  if (c.status === 'completed') return 'ok';
  return cancelled ? 'cancelled' : 'error';
}

/** A plan as our todo list: the agent's entries with their status (priority is not shown). */
export function planTodos(p: acp.Plan): { id: string; content: string; status: 'pending' | 'in_progress' | 'completed' }[] {
  return p.entries.map((e, i) => ({ id: String(i + 1), content: e.content, status: e.status }));
}

/** Which of our tool policies an ACP tool kind corresponds to (for modes and standing grants). */
export function kindPolicy(kind: acp.ToolKind | null | undefined): 'read' | 'edit' | 'exec' {
  switch (kind) {
    case 'read':
    case 'search':
    case 'think':
      return 'read';
    case 'edit':
    case 'delete':
    case 'move':
      return 'edit';
    default:
      return 'exec';
  }
}

/** POSIX shell quoting for a terminal's command and arguments. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
