import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import { capText, truncationNotice } from '../workspace/output';
import type { ToolDefinition } from './tool';

/** What recall reads: the session's stored rows (see SessionRepository). */
export interface RecallSource {
  /** A stored message row: a tool output, or a summary standing for an archived segment. */
  get(id: number): { kind: string; role: string | null; message: unknown } | null;
  /** The messages a summary row replaced, in order. */
  archivedBy(id: number): { id: number; role: string | null; message: unknown }[];
}

export const RECALL_DEFAULT_LINES = 400;

export const recallParameters = z.object({
  id: z.number().int().positive().describe('The stored id named in a stub ("stored as #1234") or in a summary ("archived as #57").'),
  startLine: z.number().int().min(1).optional().describe('First line to return (1-based). Default 1.'),
  lineCount: z.number().int().min(1).max(2000).optional().describe(`How many lines to return. Default ${RECALL_DEFAULT_LINES}.`),
});

export interface RecallResult {
  id: number;
  kind: 'tool_output' | 'conversation';
  startLine: number;
  endLine: number;
  totalLines: number;
  text: string;
  /** Present when more lines follow: how to read them. */
  more?: string;
}

type Msg = { role?: string; content?: unknown; summary?: unknown; tool_calls?: { function: { name: string; arguments: string } }[] };

/** An archived segment as plain text the model can read. */
export function conversationText(messages: { id?: number; role: string | null; message: unknown }[]): string {
  const out: string[] = [];
  for (const { id, message } of messages) {
    const m = (message ?? {}) as Msg;
    const body = typeof m.content === 'string' ? m.content : '';
    // An earlier compaction's summary, archived by a later one: it still leads to its own segment.
    if (typeof m.summary === 'string') out.push(`[summary of an earlier part${id === undefined ? '' : `, archived as #${id}: call recall with id ${id} to read it`}]\n${m.summary}`);
    else if (m.role === 'tool') out.push(`[tool result]\n${body}`);
    else out.push(`[${m.role ?? 'note'}]\n${body}`);
    for (const c of m.tool_calls ?? []) out.push(`[tool call] ${c.function.name} ${c.function.arguments}`);
  }
  return out.join('\n\n');
}

/**
 * A stored tool result (JSON) as lines to page through: multi-line text fields (file contents, command
 * output) are written out as they are, under a header naming the field; everything else as compact JSON.
 */
export function readableToolOutput(content: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return content;
  }
  const r = parsed as { ok?: boolean; data?: unknown; error?: unknown };
  if (r?.ok !== true || !r.data || typeof r.data !== 'object' || Array.isArray(r.data)) return JSON.stringify(parsed, null, 1);
  const scalars: Record<string, unknown> = {};
  const texts: string[] = [];
  for (const [k, v] of Object.entries(r.data as Record<string, unknown>)) {
    if (typeof v === 'string' && v.includes('\n')) texts.push(`--- ${k} ---\n${v.replace(/\n$/, '')}`);
    else scalars[k] = v;
  }
  return [...(Object.keys(scalars).length > 0 ? [JSON.stringify(scalars)] : []), ...texts].join('\n');
}

export function createRecallTool(source: RecallSource): ToolDefinition<typeof recallParameters, RecallResult> {
  return {
    name: 'recall',
    description: [
      'Read back something moved out of your prompt to save context: an old tool output replaced by a stub',
      '("stored as #1234"), or the earlier conversation a summary stands for ("archived as #57").',
      `Returns ${RECALL_DEFAULT_LINES} lines at a time; pass startLine to continue.`,
    ].join(' '),
    parameters: recallParameters,
    policy: 'read',
    async execute(args) {
      const row = source.get(args.id);
      if (!row) throw new ToolError('not_found', `Nothing is stored as #${args.id} in this conversation.`, { suggestedAction: 'Use an id named in a stub or a summary.' });
      let kind: RecallResult['kind'];
      let text: string;
      if (row.kind === 'summary') {
        kind = 'conversation';
        text = conversationText(source.archivedBy(args.id));
      } else {
        kind = 'tool_output';
        const m = (row.message ?? {}) as Msg;
        text = readableToolOutput(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
      }
      const lines = text.split('\n');
      const start = Math.min(args.startLine ?? 1, Math.max(1, lines.length));
      const want = lines.slice(start - 1, start - 1 + (args.lineCount ?? RECALL_DEFAULT_LINES)).join('\n');
      const capped = capText(want);
      const shown = capped.truncated ? capped.keptLines : want.split('\n').length;
      const end = start + shown - 1;
      const result: RecallResult = { id: args.id, kind, startLine: start, endLine: end, totalLines: lines.length, text: capped.text };
      if (capped.truncated) result.more = truncationNotice(capped, `call recall with id ${args.id} and startLine ${end + 1}`);
      else if (end < lines.length) result.more = `${lines.length - end} more lines: call recall with id ${args.id} and startLine ${end + 1}`;
      return result;
    },
  };
}
