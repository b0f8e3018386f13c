/**
 * Context the user attaches to a message from the editor (`#buffer`, `@path`, a visual range): the text
 * the model receives with it, and the one-line labels the chat shows under the message.
 */
import type { FetchResult } from '../tools/fetch';
import type { ToolResult } from '../tools/tool';
import { plural } from './summaries';

export interface ContextItem {
  /** `attachment`: text the editor gathered (diagnostics, a git diff, the quickfix list, …). */
  /** `image`: a PNG/JPEG file sent as an image part (src/host/image-attachments.ts). */
  kind: 'buffer' | 'selection' | 'file' | 'attachment' | 'fetch' | 'image';
  /** What the label names (`#buffers`, `#diagnostics`, `/file`); the kind's own tag without it. */
  name?: string;
  /** Path as the user sees it (relative to the workspace when inside it); '' for an unnamed buffer. */
  path: string;
  /**
   * The file's full name (buffers, selections, a buffer's diagnostics): what is read and judged. `path` is
   * relative to Neovim's working directory, which may no longer be the workspace's root.
   */
  abs?: string;
  filetype?: string;
  /** `fetch`: the URL (the fetch tool reads it, with its approval and rules). */
  url?: string;
  /** The text Lua read from the buffer (buffer, selection); files are read by the host. */
  text?: string;
  startLine?: number;
  endLine?: number;
  /** The buffer has unsaved changes. */
  modified?: boolean;
}

/** read_file through the workspace (buffer-aware, path-checked). */
export type ReadFile = (path: string) => Promise<ToolResult>;
/** The fetch tool run for the user (mode, approval, fetch rules); absent where no agent of ours runs. */
export type FetchUrl = (url: string) => Promise<ToolResult>;

/**
 * What the workspace says of an attached path (tools/secret-targets.ts attachVerdict): `secret`
 * (secret_globs: `read` asks the user before it goes), `ok`, or why it is refused (outside the workspace,
 * deny_globs, .git). A boolean is the older form (true: secret).
 */
export type PathPolicy = (path: string) => 'ok' | 'secret' | { refused: string; message: string } | boolean;

export interface ComposedMessage {
  /** What the model receives. */
  text: string;
  /** What the chat shows under the message, one line per item. */
  labels: string[];
}

const FENCE = '```';

/** A fence longer than any run of backticks in `text`, so the block cannot end early. */
function fenceFor(text: string): string {
  const runs = text.match(/`{3,}/g) ?? [];
  const longest = runs.reduce((n, r) => Math.max(n, r.length), 0);
  return longest >= 3 ? '`'.repeat(longest + 1) : FENCE;
}

function block(header: string, filetype: string | undefined, text: string): string {
  const fence = fenceFor(text);
  const body = text.endsWith('\n') ? text : `${text}\n`;
  return `${header}\n${fence}${filetype ?? ''}\n${body}${fence}`;
}

const lines = (n: number) => plural(n, 'line');
const lineCount = (text: string) => (text === '' ? 0 : text.replace(/\n$/, '').split('\n').length);

/** Longest text from the editor (an attachment, a selection, a buffer outside the workspace) sent as is. */
export const MAX_ATTACHMENT_CHARS = 100_000;

/** `text` cut at MAX_ATTACHMENT_CHARS, with a notice the model reads (never cut silently). */
function capped(text: string): { text: string; cut: boolean } {
  if (text.length <= MAX_ATTACHMENT_CHARS) return { text, cut: false };
  const kept = text.slice(0, MAX_ATTACHMENT_CHARS);
  return { text: `${kept}\n[cut: the first ${MAX_ATTACHMENT_CHARS} of ${text.length} characters are shown; the rest was not sent]`, cut: true };
}
const cutNote = (cut: boolean) => (cut ? `, cut at ${MAX_ATTACHMENT_CHARS} characters` : '');

/**
 * Read errors after which a buffer's own text (sent by Lua) is attached instead: a workspace file not on
 * disk yet, too big or binary. Never outside_workspace: a buffer outside the workspace is not sent.
 */
const TEXT_FALLBACK = new Set<string>(['not_found', 'file_too_large', 'binary_file']);

/** A refusal's reason as the chat label says it. */
const refusedWhy = (kind: string) => (kind === 'outside_workspace' ? 'outside the workspace' : kind);

/**
 * Text an editor item carries from the file at `path` (a selection, a buffer's diagnostics): refused with
 * the file (outside the workspace, deny_globs), or after the read the user is asked for (secret_globs).
 * Returns why it is not attached, or null.
 */
async function gate(path: string, read: ReadFile, policy: PathPolicy | undefined): Promise<{ why: string; said: string } | null> {
  if (path === '' || !policy) return null;
  const v = policy(path);
  if (typeof v === 'object') return { why: refusedWhy(v.refused), said: `it was not sent: ${refusedWhy(v.refused)}` };
  if (v === true || v === 'secret') {
    const r = await read(path);
    if (!r.ok) return { why: r.error.kind, said: `it could not be read: ${r.error.kind}: ${r.error.message}` };
  }
  return null;
}

/** A path the policy lets through as is (not secret, not refused); '' (no file) passes. */
function plain(policy: PathPolicy, cache: Map<string, boolean>, p: string): boolean {
  if (p === '' || p === '[No Name]' || p === '/dev/null') return true;
  let ok = cache.get(p);
  if (ok === undefined) {
    const v = policy(p);
    ok = v === 'ok' || v === false;
    cache.set(p, ok);
  }
  return ok;
}

/** `"a/x\ty"` (git's quoting of unusual names) → `a/x\ty` (escapes kept: good enough to judge the name). */
const unquote = (p: string) => (p.startsWith('"') && p.endsWith('"') ? p.slice(1, -1) : p);

/** The paths a `git diff` file section's header names (before its first hunk). */
function diffPaths(section: string): string[] {
  const out: string[] = [];
  for (const line of section.split('\n')) {
    if (line.startsWith('@@')) break;
    let m: RegExpExecArray | null;
    if ((m = /^(?:---|\+\+\+) (?:[ab]\/)?(.+)$/.exec(line))) out.push(unquote(m[1]));
    else if ((m = /^(?:rename|copy) (?:from|to) (.+)$/.exec(line))) out.push(unquote(m[1]));
    else if ((m = /^diff --git (.+)$/.exec(line))) {
      const rest = m[1];
      // `a/P b/P` (the same path twice, as every header but a rename's has it).
      const len = (rest.length - 5) / 2;
      if (Number.isInteger(len) && rest.startsWith('a/') && rest.slice(2 + len) === ` b/${rest.slice(2, 2 + len)}`) out.push(rest.slice(2, 2 + len));
      else out.push(...rest.split(' ').map((x) => unquote(x).replace(/^[ab]\//, '')));
    }
  }
  return out;
}

/**
 * A text over many files without the parts of files the policy does not let through: a diff's file sections
 * (filetype diff), else the lines `path:line:col: …` (quickfix, diagnostics). Returns what is kept and the
 * files left out.
 */
function leaveOut(item: ContextItem, policy: PathPolicy): { text: string; left: string[] } {
  const text = item.text ?? '';
  const cache = new Map<string, boolean>();
  const left = new Set<string>();
  if (item.filetype === 'diff') {
    const sections = text.split(/^(?=diff --git )/m);
    const kept = sections.filter((sec) => {
      if (!sec.startsWith('diff --git ')) return true;
      const bad = diffPaths(sec).filter((p) => !plain(policy, cache, p));
      for (const p of bad) left.add(p);
      return bad.length === 0;
    });
    return { text: kept.join(''), left: [...left] };
  }
  const kept = text.split('\n').filter((line) => {
    const m = /^(.+?):\d+:\d+: /.exec(line);
    if (!m || plain(policy, cache, m[1])) return true;
    left.add(m[1]);
    return false;
  });
  return { text: kept.join('\n'), left: [...left] };
}

/** One attached item; `file` is the workspace path it was read from (the same file is attached once). */
async function one(item: ContextItem, read: ReadFile, fetchUrl?: FetchUrl, policy?: PathPolicy): Promise<{ text: string; label: string; file?: string }> {
  const name = item.path || '[No Name]';
  if (item.kind === 'fetch') {
    const url = item.url ?? '';
    const what = item.name ?? '/fetch';
    if (!fetchUrl) return { text: `(The user asked to attach ${url}, but this chat's agent cannot fetch it.)`, label: `${what} ${url} — not attached: this agent cannot fetch` };
    const r = await fetchUrl(url);
    if (!r.ok) return { text: `(The user asked to attach ${url}; the fetch failed: ${r.error.kind}: ${r.error.message})`, label: `${what} ${url} — not attached: ${r.error.kind}` };
    const d = r.data as FetchResult;
    const full = d.content;
    const { text, cut } = capped(full);
    const notes = [`HTTP ${d.status}`, d.contentType, d.truncated ? 'cut by the fetch tool' : undefined].filter(Boolean);
    return {
      text: block(`Fetched ${d.url} (${notes.join(', ')}${cutNote(cut)}):`, undefined, text),
      label: `${what} ${url} (${lines(lineCount(full))}${cutNote(cut)})`,
    };
  }
  if (item.kind === 'image') {
    // Images are read where the agent can send them (image-attachments.ts); one that reaches here cannot go.
    return { text: `(The user attached the image ${item.path}, but this chat cannot send images.)`, label: `${item.name ?? 'image'} ${item.path} — not attached: this agent takes no images` };
  }
  if (item.kind === 'attachment') {
    const what = item.name ?? 'attachment';
    const where = item.path ? ` ${item.path}` : '';
    // Text about one file (its diagnostics): that file's rules.
    const refused = await gate(item.path === '' ? '' : (item.abs ?? item.path), read, policy);
    if (refused !== null) return { text: `(The user attached ${what} of ${item.path}, but ${refused.said})`, label: `${what}${where} — not attached: ${refused.why}` };
    // A list over many files (a git diff, the quickfix list, every buffer's diagnostics): the parts of files
    // that are secret (secret_globs), outside the workspace or denied are left out, and it says so.
    const kept = item.path === '' && policy ? leaveOut(item, policy) : { text: item.text ?? '', left: [] };
    const full = kept.text;
    const { text, cut } = capped(full);
    const n = lineCount(full);
    const leftNote = kept.left.length > 0 ? `; left out: ${kept.left.join(', ')} (secret_globs, deny_globs or outside the workspace)` : '';
    return {
      text: block(`${what}${where} (${lines(n)}${item.filetype ? `, ${item.filetype}` : ''}${cutNote(cut)}${leftNote}):`, item.filetype, text),
      label: `${what}${where} (${lines(n)}${cutNote(cut)}${kept.left.length > 0 ? `; left out: ${kept.left.join(', ')}` : ''})`,
    };
  }
  if (item.kind === 'selection') {
    // A selection from a file that usually holds secrets goes only after the read the user is asked for;
    // one from a file outside the workspace (or denied) not at all.
    const refused = await gate(item.path === '' ? '' : (item.abs ?? item.path), read, policy);
    if (refused !== null) {
      const tag = item.name ?? 'selection';
      return { text: `(The user attached ${tag} from ${name}, but ${refused.said})`, label: `${tag} ${name} — not attached: ${refused.why}` };
    }
    const { text, cut } = capped(item.text ?? '');
    const range = `lines ${item.startLine ?? '?'}-${item.endLine ?? '?'}`;
    return {
      text: block(`Selection from ${name} (${range}${item.filetype ? `, ${item.filetype}` : ''}${cutNote(cut)}):`, item.filetype, text),
      label: `${item.name ? `${item.name} ` : 'selection '}${name}:${item.startLine ?? '?'}-${item.endLine ?? '?'}${cutNote(cut)}`,
    };
  }
  const tag = item.name ?? (item.kind === 'buffer' ? '#buffer' : `@${item.path}`);
  // A file in the workspace is read like the agent reads it: the live buffer when it has unsaved changes, with
  // the sha256 the edit tools ask for, so the model can edit without reading it again.
  if (item.path !== '') {
    const r = await read(item.abs ?? item.path);
    if (r.ok) {
      const d = r.data as { path: string; content: string; sha256: string; totalLines: number; truncated: boolean; notice?: string; unsavedBuffer?: boolean };
      const notes = [lines(d.totalLines), item.filetype, d.unsavedBuffer ? 'unsaved changes in the buffer' : undefined, `sha256 ${d.sha256}`].filter(Boolean);
      const body = d.truncated && d.notice ? `${d.content}\n${d.notice}` : d.content;
      return {
        text: block(`File ${d.path} (${notes.join(', ')}):`, item.filetype, body),
        label: `${tag} ${d.path} (${lines(d.totalLines)}${d.unsavedBuffer ? ', unsaved' : ''})`,
        file: d.path,
      };
    }
    // The text Lua sent stands in only for a workspace file the workspace cannot give (not on disk, too big
    // or binary): one outside the workspace, one the user refused (a secret file), or deny_globs, is not
    // attached at all.
    if (r.error.kind === 'outside_workspace') {
      return {
        text: `(The user attached ${tag} ${name}, but it was not sent: it is outside the workspace.)`,
        label: `${tag} ${name} — not attached: outside the workspace`,
      };
    }
    if (item.kind === 'file' || item.text === undefined || !TEXT_FALLBACK.has(r.error.kind)) {
      return {
        text: `(The user attached ${tag}, but it could not be read: ${r.error.kind}: ${r.error.message})`,
        label: `${tag} — not attached: ${r.error.kind}`,
      };
    }
  }
  // Unnamed buffers, and workspace files the workspace cannot give (see TEXT_FALLBACK): the text Lua sent.
  const full = item.text ?? '';
  const { text, cut } = capped(full);
  const n = lineCount(full);
  return {
    text: block(`Buffer ${name} (${lines(n)}${item.filetype ? `, ${item.filetype}` : ''}${item.modified ? ', unsaved' : ''}; not a workspace file${cutNote(cut)}):`, item.filetype, text),
    label: `${tag} ${name} (${lines(n)}${item.modified ? ', unsaved' : ''}${cutNote(cut)})`,
  };
}

/** The message text followed by each attached item, in order; a file named twice (`#buffer` and `@path`) once. */
export async function composeMessage(text: string, items: ContextItem[], read: ReadFile, fetchUrl?: FetchUrl, policy?: PathPolicy): Promise<ComposedMessage> {
  if (items.length === 0) return { text, labels: [] };
  const seen = new Set<string>();
  const parts = (await Promise.all(items.map((i) => one(i, read, fetchUrl, policy)))).filter((p) => {
    if (p.file === undefined) return true;
    if (seen.has(p.file)) return false;
    seen.add(p.file);
    return true;
  });
  return {
    text: [text, ...parts.map((p) => p.text)].join('\n\n'),
    labels: parts.map((p) => p.label),
  };
}
