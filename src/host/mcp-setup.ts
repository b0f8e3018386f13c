/**
 * The MCP servers as the host shares them between its chats: the pool (created on first need, only when
 * servers are configured; creating it starts nothing and loads no SDK), its state changes and resource
 * updates told to the chat window, and what servers ask of the client (roots, elicitation, sampling)
 * answered by the current chat. Also the servers as :CabooseMcp lists them.
 */
import type { HostConfig } from './protocol';
import { EVENTS } from './protocol-names';
import type { Logger } from './logger';
import type { LuaUi } from './lua-ui';
import type { McpSessionClient } from './mcp-client';
import type { McpPool } from '../mcp/client-pool';
import type { PermissionMode } from '../tools/permissions';

/* eslint-disable @typescript-eslint/no-require-imports */

/** The MCP pool for the host's chats; null without configured servers. */
export function createMcpPool(
  init: { config: HostConfig; cwd: string; dataDir: string },
  deps: { log: Logger; ui: LuaUi; clientVersion: string; chat: () => McpSessionClient | undefined },
): McpPool | null {
  const servers = init.config.mcp?.servers ?? {};
  if (Object.keys(servers).length === 0) return null;
  const { McpPool } = require('../mcp/client-pool') as typeof import('../mcp/client-pool');
  const needsSandbox = Object.values(servers).some((s) => 'command' in s && s.sandbox === true);
  const sandbox = needsSandbox ? new (require('../workspace/sandbox/sandbox') as typeof import('../workspace/sandbox/sandbox')).Sandbox({ root: init.cwd, dataDir: init.dataDir, config: init.config.sandbox ?? null }) : null;
  const path = require('node:path') as typeof import('node:path');
  const { pathToFileURL } = require('node:url') as typeof import('node:url');
  // What servers ask of the client goes to the current chat (none, or an ACP chat: cancelled/refused).
  const chat = deps.chat;
  const pool = new McpPool(init.config.mcp ?? {}, {
    cwd: init.cwd,
    log: deps.log,
    clientVersion: deps.clientVersion,
    sandbox,
    client: {
      roots: () => [{ uri: pathToFileURL(init.cwd).href, name: path.basename(init.cwd) }],
      elicit: async (server, req, signal) => chat()?.elicit(server, req, signal) ?? { action: 'cancel' },
      sample: async (server, req, signal) => {
        const c = chat();
        if (!c) throw new Error('no chat with a model is open to answer the sampling request');
        return c.sample(server, req, signal);
      },
      resourceUpdated: (server, uri) =>
        deps.ui.emit(EVENTS.notice, { text: `MCP server '${server}': resource ${uri} changed (attach #mcp:${server}:${uri} again to send the new version)` }),
    },
  });
  pool.onChange((c) => {
    const tools = pool.status().find((s) => s.name === c.server)?.tools.length ?? 0;
    deps.ui.emit(EVENTS.mcpChanged, { server: c.server, state: c.state, previous: c.previous, reason: c.reason, tools });
  });
  return pool;
}

/** The servers as :CabooseMcp lists them, with what each tool would do in `mode` given the `grants`. */
export function mcpView(pool: McpPool | null, mode: PermissionMode, grants: Set<string>) {
  const { mcpServerViews } = require('../mcp/status') as typeof import('../mcp/status');
  return { mode, servers: pool ? mcpServerViews(pool.status(), mode, grants) : [] };
}
