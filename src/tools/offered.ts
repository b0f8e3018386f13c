import type { ToolDefinition } from './tool';

/**
 * Every tool name of the product documents exists and can be called, but the list offered to the model
 * leaves out tools that only duplicate another one, so the model is not asked to choose between twins:
 * - `search_files` (glob | text | regex) duplicates `glob` + `grep`, which are offered.
 * A model that calls a hidden tool by name still gets it. Tools of an MCP server that is not running are not
 * offered either (a call gets `mcp_unavailable`).
 */
export const NOT_OFFERED: ReadonlySet<string> = new Set(['search_files']);

export function isOffered(def: ToolDefinition): boolean {
  return !NOT_OFFERED.has(def.name) && def.unavailable !== true;
}
