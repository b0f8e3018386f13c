/**
 * The tool step of a turn: runs the calls of one model reply. Each call's arguments are parsed, its
 * permission decided (the mode, the "always" grants, files that usually hold secrets), the user asked
 * when needed (with a preview; a call that cannot apply goes back to the model instead), and the tool
 * run; consecutive reads that need no approval run concurrently. Results join the conversation in the
 * order of the calls, then any media they returned. The loop (loop.ts) owns the turn around it.
 */
import { randomUUID } from 'node:crypto';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import type { ToolRegistry } from '../tools/registry';
import type { ApprovalPreview, ToolContext, ToolDefinition, ToolPolicy, ToolResult } from '../tools/tool';
import type { ReviewSelection } from '../workspace/review';
import type { Confinement } from '../workspace/sandbox/sandbox';
import { ToolError, type ToolErrorInfo } from '../workspace/errors';
import type { AssembledToolCall, ChatMessage } from './provider';
import { blockedByModeMessage, permissionFor, type PermissionMode } from '../tools/permissions';
import { secretReason, secretTargets } from '../tools/secret-targets';
import { redactDeep } from '../store/redact';
import { parseToolArguments, toolMessage } from './messages';
import { audioFormat, mediaOf } from '../tools/media';

export interface ApprovalRequest {
  /** Unique per request (not the tool call id). */
  id: string;
  toolCallId: string;
  tool: string;
  args: unknown;
  preview?: ApprovalPreview;
  /** Who asks, when it is not the main agent (a subagent: "agent #2: fix the parser"). */
  label?: string;
  /** Why the user is asked although the mode would not ask (a file that usually holds secrets). */
  reason?: string;
  /** What decides whether the call asks in a mode (a mode change answers a request its new mode would not ask). */
  policy?: ToolPolicy;
  allowed?: { readOnly: boolean };
  confinement?: Confinement;
}

/** `review`: with 'once'/'always', the hunks the user rejected in a file change (the rest are written). */
export type ApprovalDecision = { decision: 'once' | 'always' | 'reject'; reason?: string; review?: ReviewSelection };

/** What the tool step hears of and does to the agent that runs it. */
export interface ToolCallsHost {
  registry: ToolRegistry;
  makeContext: (signal: AbortSignal) => ToolContext;
  requestApproval: (req: ApprovalRequest) => Promise<ApprovalDecision>;
  log?: { warn(msg: string, ...args: unknown[]): void };
  /** Media the model accepts (see AgentOptions.acceptsMedia). */
  acceptsMedia?: readonly ('image' | 'audio')[];
  /** The permission mode now (read at each call). */
  mode(): PermissionMode;
  /** Tools approved with "always" (shared with the agent, which can revoke them). */
  grants: Set<string>;
  /** Appends a message to the conversation (the agent's history and its messageAdded event). */
  push(m: ChatMessage): void;
  setState(state: 'executing_tools' | 'pending_approval'): void;
  events: {
    toolCall(call: { id: string; name: string; args: unknown }): void;
    toolResult(r: { id: string; name: string; result: ToolResult }): void;
    notice(text: string): void;
    approvalCancelled(req: { id: string }): void;
  };
}

/** One tool call of the current reply, as the loop tracks it. */
interface PendingCall {
  call: AssembledToolCall;
  args: unknown;
  parseError?: string;
  def?: ToolDefinition;
}

export class ToolCalls {
  /** Secret files (secret_globs) the user allowed for this session with "always". */
  private readonly approvedSecrets = new Set<string>();

  constructor(private readonly host: ToolCallsHost) {}

  /** A call the user makes from a message (the chat's /fetch): gated and run like one of the model's. */
  callAsUser(call: AssembledToolCall, args: unknown, signal: AbortSignal): Promise<ToolResult> {
    return this.gateAndRun({ call, args, def: this.host.registry.get(call.name) }, signal);
  }

  /**
   * Runs the calls of one reply. Consecutive calls that run without asking and have the `read` policy
   * (subagents included: a child gates its own calls) run concurrently; anything else (approval, edit,
   * exec, interactive) runs alone, in order. Results are appended in the original order whatever the
   * completion order.
   */
  async run(calls: AssembledToolCall[], signal: AbortSignal): Promise<void> {
    this.host.setState('executing_tools');
    const pending: PendingCall[] = calls.map((call) => {
      const parsed = parseToolArguments(call.arguments);
      return {
        call,
        args: parsed.ok ? parsed.args : call.arguments,
        parseError: parsed.ok ? undefined : parsed.message,
        def: this.host.registry.get(call.name),
      };
    });
    const results: ToolResult[] = new Array<ToolResult>(pending.length);
    // Each result joins the history (and the session store) as soon as the ones before it have.
    let pushed = 0;
    const pushReady = (): void => {
      for (; pushed < pending.length && results[pushed] !== undefined; pushed++) this.host.push(toolMessage(pending[pushed].call.id, results[pushed]));
    };
    let batch: Promise<void>[] = [];
    const flush = async (): Promise<void> => {
      await Promise.all(batch);
      batch = [];
    };

    for (let i = 0; i < pending.length; i++) {
      const p = pending[i];
      const finish = (result: ToolResult): void => {
        results[i] = result;
        this.host.events.toolResult({ id: p.call.id, name: p.call.name, result });
        pushReady();
      };
      this.host.events.toolCall({ id: p.call.id, name: p.call.name, args: p.args });
      if (signal.aborted) {
        finish(cancelledResult());
        continue;
      }
      if (p.parseError !== undefined) {
        finish(this.refuse(p, { kind: 'invalid_arguments', message: p.parseError, suggestedAction: 'Send the arguments as one valid JSON object matching the tool schema.' }));
        continue;
      }
      const concurrent = p.def?.policy === 'read' && this.permission(p) === 'run';
      if (concurrent) {
        batch.push(this.runTool(p, signal).then(finish));
        continue;
      }
      await flush();
      finish(signal.aborted ? cancelledResult() : await this.gateAndRun(p, signal));
    }
    await flush();
    if (!signal.aborted) this.pushMedia(pending.map((p) => p.call.id), results);
  }

  /** Images and audio the step's tools returned, for a model that accepts them (after every tool result). */
  private pushMedia(ids: string[], results: ToolResult[]): void {
    const accepts = this.host.acceptsMedia ?? [];
    if (accepts.length === 0) return;
    const parts: ChatCompletionContentPart[] = [];
    results.forEach((r, i) => {
      if (!r?.ok) return;
      const own: ChatCompletionContentPart[] = [];
      for (const m of mediaOf(r.data)) {
        if (!accepts.includes(m.type)) continue;
        if (m.type === 'image') own.push({ type: 'image_url', image_url: { url: `data:${m.mimeType};base64,${m.data}` } });
        else {
          const format = audioFormat(m.mimeType);
          if (format) own.push({ type: 'input_audio', input_audio: { data: m.data, format } });
        }
      }
      if (own.length > 0) parts.push({ type: 'text', text: `Media returned by tool call ${ids[i]}:` }, ...own);
    });
    if (parts.length > 0) this.host.push({ role: 'user', content: parts });
  }

  private permission(p: PendingCall): 'run' | 'ask' | 'block' {
    if (!p.def) return 'run'; // the registry answers invalid_arguments (unknown tool)
    const confinement = p.def.confinement?.(p.args);
    const perm = permissionFor(this.host.mode(), p.def.policy, p.def.allowed, confinement);
    // Reading or searching a file that usually holds secrets asks in every mode, whatever was always allowed.
    if (perm !== 'block' && this.unapprovedSecrets(p).length > 0) return 'ask';
    // An escalation out of the sandbox asks every time, whatever "always" was answered before.
    if (perm === 'ask' && confinement !== 'escalated' && this.host.grants.has(p.def.name)) return 'run';
    return perm;
  }

  /** The secret files (secret_globs) this call would read or search that the user has not allowed yet. */
  private unapprovedSecrets(p: PendingCall): string[] {
    if (!p.def || p.parseError !== undefined) return [];
    const workspace = this.host.makeContext(new AbortController().signal).workspace;
    return secretTargets(p.def.name, p.args, workspace).filter((rel) => !this.approvedSecrets.has(rel));
  }

  /** Mode check, approval (when needed), then the tool. */
  private async gateAndRun(p: PendingCall, signal: AbortSignal): Promise<ToolResult> {
    const def = p.def;
    const perm = this.permission(p);
    if (def && perm === 'block') {
      return this.refuse(p, { kind: 'blocked_by_mode', message: blockedByModeMessage(def.name, def.policy) });
    }
    if (def && perm === 'ask') {
      // Invalid arguments never reach the user: the registry reports them to the model.
      const valid = def.parameters.safeParse(p.args ?? {});
      if (!valid.success) return this.runTool(p, signal);
      // A call that cannot apply (stale file, text not found…) fails now: the user is not asked about it —
      // unless it touches a secret file: its error (closest lines…) could show the content, so the user is asked first.
      const secrets = this.unapprovedSecrets(p);
      const preview = await this.previewFor(p, def, valid.data, signal);
      if ('error' in preview && secrets.length === 0) return err(preview.error);
      const reason = secrets.length > 0 ? secretReason(def.name, secrets) : undefined;
      if (reason) this.host.events.notice(reason);
      const decision = await this.askApproval(p, def, valid.data, 'preview' in preview ? preview.preview : undefined, signal, reason);
      if (decision === null) {
        return this.refuse(p, { kind: 'rejected_by_user', message: 'The user stopped the agent before approving this call.' });
      }
      if (decision.decision === 'reject') {
        const reason = decision.reason?.trim();
        return this.refuse(p, {
          kind: 'rejected_by_user',
          message: reason ? `The user rejected this ${def.name} call: ${reason}` : `The user rejected this ${def.name} call.`,
          suggestedAction: 'Do not repeat the same call; adjust your approach or ask the user.',
        });
      }
      // "always" for a secret file allows that file for the session, not the tool for every file; "always"
      // on an escalation approves this call only: the next escalation asks again.
      if (decision.decision === 'always') {
        if (secrets.length > 0) for (const s of secrets) this.approvedSecrets.add(s);
        else if (def.confinement?.(p.args) !== 'escalated') this.host.grants.add(def.name);
      }
      if ('error' in preview) return err(preview.error);
      this.host.setState('executing_tools');
      const review = decision.review?.files.some((f) => f.rejected.length > 0) ? decision.review : undefined;
      return this.runTool(p, signal, review);
    }
    return this.runTool(p, signal);
  }

  /** A call refused before it ran: the registry hears of it (to audit it), the model gets the error. */
  private refuse(p: PendingCall, info: ToolErrorInfo): ToolResult {
    this.host.registry.refused(p.call.name, p.args, info);
    return err(info);
  }

  /**
   * What the approval float shows. A ToolError means the call cannot apply as it is (the tool would fail
   * the same way): it goes back to the model instead of to the user. Any other failure only loses the
   * preview (logged); the user is still asked.
   */
  private async previewFor(p: PendingCall, def: ToolDefinition, args: unknown, signal: AbortSignal): Promise<{ preview?: ApprovalPreview } | { error: ToolErrorInfo }> {
    if (!def.preview) return {};
    try {
      return { preview: await def.preview(args, this.contextFor(p, signal)) };
    } catch (e) {
      if (e instanceof ToolError) return { error: e.toInfo() };
      this.host.log?.warn('preview for %s failed: %s', def.name, e instanceof Error ? e.message : String(e));
      return {};
    }
  }

  /** Waits for the user; null when stop() withdrew the request. */
  private async askApproval(
    p: PendingCall,
    def: ToolDefinition,
    args: unknown,
    preview: ApprovalPreview | undefined,
    signal: AbortSignal,
    reason?: string,
  ): Promise<ApprovalDecision | null> {
    const confinement = def.confinement?.(p.args);
    const req: ApprovalRequest = {
      id: randomUUID(),
      toolCallId: p.call.id,
      tool: def.name,
      args,
      policy: def.policy,
      ...(def.allowed ? { allowed: def.allowed } : {}),
      ...(confinement !== undefined ? { confinement } : {}),
      ...(preview ? { preview } : {}),
      ...(reason ? { reason } : {}),
    };
    const aborted = abortPromise(signal);
    try {
      // The request goes out before the state change, so whoever reacts to `pending_approval` finds it.
      const pending = this.host.requestApproval(req);
      this.host.setState('pending_approval');
      const decision = await Promise.race([pending, aborted.promise]);
      if (decision === null) this.host.events.approvalCancelled({ id: req.id });
      return decision;
    } catch (e) {
      this.host.log?.warn('requestApproval failed: %s', e instanceof Error ? e.message : String(e));
      return { decision: 'reject', reason: 'the approval prompt failed' };
    } finally {
      aborted.dispose();
    }
  }

  /** registry.call never throws; the race makes stop() effective even for tools ignoring the signal. */
  private async runTool(p: PendingCall, signal: AbortSignal, review?: ReviewSelection): Promise<ToolResult> {
    if (signal.aborted) return cancelledResult();
    const aborted = abortPromise(signal);
    try {
      const ctx = review ? { ...this.contextFor(p, signal), review } : this.contextFor(p, signal);
      const result = await Promise.race([this.host.registry.call(p.call.name, p.args, ctx), aborted.promise]);
      // The API key (and a base_url's password) never reach the model, even when a command prints them.
      return result ? redactDeep(result) : cancelledResult();
    } finally {
      aborted.dispose();
    }
  }

  private contextFor(p: PendingCall, signal: AbortSignal): ToolContext {
    return { ...this.host.makeContext(signal), toolCallId: p.call.id };
  }
}

function err(info: ToolErrorInfo): ToolResult {
  return { ok: false, error: info };
}

function cancelledResult(): ToolResult {
  return err({ kind: 'cancelled', message: 'The user stopped the agent; this call did not complete.' });
}

/** A promise resolving to null on abort, and a disposer to drop the listener. */
function abortPromise(signal: AbortSignal): { promise: Promise<null>; dispose(): void } {
  let onAbort: () => void = () => undefined;
  const promise = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    if (signal.aborted) resolve(null);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}
