/**
 * What an MCP server asks of the client, answered in the current chat: elicitation through the ask UI
 * (one question per form field, accept/decline/cancel), sampling through an approval and the current model
 * (shown in the chat).
 */
import { randomUUID } from 'node:crypto';
import type { CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { ChatMessage } from '../agent/provider';
import { createModelClient } from '../agent/provider';
import type { McpServerConfig } from '../mcp/config';
import type { ResolvedProvider } from './provider-config';
import type { ChatSession } from './session';

export interface McpSessionClient {
  elicit(server: string, req: ElicitRequestParams, signal: AbortSignal): Promise<ElicitResult>;
  sample(server: string, req: CreateMessageRequestParams, signal: AbortSignal): Promise<CreateMessageResult>;
}

type FieldSchema = {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  oneOf?: { const?: unknown; title?: string }[];
  enumNames?: string[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  items?: { enum?: unknown[]; anyOf?: { const?: unknown }[] };
};

const ACCEPT = 'Answer';
const DECLINE = 'Decline';
const CANCEL = 'Cancel';

export function mcpSessionClient(o: {
  session: Pick<ChatSession, 'ask' | 'requestApproval'>;
  provider: ResolvedProvider;
  servers: Record<string, McpServerConfig>;
  notice(text: string): void;
}): McpSessionClient {
  const ask = (question: string, choices?: string[]) => o.session.ask({ question, ...(choices ? { choices } : {}) });
  return {
    async elicit(server, req) {
      if ('mode' in req && req.mode === 'url') {
        const r = req as { message: string; url: string };
        const a = await ask(`MCP server '${server}': ${r.message}\nOpen ${r.url} in your browser, then answer.`, ['Done', DECLINE, CANCEL]);
        return { action: a === 'Done' ? 'accept' : a === DECLINE ? 'decline' : 'cancel' };
      }
      const form = req as { message: string; requestedSchema: { properties: Record<string, FieldSchema>; required?: string[] } };
      const props = Object.entries(form.requestedSchema.properties ?? {});
      const first = await ask(`MCP server '${server}' asks: ${form.message}${props.length ? ` (${props.length} field${props.length === 1 ? '' : 's'})` : ''}`, [ACCEPT, DECLINE, CANCEL]);
      if (first === null || first === CANCEL) return { action: 'cancel' };
      if (first === DECLINE) return { action: 'decline' };
      const content: Record<string, string | number | boolean | string[]> = {};
      const required = new Set(form.requestedSchema.required ?? []);
      for (const [key, f] of props) {
        const label = `${f.title ?? key}${f.description ? ` — ${f.description}` : ''}${required.has(key) ? ' (required)' : ' (empty: skip)'}`;
        const options = f.oneOf?.map((x) => String(x.const)) ?? f.enum?.map(String) ?? (f.type === 'boolean' ? ['true', 'false'] : undefined);
        for (let attempt = 0; ; attempt++) {
          const a = await ask(`${server}: ${label}${f.default !== undefined ? ` [default ${String(f.default)}]` : ''}`, options);
          if (a === null) return { action: 'cancel' };
          const v = a.trim();
          if (v === '') {
            if (f.default !== undefined) content[key] = f.default as string;
            if (!required.has(key) || f.default !== undefined) break;
          } else if (f.type === 'number' || f.type === 'integer') {
            const n = Number(v);
            const inRange = (f.minimum === undefined || n >= f.minimum) && (f.maximum === undefined || n <= f.maximum);
            if (Number.isFinite(n) && (f.type === 'number' || Number.isInteger(n)) && inRange) {
              content[key] = n;
              break;
            }
          } else if (f.type === 'boolean') {
            content[key] = v === 'true' || v === 'yes';
            break;
          } else if (f.type === 'array') {
            content[key] = v.split(',').map((x) => x.trim()).filter(Boolean);
            break;
          } else {
            content[key] = v;
            break;
          }
          if (attempt >= 2) return { action: 'cancel' };
        }
      }
      return { action: 'accept', content };
    },

    async sample(server, req, signal) {
      const setting = o.servers[server]?.sampling ?? 'ask';
      const conversation = req.messages.map((m) => `${m.role}: ${contentText(m.content)}`).join('\n');
      if (setting === 'deny') throw new Error(`sampling is denied for MCP server '${server}' (mcp.servers.${server}.sampling)`);
      if (setting === 'ask') {
        const id = randomUUID();
        const text = [
          `MCP server '${server}' asks the model (${o.provider.model}):`,
          ...(req.systemPrompt ? [`system: ${req.systemPrompt}`] : []),
          conversation,
          `max tokens: ${req.maxTokens}`,
        ].join('\n');
        const d = await o.session.requestApproval({ id, toolCallId: id, tool: `${server}:sampling`, args: {}, preview: { kind: 'text', text, showsArguments: true }, label: `MCP server ${server}` });
        if (d.decision === 'reject') throw new Error(`the user declined the sampling request${d.reason ? `: ${d.reason}` : ''}`);
      }
      const messages: ChatMessage[] = [
        ...(req.systemPrompt ? [{ role: 'system' as const, content: req.systemPrompt }] : []),
        ...req.messages.map((m) => ({ role: m.role, content: contentText(m.content) }) as ChatMessage),
      ];
      let reply = '';
      for await (const ev of createModelClient(o.provider).stream({ messages, signal, maxTokens: req.maxTokens })) {
        if (ev.type === 'done') reply = ev.text;
      }
      o.notice(`MCP server '${server}' sampled the model: ${reply.split('\n')[0].slice(0, 200)}`);
      return { role: 'assistant', content: { type: 'text', text: reply }, model: o.provider.model, stopReason: 'endTurn' };
    },
  };
}

function contentText(c: unknown): string {
  const blocks = Array.isArray(c) ? c : [c];
  return blocks.map((b) => (b && typeof b === 'object' && (b as { type?: string }).type === 'text' ? String((b as { text?: unknown }).text ?? '') : `[${String((b as { type?: unknown })?.type ?? 'content')}]`)).join('\n');
}
