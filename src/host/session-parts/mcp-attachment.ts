/**
 * The host's MCP servers in one chat: their tools join the chat's registry and their state changes become
 * chat notices (attachMcp), `/server:prompt …` and `#mcp:server:uri` in a message are expanded, and the
 * servers' elicitation and sampling are answered in this chat. The MCP modules load only when used.
 */
import type { McpPool } from '../../mcp/client-pool';
import type { McpSessionHooks } from '../../mcp/session';
import type { ToolRegistry } from '../../tools/registry';
import type { ToolContext } from '../../tools/tool';
import type { Logger } from '../logger';
import type { McpSessionClient } from '../mcp-client';
import type { McpServerConfig } from '../../mcp/config';
import type { ResolvedProvider } from '../provider-config';
import type { ChatSession } from '../session';

export interface McpAttachmentOptions {
  /** The host's MCP servers (shared by its sessions); null: none configured. */
  pool: McpPool | null | undefined;
  registry: ToolRegistry;
  log: Logger;
  notice(text: string): void;
  progress(toolCallId: string, summary: string): void;
  session: Pick<ChatSession, 'ask' | 'requestApproval'>;
  provider: ResolvedProvider;
  servers: Record<string, McpServerConfig>;
}

export interface McpAttachment {
  /** The agent's hooks (prepare before a request, turn started, detach); null without MCP servers. */
  hooks: McpSessionHooks | null;
  /** A message with MCP prompts or resources expanded, with their labels; null when it names none. */
  expand(text: string, ask: NonNullable<ToolContext['ask']>, signal: AbortSignal): Promise<{ text: string; labels: string[] } | null>;
  client: McpSessionClient;
}

export function attachSessionMcp(o: McpAttachmentOptions): McpAttachment {
  const { pool } = o;
  /* eslint-disable @typescript-eslint/no-require-imports */
  const hooks = pool ? (require('../../mcp/session') as typeof import('../../mcp/session')).attachMcp(pool, o.registry, o.log, o.notice, o.progress) : null;
  return {
    hooks,
    async expand(text, ask, signal) {
      if (!pool || !/(^\s*\/[\w-]+:\S)|#mcp:/.test(text)) return null;
      return (require('../mcp-message') as typeof import('../mcp-message')).expandMcpMessage(text, pool, ask, signal);
    },
    client: (require('../mcp-client') as typeof import('../mcp-client')).mcpSessionClient({ session: o.session, provider: o.provider, servers: o.servers, notice: o.notice }),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
}
