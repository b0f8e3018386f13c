/**
 * A visual-selection edit request (:'<,'>CabooseEdit): one focused model request whose answer is the
 * replacement for the selected lines, given through the `replace_selection` tool (a fenced code block or
 * plain text is accepted too). Nothing is written here: the editor shows the answer for review.
 */
import { z } from 'zod';
import type { ChatMessage, ModelClient } from './provider';

export const replaceSelectionParameters = z.object({
  replacement: z.string().describe('The complete new text for the selected lines (every selected line, edited; no line numbers, no fences).'),
});

export interface SelectionEditRequest {
  instruction: string;
  /** Workspace-relative path, or null for a buffer without a file. */
  path: string | null;
  filetype: string;
  startLine: number;
  endLine: number;
  text: string;
  before: string;
  after: string;
}

const SYSTEM = [
  'You edit a selection of lines in a file open in the user\'s editor, following the instruction.',
  'Answer by calling replace_selection once with the complete replacement for the selected lines:',
  'keep the indentation style, change only what the instruction asks, and do not repeat the surrounding context.',
].join(' ');

export function selectionEditMessages(r: SelectionEditRequest): ChatMessage[] {
  const where = r.path ? `${r.path}, lines ${r.startLine}-${r.endLine}` : `an unnamed buffer, lines ${r.startLine}-${r.endLine}`;
  const fence = '````';
  const user = [
    `Instruction: ${r.instruction}`,
    '',
    `Selection (${where}${r.filetype ? `, filetype ${r.filetype}` : ''}):`,
    `${fence}${r.filetype}`,
    r.text,
    fence,
    ...(r.before ? ['', 'Lines just above it (context, do not repeat):', fence, r.before, fence] : []),
    ...(r.after ? ['', 'Lines just below it (context, do not repeat):', fence, r.after, fence] : []),
  ].join('\n');
  return [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: user },
  ];
}

/** The replacement text from the model's answer: the tool call, else the first fenced block, else the text. */
export function replacementFrom(text: string, toolCalls: { name: string; arguments: string }[]): string | null {
  const call = toolCalls.find((c) => c.name === 'replace_selection');
  if (call) {
    let raw: unknown;
    try {
      raw = JSON.parse(call.arguments || '{}');
    } catch {
      return null;
    }
    const parsed = replaceSelectionParameters.safeParse(raw);
    return parsed.success ? parsed.data.replacement : null;
  }
  const fenced = /```+[^\n]*\n([\s\S]*?)\n?```+/.exec(text);
  if (fenced) return fenced[1];
  return text.trim() === '' ? null : text;
}

export async function requestSelectionEdit(model: ModelClient, r: SelectionEditRequest, signal: AbortSignal): Promise<string> {
  const tool = {
    name: 'replace_selection',
    description: 'Give the replacement for the selected lines.',
    parameters: z.toJSONSchema(replaceSelectionParameters, { target: 'draft-7', io: 'input' }) as Record<string, unknown>,
  };
  for await (const ev of model.stream({ messages: selectionEditMessages(r), tools: [tool], signal })) {
    if (ev.type !== 'done') continue;
    const replacement = replacementFrom(ev.text, ev.toolCalls);
    if (replacement === null) throw new Error('the model gave no replacement for the selection');
    // Lines in, lines out: a trailing line break would add an empty line.
    return replacement.replace(/\r\n/g, '\n').replace(/\n$/, '');
  }
  throw new Error('the model stream ended without an answer');
}
