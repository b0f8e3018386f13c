/** The names the model sees for MCP tools: `<server>__<tool>`, within OpenAI's `^[a-zA-Z0-9_-]{1,64}$`. */
import { createHash } from 'node:crypto';

export const TOOL_NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
export const TOOL_NAME_MAX = 64;
export const MCP_NAME_SEPARATOR = '__';

const shortHash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/**
 * `server__tool`, other characters of the tool's name replaced by `_`. A name that would be too long is
 * cut and ends with a hash of the original, so two long names stay apart.
 */
export function mcpToolName(server: string, tool: string): string {
  const clean = tool.replace(/[^a-zA-Z0-9_-]/g, '_') || '_';
  const full = `${server}${MCP_NAME_SEPARATOR}${clean}`;
  if (full.length <= TOOL_NAME_MAX) return full;
  const suffix = `_${shortHash(tool)}`;
  return `${full.slice(0, TOOL_NAME_MAX - suffix.length)}${suffix}`;
}

/**
 * The model-facing name of each of a server's tools, in order, all distinct: a tool whose sanitized name
 * is already taken gets a hash of its original name.
 */
export function mcpToolNames(server: string, tools: string[]): string[] {
  const taken = new Set<string>();
  return tools.map((tool) => {
    let name = mcpToolName(server, tool);
    if (taken.has(name)) {
      const suffix = `_${shortHash(tool)}`;
      name = `${name.slice(0, TOOL_NAME_MAX - suffix.length)}${suffix}`;
    }
    taken.add(name);
    return name;
  });
}
