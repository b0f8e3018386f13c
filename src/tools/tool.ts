import type { z } from 'zod';
import type { ToolErrorInfo } from './errors';
import type { Workspace } from '../workspace/workspace';
import type { ReviewFile, ReviewSelection } from '../workspace/review';
import type { Confinement } from '../workspace/sandbox/sandbox';

export type ToolResult<T = unknown> = { ok: true; data: T } | { ok: false; error: ToolErrorInfo };

/**
 * How a tool is gated by the permission modes:
 * - `read`: runs in every mode (plan included).
 * - `edit`: changes files in the workspace; asks in `create`, runs in `auto-edit` and `chug`.
 * - `exec`: runs commands or reaches the network; asks in `create` and `auto-edit`, runs in `chug`.
 * - `interactive`: talks to the user (ask_user, todo_*): runs in every mode.
 */
export type ToolPolicy = 'read' | 'edit' | 'exec' | 'interactive';

/** What a tool asks the user; returned by ToolContext.ask. */
export interface AskRequest {
  question: string;
  choices?: string[];
}

export interface ToolContext {
  signal: AbortSignal;
  workspace: Workspace;
  sessionId: string;
  /** Ask the user a question (ask_user). Rejects when no UI is attached. */
  ask?: (req: AskRequest) => Promise<string | null>;
  /** Streamed progress for long tools (bash output, fetch). */
  progress?: (text: string) => void;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, meta?: unknown) => void;
  /** The model's id of this call (set by the agent loop; absent when the user runs a tool). */
  toolCallId?: string;
  /** The user's hunk-level decision on this (write) call: only the hunks not rejected are written. */
  review?: ReviewSelection;
  /**
   * Writes into loaded buffers wait (bounded) for the language servers and report the diagnostics they
   * introduced or resolved. Set for the agent's calls; left off for calls the user runs (tool_call),
   * where Neovim is blocked until the answer comes.
   */
  reportDiagnostics?: boolean;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType, R = unknown> {
  name: string;
  /** Text the model reads. */
  description: string;
  parameters: S;
  policy: ToolPolicy;
  /** The JSON schema the model is sent when it is not generated from `parameters` (an MCP server's own). */
  jsonSchema?: Record<string, unknown>;
  /**
   * The user's configuration lets this tool run without asking (an MCP server's `allow`): it runs in
   * create and auto-edit mode; in plan mode only when it is also `readOnly`.
   */
  allowed?: { readOnly: boolean };
  /** Not offered to the model (its MCP server is not running); a call gets a clear error, never a prompt. */
  unavailable?: boolean;
  /** Where an MCP tool comes from (the server and its name for the tool). */
  mcp?: { server: string; tool: string };
  /** With it, every call (run, failed or refused) gets an audit row holding these details. */
  auditDetails?(args: unknown): Record<string, unknown>;
  /**
   * Where this call would run (an exec tool that runs model-chosen programs): inside the OS sandbox, or
   * outside it. The permission modes use it (auto-edit runs sandboxed commands; escalations always ask).
   */
  confinement?(args: unknown): Confinement;
  execute(args: z.infer<S>, ctx: ToolContext): Promise<R>;
  /** What the approval float shows before the tool runs (computed without side effects). */
  preview?(args: z.infer<S>, ctx: ToolContext): Promise<ApprovalPreview>;
}

export type ApprovalPreview =
  | { kind: 'diff'; path: string; diff: string; files?: ReviewFile[] }
  /**
   * `display`: the command as the float shows it (every line, control characters visible; see visible.ts).
   * `sandbox`: where it runs, in words (inside the sandbox, or OUTSIDE it).
   */
  | { kind: 'command'; command: string; cwd: string; display?: string; sandbox?: string }
  /** `showsArguments`: the text holds every argument (the float lists no summary of them above it). */
  | { kind: 'text'; text: string; showsArguments?: boolean };

/** What is sent to the model for each tool (JSON schema generated from the zod schema). */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  policy: ToolPolicy;
}
