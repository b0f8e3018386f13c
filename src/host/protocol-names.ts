/** The host's version (ping, host.init's answer, MCP's client info). */
export const HOST_VERSION = '0.1.0';

// Method and event names without zod, so the host answers its first request before loading schemas.

/** RPC method names (Lua → host). Lua's `lua/caboose/rpc.lua` uses the same strings; a test checks both sides. */
export const METHODS = {
  ping: 'host.ping',
  init: 'host.init',
  send: 'session.send',
  stop: 'session.stop',
  reset: 'session.new',
  sessionList: 'session.list',
  sessionOpen: 'session.open',
  sessionRename: 'session.rename',
  sessionCompact: 'session.compact',
  sessionExport: 'session.export',
  sessionDelete: 'session.delete',
  sessionInfo: 'session.info',
  /** Regenerate the last reply (:CabooseRetry): `{ model?, files?: 'ask'|'rewind'|'keep', force? }`. */
  sessionRetry: 'session.retry',
  /** Edit-and-resend: fork the chat before its `index`-th user message (`text`: what the chat shows there). */
  sessionFork: 'session.fork',
  sessionDebug: 'session.debug',
  setMode: 'mode.set',
  approvalResolve: 'approval.resolve',
  askResolve: 'ask.resolve',
  grantsRevoke: 'grants.revoke',
  health: 'health.check',
  trashList: 'trash.list',
  trashRestore: 'trash.restore',
  toolCall: 'tool.call',
  selectionEdit: 'edit.selection',
  selectionEditCancel: 'edit.cancel',
  checkpointList: 'checkpoint.list',
  checkpointDiff: 'checkpoint.diff',
  checkpointRewind: 'checkpoint.rewind',
  auditList: 'audit.list',
  auditDiff: 'audit.diff',
  mcpList: 'mcp.list',
  mcpRestart: 'mcp.restart',
  modelList: 'model.list',
  modelSet: 'model.set',
  modelCheck: 'model.check',
  mcpItems: 'mcp.items',
  agentList: 'agent.list',
  agentSelect: 'agent.select',
} as const;

/**
 * Lua's asynchronous calls arrive as this notification, `{ id, method, params }`; the answer goes back as
 * the `reply` event `{ id, ok, result | error }`. Nothing on a user's path waits for the host.
 */
export const CALL_NOTIFICATION = 'caboose.call';

/** Host → Lua event names, delivered as `require('caboose.rpc').on_event(name, payload)`. */
export const EVENTS = {
  state: 'state',
  userMessage: 'user_message',
  assistantStart: 'assistant_start',
  assistantDelta: 'assistant_delta',
  /** The model's reasoning as it streams: `{ text }` (shown folded, never part of the reply). */
  reasoningDelta: 'reasoning_delta',
  assistantEnd: 'assistant_end',
  toolCall: 'tool_call',
  toolResult: 'tool_result',
  /** A running tool's line changes its summary (a subagent's steps): `{ id, summary }`. */
  toolProgress: 'tool_progress',
  approvalRequest: 'approval_request',
  approvalClosed: 'approval_closed',
  ask: 'ask',
  todos: 'todos',
  error: 'error',
  notice: 'notice',
  diskChanged: 'disk_changed',
  reply: 'reply',
  queued: 'queued',
  queueDiscarded: 'queue_discarded',
  usage: 'usage',
  retry: 'retry',
  sessionInfo: 'session_info',
  /**
   * A reopened session's chat, rendered at once: `{ session, title, items_json }` (the items as JSON text).
   * With `replaced: true` the same session's chat changed (a regenerated reply): no session was opened.
   */
  transcript: 'transcript',
  /** The project rules files a new conversation follows, as the chat's first lines: `{ lines }`. */
  rules: 'rules',
  /** An MCP server changed state or tools: `{ server, state, previous, reason?, tools }` (Lua: User CabooseMcpChanged). */
  mcpChanged: 'mcp_changed',
} as const;
