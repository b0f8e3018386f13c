/**
 * Images and audio a tool returned (an MCP tool's content blocks), carried beside its data without being
 * serialized with it: the tool message stays text (capped, stored), and the agent passes the media to a
 * model that accepts them as a user message right after the step's tool results.
 */
export interface ToolMedia {
  type: 'image' | 'audio';
  mimeType: string;
  /** base64 */
  data: string;
}

const MEDIA = Symbol.for('caboose.toolMedia');

/** Attaches media to a tool's data object (not enumerable: JSON.stringify leaves it out). */
export function attachMedia<T extends object>(data: T, media: ToolMedia[]): T {
  if (media.length > 0) Object.defineProperty(data, MEDIA, { value: media, enumerable: false });
  return data;
}

export function mediaOf(data: unknown): ToolMedia[] {
  if (!data || typeof data !== 'object') return [];
  const m = (data as Record<symbol, unknown>)[MEDIA];
  return Array.isArray(m) ? (m as ToolMedia[]) : [];
}

/** OpenAI's input_audio takes wav and mp3 only. */
export function audioFormat(mimeType: string): 'wav' | 'mp3' | null {
  if (/wav/i.test(mimeType)) return 'wav';
  if (/mpeg|mp3/i.test(mimeType)) return 'mp3';
  return null;
}
