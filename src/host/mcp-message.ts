/**
 * MCP in a user's message: `/server:prompt [name=value …]` at its start runs the server's prompt (missing
 * arguments are asked for) and sends what it returns; `#mcp:server:uri` attaches a resource's text (and
 * subscribes to its updates where the server offers it).
 */
import type { McpPool } from '../mcp/client-pool';
import { contentBlockText } from '../mcp/results';

const PROMPT_RE = /^\/([A-Za-z0-9][A-Za-z0-9_-]*):(\S+)(?:\s+([\s\S]*))?$/;
const RESOURCE_RE = /#mcp:([A-Za-z0-9][A-Za-z0-9_-]*):(\S+)/g;
/** Longest resource text attached to a message. */
const MAX_RESOURCE_CHARS = 50 * 1024;

/** `a=1 b="two words"` → { a: '1', b: 'two words' }; the rest (no `=`) is the text after the arguments. */
export function parsePromptArgs(s: string): { args: Record<string, string>; rest: string } {
  const args: Record<string, string> = {};
  const rest: string[] = [];
  const re = /(\w[\w-]*)=(?:"([^"]*)"|'([^']*)'|(\S*))|(\S+)/g;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    if (m[1]) args[m[1]] = m[2] ?? m[3] ?? m[4] ?? '';
    else if (m[5]) rest.push(m[5]);
  }
  return { args, rest: rest.join(' ') };
}

export function isPromptCommand(text: string): boolean {
  return PROMPT_RE.test(text.trim());
}

export async function expandMcpMessage(
  text: string,
  pool: McpPool,
  ask: (req: { question: string; choices?: string[] }) => Promise<string | null>,
  signal: AbortSignal,
): Promise<{ text: string; labels: string[] }> {
  let out = text;
  const labels: string[] = [];
  const pm = PROMPT_RE.exec(text.trim());
  if (pm) {
    const [, server, name, tail] = pm;
    const { conn, timeoutMs } = pool.connection(server);
    const prompts = await conn.listPrompts(timeoutMs);
    const p = prompts.find((x) => x.name === name);
    if (!p) throw new Error(`MCP server '${server}' has no prompt '${name}'${prompts.length ? ` (it has: ${prompts.map((x) => x.name).join(', ')})` : ''}`);
    const { args, rest } = parsePromptArgs(tail ?? '');
    for (const a of p.arguments ?? []) {
      if (args[a.name] !== undefined) continue;
      const answer = await ask({ question: `/${server}:${name}: ${a.name}${a.description ? ` — ${a.description}` : ''}${a.required ? ' (required)' : ' (empty: skip)'}` });
      if (answer === null) throw new Error(`/${server}:${name} was cancelled`);
      if (answer.trim() === '' && a.required) throw new Error(`/${server}:${name} needs ${a.name}`);
      if (answer.trim() !== '') args[a.name] = answer.trim();
    }
    const r = await conn.getPrompt(name, args, { signal, timeoutMs });
    out = r.messages.map((m) => contentBlockText(m.content)).join('\n\n') + (rest ? `\n\n${rest}` : '');
    labels.push(`/${server}:${name}`);
  }
  const seen = new Set<string>();
  const attached: string[] = [];
  for (const m of text.matchAll(RESOURCE_RE)) {
    const [, server, uri] = m;
    const key = `${server}:${uri}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const { conn, timeoutMs } = pool.connection(server);
    const r = await conn.readResource(uri, { signal, timeoutMs });
    let body = r.contents.map((c) => contentBlockText({ type: 'resource', resource: c })).join('\n');
    if (body.length > MAX_RESOURCE_CHARS) body = `${body.slice(0, MAX_RESOURCE_CHARS)}\n… [cut at ${MAX_RESOURCE_CHARS} characters]`;
    attached.push(`<mcp-resource server="${server}" uri="${uri}">\n${body}\n</mcp-resource>`);
    labels.push(`mcp:${server}:${uri}`);
    pool.watchResource(server, uri);
  }
  if (attached.length > 0) out = `${out}\n\nAttached MCP resources:\n${attached.join('\n')}`;
  return { text: out, labels };
}

/** Completion items for the message area: `#mcp:server:uri` resources and `/server:prompt` prompts. */
export async function mcpCompletionItems(pool: McpPool): Promise<{ word: string; kind: 'resource' | 'prompt'; menu: string; info: string }[]> {
  await pool.ensureStarted({ restartDied: false });
  const [resources, prompts] = await Promise.all([pool.resources(), pool.prompts()]);
  const items: { word: string; kind: 'resource' | 'prompt'; menu: string; info: string }[] = [];
  for (const s of resources) for (const r of s.resources) items.push({ word: `#mcp:${s.server}:${r.uri}`, kind: 'resource', menu: r.title ?? r.name, info: r.description ?? '' });
  for (const s of prompts) {
    for (const p of s.prompts) {
      const args = (p.arguments ?? []).map((a) => `${a.name}=${a.required ? '…' : '[…]'}`).join(' ');
      items.push({ word: `/${s.server}:${p.name}`, kind: 'prompt', menu: p.title ?? p.name, info: `${p.description ?? ''}${args ? ` (${args})` : ''}` });
    }
  }
  return items;
}
