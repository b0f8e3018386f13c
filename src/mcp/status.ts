/** What the user is told about MCP servers: chat notices, the :CabooseMcp listing, :checkhealth. Pure. */
import { permissionFor, type Permission, type PermissionMode } from '../agent/permissions';
import type { McpChange, McpServerState, McpServerStatus } from './client-pool';
import { mcpToolNames } from './names';
import { isAllowed } from './tools';
import { uncallableReason } from './callable';

/** The chat's notice for a change, or null when it needs none (a normal start, a tool-list refresh). */
export function mcpNotice(c: McpChange): string | null {
  if (c.toolsChanged) return null;
  if (c.state === 'failed' && c.previous === 'running') return `MCP server '${c.server}' stopped: ${c.reason ?? 'unknown reason'}; its tools are unavailable`;
  if (c.state === 'failed') {
    const again = c.restart === 'auto' ? ' again after it stopped' : '';
    return `MCP server '${c.server}' failed to start${again}: ${c.reason ?? 'unknown reason'}; its tools are unavailable (:CabooseMcp restart ${c.server} tries again)`;
  }
  if (c.state === 'running' && c.restart) return `MCP server '${c.server}' restarted`;
  return null;
}

/** One tool as :CabooseMcp lists it. */
export interface McpToolView {
  /** The name the model calls. */
  name: string;
  /** The server's name for it. */
  tool: string;
  /** The description's first line. */
  description: string;
  /** The configuration's `allow` covers it. */
  allowed: boolean;
  /** Approved with "always" in this session. */
  granted: boolean;
  read_only: boolean;
  /** What a call does in the current mode. */
  permission: Permission;
  /** Why the tool is not offered to the model (this client cannot call it), when it is not. */
  not_offered?: string;
}

export interface McpServerView {
  name: string;
  transport: 'stdio' | 'http';
  target: string;
  state: McpServerState;
  reason?: string;
  server_info?: string;
  tools: McpToolView[];
}

export function mcpServerViews(status: McpServerStatus[], mode: PermissionMode, grants: ReadonlySet<string>): McpServerView[] {
  return status.map((s) => {
    const names = mcpToolNames(
      s.name,
      s.tools.map((t) => t.name),
    );
    const tools = s.tools.map((t, i): McpToolView => {
      const name = names[i];
      const allowed = isAllowed(s.allow, t.name, name);
      const readOnly = t.annotations?.readOnlyHint === true;
      const granted = grants.has(name);
      const perm = permissionFor(mode, 'exec', allowed ? { readOnly } : undefined);
      const why = uncallableReason(t);
      return {
        ...(why ? { not_offered: why } : {}),
        name,
        tool: t.name,
        description: (t.description ?? t.title ?? '').trim().split('\n')[0],
        allowed,
        granted,
        read_only: readOnly,
        permission: perm === 'ask' && granted ? 'run' : perm,
      };
    });
    return {
      name: s.name,
      transport: s.transport,
      target: s.target,
      state: s.state,
      ...(s.reason ? { reason: s.reason } : {}),
      ...(s.serverInfo ? { server_info: `${s.serverInfo.name} ${s.serverInfo.version}` } : {}),
      tools,
    };
  });
}

/** One server as :checkhealth reports it. */
export interface McpHealth {
  name: string;
  target: string;
  state: McpServerState;
  reason?: string;
  tools: number;
}

export function mcpHealth(status: McpServerStatus[]): McpHealth[] {
  return status.map((s) => ({ name: s.name, target: s.target, state: s.state, ...(s.reason ? { reason: s.reason } : {}), tools: s.tools.length }));
}
