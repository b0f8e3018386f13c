/**
 * Which listed MCP tools this client can call. Kept apart from connect.ts (the only module loading the SDK),
 * so the tool list and the status views never load the SDK themselves.
 */

/**
 * Why a listed tool cannot be called by this client (and is therefore never offered to the model), or null.
 * A tool whose `execution.taskSupport` is 'required' runs only as an MCP task (task-based execution), which
 * caboose does not speak: a plain tools/call is refused by the server (-32600 / -32601).
 */
export function uncallableReason(t: { taskSupport?: 'forbidden' | 'optional' | 'required' }): string | null {
  return t.taskSupport === 'required' ? 'requires task-based execution (execution.taskSupport: "required"), which caboose does not support' : null;
}
