/**
 * An MCP tool's result as the model reads it: its content as text (images, audio and binary resources as
 * placeholders), within the output cap of every tool. Pure.
 */
import { capText, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, truncationNotice } from '../tools/output';
import { attachMedia, type ToolMedia } from '../tools/media';

/** Images and audio passed on to a model that accepts them: at most this many per result, each this big. */
const MAX_MEDIA_ITEMS = 4;
const MAX_MEDIA_BASE64 = 4 * 1024 * 1024;

/** Below the cap of the whole result: JSON escaping (a `\n` per line) must not push the notice out. */
const TEXT_BUDGET_BYTES = MAX_OUTPUT_BYTES - 6 * 1024;

/** The parts of a `tools/call` result we read (the SDK has validated its shape). */
export interface McpCallResult {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}

/** What the model gets from a successful call. */
export interface McpToolOutput {
  server: string;
  tool: string;
  output: string;
  truncated?: boolean;
  structuredContent?: unknown;
}

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Decoded size of base64 data. */
function base64Bytes(data: string): number {
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

/** One content block as text. */
export function contentBlockText(block: unknown): string {
  const b = rec(block);
  switch (b.type) {
    case 'text':
      return str(b.text) ?? '';
    case 'image':
    case 'audio': {
      const data = str(b.data) ?? '';
      return `[${b.type}: ${str(b.mimeType) ?? 'unknown type'}, ${base64Bytes(data)} bytes, not shown]`;
    }
    case 'resource': {
      const r = rec(b.resource);
      const uri = str(r.uri) ?? '?';
      const text = str(r.text);
      if (text !== undefined) return `[resource ${uri}${r.mimeType ? ` (${String(r.mimeType)})` : ''}]\n${text}`;
      return `[resource ${uri}: ${str(r.mimeType) ?? 'binary'}, ${base64Bytes(str(r.blob) ?? '')} bytes, not shown]`;
    }
    case 'resource_link':
      return `[resource link ${str(b.uri) ?? '?'}${b.name ? ` (${String(b.name)})` : ''}${b.description ? `: ${String(b.description)}` : ''}]`;
    default:
      return `[${typeof b.type === 'string' ? b.type : 'unknown'} content, not shown]`;
  }
}

/** The whole content as one text: blocks joined by newlines; structured content when there is no content. */
export function resultText(result: McpCallResult): string {
  const blocks = Array.isArray(result.content) ? result.content : [];
  if (blocks.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent, null, 2);
  return blocks.map(contentBlockText).join('\n');
}

const CAP_HOW = "the MCP tool's output exceeded the 50 KB / 2,000-line cap for tool output; ask it for less";

/** The text within the cap every tool obeys, with a notice when cut. */
export function cappedResultText(result: McpCallResult): { text: string; truncated: boolean } {
  const c = capText(resultText(result), MAX_OUTPUT_LINES, TEXT_BUDGET_BYTES);
  return c.truncated ? { text: `${c.text}\n${truncationNotice(c, CAP_HOW)}`, truncated: true } : { text: c.text, truncated: false };
}

/**
 * A successful call's data. Structured content is kept when it is small and the text does not already say
 * the same (servers often send both).
 */
export function toToolOutput(server: string, tool: string, result: McpCallResult): McpToolOutput {
  const { text, truncated } = cappedResultText(result);
  const out: McpToolOutput = { server, tool, output: text };
  if (truncated) out.truncated = true;
  const media: ToolMedia[] = [];
  for (const block of Array.isArray(result.content) ? result.content : []) {
    const b = rec(block);
    if ((b.type === 'image' || b.type === 'audio') && typeof b.data === 'string' && typeof b.mimeType === 'string' && b.data.length <= MAX_MEDIA_BASE64 && media.length < MAX_MEDIA_ITEMS) {
      media.push({ type: b.type, mimeType: b.mimeType, data: b.data });
    }
  }
  attachMedia(out, media);
  const hasBlocks = Array.isArray(result.content) && result.content.length > 0;
  if (result.structuredContent !== undefined && hasBlocks) {
    const json = JSON.stringify(result.structuredContent);
    if (json.length <= 8 * 1024 && !text.includes(json)) out.structuredContent = result.structuredContent;
  }
  return out;
}
