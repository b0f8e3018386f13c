/**
 * A chat as Markdown (:CabooseExport, the chat's /export): the messages as they were shown, attachments as
 * their labels, tool calls one line each with their status and summary (no arguments or output), code intact.
 */
import type { TranscriptItem } from './session-history';

const STATUS: Record<string, string> = { ok: '✓', error: '✗', rejected: '⊘', cancelled: '⊘', running: '…' };

/** Text as a Markdown quote (every line). */
const quote = (text: string) => text.split('\n').map((l) => (l === '' ? '>' : `> ${l}`)).join('\n');

/** The fence (``` or ~~~, as long as it was) of a code block `text` leaves open, or null. */
export function openFence(text: string): string | null {
  let open: string | null = null;
  for (const line of text.split('\n')) {
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (f === undefined) continue;
    if (open === null) open = f;
    else if (f[0] === open[0] && f.length >= open.length && /^\s*[`~]+\s*$/.test(line)) open = null;
  }
  return open;
}

/** A reply's text with the code block it leaves open (a cut-off reply) closed: the rest of the file stays prose. */
const closed = (text: string) => {
  const fence = openFence(text);
  return fence === null ? text : `${text}${text.endsWith('\n') ? '' : '\n'}${fence}`;
};

/** A tool line's summary after its text: ` — 3 lines`, but `→ exit 0` already has its arrow (no `— →`). */
const summary = (text: string | undefined) => (!text ? '' : /^[\u2192\u2014]/.test(text) ? ` ${text}` : ` — ${text}`);

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
        out.push('', closed(it.text) + (it.interrupted ? '\n\n_[response interrupted]_' : ''));
        break;
      case 'thinking':
        break;
      case 'tool':
        if (!inReply) out.push('', '## Caboose');
        inReply = true;
        out.push('', `- ${STATUS[it.status] ?? '?'} ${it.text}${summary(it.summary)}`);
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
