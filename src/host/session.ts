import { randomUUID } from 'node:crypto';
import type { AgentState, ApprovalDecision, ApprovalRequest, PermissionMode } from '../agent/loop';
import { permissionFor } from '../tools/permissions';
import type { ToolContext } from '../tools/tool';
import { EVENTS } from './protocol';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';
import { summarizeApprovalArgs } from './summaries';

/** What a chat session needs of its agent: the built-in one, or an external ACP agent (src/acp). */
export interface SessionAgent {
  readonly mode: PermissionMode;
  readonly state: AgentState;
  readonly alwaysAllowedTools: string[];
  stop(): unknown;
  revoke(tool?: string): string[];
  setMode(mode: PermissionMode): void;
}

interface Pending<T> {
  resolve(value: T): void;
}

/**
 * One chat session: the agent plus the UI round trips it waits on (approvals, ask_user).
 * Everything the agent reports is forwarded to Lua as events; Lua only displays.
 */
export class ChatSession {
  readonly id: string;
  private readonly approvals = new Map<string, Pending<ApprovalDecision> & { req: ApprovalRequest }>();
  private readonly asks = new Map<string, Pending<string | null>>();
  agent!: SessionAgent;
  /** Left (close()): nothing waits on the user any more; new questions are answered at once. */
  private closed = false;
  /** Says something in the chat (the runtime also stores it with the session). */
  notice: (text: string) => void = (text) => this.ui.emit(EVENTS.notice, { text });

  constructor(
    private readonly ui: LuaUi,
    private readonly log: Logger,
    /** A stored session's id when it is reopened; a new one otherwise. */
    id?: string,
  ) {
    this.id = id ?? randomUUID();
  }

  bind(agent: SessionAgent): void {
    this.agent = agent;
  }

  emitState(state: AgentState, previous: AgentState): void {
    this.ui.emit(EVENTS.state, { state, previous, mode: this.agent?.mode, session: this.id, grants: this.agent?.alwaysAllowedTools ?? [] });
  }

  requestApproval = (req: ApprovalRequest): Promise<ApprovalDecision> =>
    new Promise((resolve) => {
      if (this.closed) return resolve({ decision: 'reject', reason: 'the chat left this session' });
      this.approvals.set(req.id, { resolve, req });
      this.ui.emit(EVENTS.approvalRequest, {
        id: req.id,
        tool: req.tool,
        args: req.args as Record<string, unknown>,
        // Lua draws these lines as they are: the host knows which arguments mean something to a reader.
        summary: summarizeApprovalArgs(req.args, req.preview),
        preview: req.preview as unknown as Record<string, unknown>,
        mode: this.agent.mode,
        // A subagent's request says which one asks ("agent #2: fix the parser").
        ...(req.label ? { label: req.label } : {}),
        // Why the user is asked although the mode would not (a file that usually holds secrets).
        ...(req.reason ? { reason: req.reason } : {}),
      });
    });

  resolveApproval(id: string, decision: ApprovalDecision): boolean {
    const p = this.approvals.get(id);
    if (!p) return false;
    this.approvals.delete(id);
    this.ui.emit(EVENTS.approvalClosed, { id, decision: decision.decision });
    p.resolve(decision);
    return true;
  }

  /** The agent withdrew a request (stop): close the float without answering. */
  cancelApproval(id: string): void {
    if (this.approvals.delete(id)) this.ui.emit(EVENTS.approvalClosed, { id, decision: 'cancelled' });
  }

  ask: NonNullable<ToolContext['ask']> = (req) =>
    new Promise((resolve) => {
      if (this.closed) return resolve(null);
      const id = randomUUID();
      this.asks.set(id, { resolve });
      this.ui.emit(EVENTS.ask, { id, question: req.question, choices: req.choices });
    });

  /** A question asked while no turn runs (a slash command's arguments): Lua shows it even when idle. */
  askOutsideTurn: NonNullable<ToolContext['ask']> = (req) =>
    new Promise((resolve) => {
      if (this.closed) return resolve(null);
      const id = randomUUID();
      this.asks.set(id, { resolve });
      this.ui.emit(EVENTS.ask, { id, question: req.question, choices: req.choices, outside_turn: true });
    });

  resolveAsk(id: string, answer: string | null): boolean {
    const p = this.asks.get(id);
    if (!p) return false;
    this.asks.delete(id);
    p.resolve(answer);
    return true;
  }

  /** Stop: abort the agent and answer every outstanding UI round trip so nothing hangs. */
  stop(): void {
    for (const id of [...this.approvals.keys()]) this.resolveApproval(id, { decision: 'reject', reason: 'stopped by the user' });
    for (const id of [...this.asks.keys()]) this.resolveAsk(id, null);
    this.agent?.stop();
  }

  /**
   * The chat left this session (it was replaced): stops it, and what its winding-down work would ask the
   * user from now on is refused at once (nobody would see the question; waiting would hold it open forever).
   */
  close(): void {
    this.closed = true;
    this.stop();
  }

  /** Withdraws standing "always" grants (one tool's, or all); Lua learns the rest from the state event. */
  revoke(tool?: string): string[] {
    const revoked = this.agent.revoke(tool);
    this.emitState(this.agent.state, this.agent.state);
    return revoked;
  }

  /**
   * The mode changes for the requests that wait too: one the new mode would not ask about is approved,
   * one it blocks (plan) is refused, each said in the chat; the others keep waiting (Lua retitles them).
   */
  setMode(mode: PermissionMode): void {
    this.agent.setMode(mode);
    for (const [id, { req }] of [...this.approvals]) {
      if (!req.policy) continue; // an external agent's request: its own modes decide
      const perm = permissionFor(mode, req.policy, req.allowed, req.confinement);
      const who = req.label ? ` (${req.label.split(':')[0]})` : '';
      // A request that asks in every mode (a file that usually holds secrets) is never approved by a mode.
      if (perm === 'run' && !req.reason) {
        this.notice(`approved ${req.tool}${who}: ${mode} mode runs it without asking`);
        this.resolveApproval(id, { decision: 'once' });
      } else if (perm === 'block') {
        this.notice(`refused ${req.tool}${who}: ${mode} mode blocks it`);
        this.resolveApproval(id, {
          decision: 'reject',
          reason: `switched to ${mode} mode, which blocks it (only read-only tools run). Do not retry it; describe the change you propose instead`,
        });
      }
    }
    this.emitState(this.agent.state, this.agent.state);
  }
}
