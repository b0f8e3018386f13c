/**
 * The agent's contract with its caller (the host, a parent agent): the options it is built with, the
 * events it emits, its states, and what send() takes and answers. The loop itself is loop.ts, which
 * re-exports these.
 */
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import type { ToolRegistry } from '../tools/registry';
import type { ToolContext, ToolDefinition, ToolResult } from '../tools/tool';
import type { PermissionMode } from '../tools/permissions';
import type { ChatMessage, ModelClient, ProviderConfig, Usage } from './provider';
import type { ApprovalDecision, ApprovalRequest } from './tool-calls';
import type { StoredRef } from './context';

export type AgentState = 'idle' | 'streaming' | 'executing_tools' | 'pending_approval';

export interface AgentEvents {
  state?(state: AgentState, previous: AgentState): void;
  assistantStart?(): void;
  text?(delta: string): void;
  /** The model's reasoning as it streams (never part of the reply). */
  reasoning?(delta: string): void;
  assistantEnd?(info: { interrupted: boolean }): void;
  toolCall?(call: { id: string; name: string; args: unknown }): void;
  toolResult?(r: { id: string; name: string; result: ToolResult }): void;
  /** User-facing errors (provider errors, step limit, internal failures). */
  error?(e: { kind: string; message: string }): void;
  notice?(text: string): void;
  /** A pending approval was withdrawn (stop()); the host should close its prompt. */
  approvalCancelled?(req: { id: string }): void;
  usage?(usage: Usage): void;
  /** The conversation was compacted: `removed` messages were replaced by `added` (the summary pair). */
  compacted?(c: { removed: ChatMessage[]; summary: string; added: ChatMessage[]; archivedAs?: number }): void;
  /** A message joined the conversation (user, assistant, interrupted reply, tool result), in order. */
  messageAdded?(m: ChatMessage): void;
  /** A turn begins: the user's message (a queued one when its turn comes). */
  turnStart?(message: QueuedMessage): void;
  turnEnd?(): void;
  /** stop() dropped these queued messages. */
  queueDiscarded?(messages: QueuedMessage[]): void;
  /** The model request failed and is retried after `delayMs`. */
  retry?(info: { attempt: number; delayMs: number; message: string }): void;
}

/** Structurally compatible with the host's Logger. */
export interface AgentLogger {
  debug(msg: string, ...args: unknown[]): void;
  info(msg: string, ...args: unknown[]): void;
  warn(msg: string, ...args: unknown[]): void;
  error(msg: string, ...args: unknown[]): void;
}

export interface AgentOptions {
  provider: ProviderConfig | ModelClient;
  registry: ToolRegistry;
  makeContext: (signal: AbortSignal) => ToolContext;
  mode?: PermissionMode;
  /** Read at each tool call instead of `mode`: a subagent follows its parent's mode when the user changes it mid-run. */
  followMode?: () => PermissionMode;
  /** Model calls per user message. Default 50. */
  stepLimit?: number;
  /** Messages waiting while busy. Default 3. */
  maxQueue?: number;
  /** Replaces the default system prompt. */
  systemPrompt?: string;
  /** The workspace root, named in the default system prompt. */
  cwd?: string;
  /**
   * The project's instruction files as a system-prompt section (see projectRulesSection), appended to the
   * system prompt, the configured one included. Must stay the same for a conversation (prompt caching).
   */
  projectRules?: () => string | undefined;
  requestApproval: (req: ApprovalRequest) => Promise<ApprovalDecision>;
  events?: AgentEvents;
  log?: AgentLogger;
  /** Tokens the model accepts; with it, the conversation is compacted (summarized) near the limit. */
  contextWindow?: number;
  /** Share of contextWindow that triggers compaction. Default 0.8. */
  compactAt?: number;
  /** Asked once, when the conversation first nears `contextWindow`: the model's real window, if known. */
  contextWindowLookup?: () => Promise<number | undefined>;
  /** Where old tool outputs are stored: pruned ones become stubs naming that id (see `recall`). */
  storedRef?: StoredRef;
  /** Stores the messages compaction removes; the id returned is named in the summary (for `recall`). */
  archive?: (removed: ChatMessage[], summary: string) => number | undefined;
  /** Which registry tools are offered to the model (a hidden tool still answers when called by name). Default: all. */
  toolFilter?: (def: ToolDefinition) => boolean;
  /** Media the model accepts: images and audio tools returned reach it as a user message after the results. */
  acceptsMedia?: readonly ('image' | 'audio')[];
  /** Tools approved with "always"; pass one set to share the grants with subagents. Default: a set of its own. */
  grants?: Set<string>;
  /** Awaited before each model request: tools that come and go (MCP servers) get ready. Must not throw. */
  prepareTools?: (signal: AbortSignal) => Promise<void>;
}

/** A user message; `meta` is the caller's (e.g. what the chat shows of it), handed back in turnStart. */
export interface QueuedMessage {
  text: string;
  meta?: unknown;
  /** The message as content parts (text and images the user attached); `text` is then its text part. */
  content?: ChatCompletionContentPart[];
}

export type SendResult = { status: 'started' } | { status: 'queued'; position: number } | { status: 'rejected'; reason: string };
