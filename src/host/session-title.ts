import type { ModelClient } from '../agent/provider';

/** Marks the title request (the test server answers it without a script). */
export const TITLE_INSTRUCTION =
  'Name this coding conversation in 3 to 6 words, like a commit subject: no quotes, no final period, no "Conversation about". Answer with the title only.';

/**
 * The model's answer made into a title: one line, no quotes or markup, 3 to 6 words (longer answers are
 * cut); null if unusable (the first words of the message then stay the title).
 */
export function cleanTitle(raw: string): string | null {
  const line = raw
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  if (!line) return null;
  const t = line
    .replace(/^(title|subject)\s*:\s*/i, '')
    // Curly quotes as escapes: the bundle stays ASCII (scripts/bundle-host.mjs).
    .replace(/^[#*_`"'\u201C\u201D\u2018\u2019\s]+|[#*_`"'\u201C\u201D\u2018\u2019.\s]+$/g, '')
    .replace(/\s+/g, ' ');
  const words = t.split(' ').filter(Boolean);
  if (words.length < 3 || t.length > 80) return null;
  return words.slice(0, 6).join(' ');
}

/** One cheap request (no tools, a few tokens): a title for the conversation that starts with `firstMessage`. */
export async function requestTitle(client: ModelClient, firstMessage: string, reply: string, signal: AbortSignal): Promise<string | null> {
  const excerpt = `User: ${firstMessage.slice(0, 1500)}\n\nAssistant: ${reply.slice(0, 500)}`;
  let text = '';
  for await (const ev of client.stream({
    messages: [
      { role: 'system', content: TITLE_INSTRUCTION },
      { role: 'user', content: excerpt },
    ],
    signal,
    maxTokens: 24,
  })) {
    if (ev.type === 'done') text = ev.text;
  }
  return cleanTitle(text);
}
