/** What the host gives an external agent (AcpHost) and the events it hears from it (AcpEvents). */
import type { AgentState, ApprovalDecision, ApprovalRequest, PermissionMode } from '../agent/loop';
import type { ToolResult } from '../tools/tool';
import type { ReviewSelection } from '../workspace/review';
import type { Workspace } from '../workspace/workspace';
import type { ToolLineStatus } from './render';

export interface AcpEvents {
  state(state: AgentState, previous: AgentState): void;
  /** A prompt turn starts (the user's message, as the chat shows it). */
  turnStart(m: { id: number; text: string }): void;
  text(delta: string): void;
  toolCall(c: { id: string; name: string; summary: string }): void;
  toolProgress(p: { id: string; summary: string }): void;
  toolResult(r: { id: string; name: string; ok: boolean; status: ToolLineStatus; summary: string; details: string[] }): void;
  todos(items: { id: string; content: string; status: 'pending' | 'in_progress' | 'completed' }[]): void;
  usage(u: { used: number; size: number }): void;
  turnEnd(info: { stopReason: string | null; text: string }): void;
  notice(text: string): void;
  error(message: string): void;
  /** A terminal command may have changed files behind Neovim's back. */
  diskChanged(): void;
  /** The agent's own session id (stored, for session/load). */
  sessionStarted(acpSessionId: string, canLoad: boolean): void;
}

export interface AcpHost {
  cwd: string;
  workspace: Workspace;
  sessionId: string;
  /** Our tools (read through read_file's view, write_file, bash), with their audit and checkpoints. */
  call(name: string, args: unknown, opts: { signal: AbortSignal; review?: ReviewSelection }): Promise<ToolResult>;
  requestApproval(req: ApprovalRequest): Promise<ApprovalDecision>;
  cancelApproval(id: string): void;
  events: AcpEvents;
  log: { info(m: string, ...a: unknown[]): void; warn(m: string, ...a: unknown[]): void; debug(m: string, ...a: unknown[]): void };
  mode: PermissionMode;
  /** Standing "always" grants, shared with the chat's status line. */
  grants: Set<string>;
  maxQueue: number;
  clientVersion: string;
  /** The agent's session to load (session/load) at the first start: a reopened chat. */
  resume?: string | null;
}
