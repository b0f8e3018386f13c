/**
 * A chat as Markdown (:CabooseExport, the chat's /export): the messages as they were shown, attachments as
 * their labels, tool calls one line each with their status and summary (no arguments or output), code intact.
 */
import type { TranscriptItem } from './session-history';

const STATUS: Record<string, string> = { ok: '✓', error: '✗', rejected: '⊘', cancelled: '⊘', running: '…' };

/** Text as a Markdown quote (every line). */
const quote = (text: string) => text.split('\n').map((l) => (l === '' ? '>' : `> ${l}`)).join('\n');

export function exportMarkdown(title: string | null, items: readonly TranscriptItem[], when = new Date()): string {
  const out: string[] = [`# ${title && title.trim() !== '' ? title.trim() : 'caboose chat'}`, '', `_Exported ${when.toISOString()}_`];
  let inReply = false;
  for (const it of items) {
    switch (it.t) {
      case 'user':
        inReply = false;
        out.push('', '## You', '', it.text);
        for (const l of it.labels ?? []) out.push(`> 📎 ${l}`);
        break;
      case 'text':
        if (!inReply) out.push('', '## Caboose');
        inReply = true;
        out.push('', it.text + (it.interrupted ? '\n\n_[response interrupted]_' : ''));
        break;
      case 'thinking':
        break;
      case 'tool':
        if (!inReply) out.push('', '## Caboose');
        inReply = true;
        out.push('', `- ${STATUS[it.status] ?? '?'} ${it.text}${it.summary ? ` — ${it.summary}` : ''}`);
        break;
      case 'notice':
        out.push('', quote(it.text));
        break;
      case 'error':
        out.push('', quote(`**Error:** ${it.text}`));
        break;
      case 'rules':
        out.push('', quote(`Project rules: ${it.lines.join('; ')}`));
        break;
    }
  }
  return `${out.join('\n')}\n`;
}
