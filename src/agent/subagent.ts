/**
 * Subagents: tools that run a child Agent on one task, in a context of its own, and return its final answer.
 *
 * - `explore`: read-only research. The child runs in plan mode with the parent's offered `read` tools.
 * - `agent`: an independent worker. The child runs in the parent's permission mode (read when the call
 *   starts) with the tools the caller names (default: every tool the parent offers), and asks the user
 *   through the parent's approval channel, each request labelled with the subagent ("agent #2: fix the
 *   parser"). "Always" grants are the parent's own set: the user allowed the tool for the session, so a
 *   grant given to a child holds for the parent and every other child, and :CabooseRevoke withdraws it
 *   for all of them.
 *
 * Both have the `read` policy: the call itself changes nothing (the child's calls are gated by the child's
 * mode), so several subagent calls in one reply run concurrently, like reads; the workspace write lock
 * serializes the children's writes. A child never sees a subagent tool (no nesting), is stopped with the
 * parent's call (its pending approvals are withdrawn), reports its progress and transcript through
 * callbacks, and its answer is capped like every tool output (2,000 lines / 50 KB, with a notice).
 */
import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import { ToolRegistry } from '../tools/registry';
import type { ToolContext, ToolDefinition, ToolResult, ToolSpec } from '../tools/tool';
import { isOffered } from '../tools/offered';
import { capText, truncationNotice } from '../workspace/output';
import { Agent, type AgentLogger, type ApprovalDecision, type ApprovalRequest } from './loop';
import type { PermissionMode } from '../tools/permissions';
import { modeNote } from './prompt';
import type { ChatMessage, ModelClient, ProviderConfig, Usage } from './provider';

export type SubagentName = 'explore' | 'agent';

/** What a child did, reported once it finished (answered, failed or was stopped). */
export interface SubagentTranscript {
  /** The parent's call of the subagent tool. */
  toolCallId: string;
  name: SubagentName;
  /** "agent #2: fix the parser": what the approvals and the chat call this child. */
  label: string;
  task: string;
  tools: string[];
  mode: PermissionMode;
  /** 'running' while the child works (its transcript so far, written as it grows). */
  status: 'running' | 'ok' | 'error' | 'cancelled';
  /** The child's conversation (its task, tool calls, results and answer), without its system prompt. */
  messages: ChatMessage[];
}

/** The child started its `step`-th tool call. */
export interface SubagentProgress {
  toolCallId: string;
  label: string;
  step: number;
  tool: string;
  args: unknown;
}

export interface SubagentResult {
  answer: string;
  toolCalls: number;
  /** The answer was cut at the output cap (the answer ends with a notice saying so). */
  truncated?: true;
}

interface CommonOptions {
  provider: ProviderConfig | ModelClient;
  /** The parent's registry; the child sees a subset of it. */
  registry: ToolRegistry;
  /** The tools the parent offers its model (its toolFilter). Default: isOffered. */
  offered?: (def: ToolDefinition) => boolean;
  /** Model calls the child may make. Default 15 (explore), 30 (agent). */
  stepLimit?: number;
  log?: AgentLogger;
  onTranscript?: (t: SubagentTranscript) => void;
  onProgress?: (p: SubagentProgress) => void;
  /** Each of a child's model replies' token usage (the session's totals count the children too). */
  onUsage?: (u: Usage) => void;
  /** The parent conversation's project rules (a system-prompt section); children follow them too. */
  projectRules?: () => string | undefined;
}

export type ExploreToolOptions = CommonOptions;

export interface AgentToolOptions extends CommonOptions {
  /** The parent's permission mode; read when a call starts. */
  mode: () => PermissionMode;
  /** The parent's approval channel; the child's requests carry its label. */
  requestApproval: (req: ApprovalRequest) => Promise<ApprovalDecision>;
  /** A child withdrew a pending request (it was stopped). */
  approvalCancelled?: (req: { id: string }) => void;
  /** The parent's "always" grants (the same set the parent Agent was given). */
  grants?: Set<string>;
}

const exploreParameters = z.object({
  task: z.string().min(1).describe('What to find out, precisely: the question, where to look, and what the answer should contain.'),
});

const agentParameters = z.object({
  task: z
    .string()
    .min(1)
    .describe('The task, self-contained (the subagent does not see this conversation): what to do, which files, constraints, and what to report.'),
  tools: z
    .array(z.string().min(1))
    .optional()
    .describe('Names of the tools the subagent may use: any of yours except explore and agent. Default: all of them.'),
});

const EXPLORE_PROMPT = [
  'You are a research subagent of Caboose, a coding assistant inside Neovim.',
  'You have read-only tools. Investigate the task you are given, then answer with a concise, factual report:',
  'file paths, symbols and line numbers that matter, and what you found. Do not propose edits unless asked.',
].join('\n');

const AGENT_PROMPT = [
  'You are a subagent of Caboose, a coding assistant inside Neovim. The main agent gave you one task; you do not see its conversation.',
  'Do the task with the tools you have. Read files before editing them and pass the sha256 you read as expectedSha256; on stale_file, re-read and retry.',
  'Calls that change files or run commands may wait for the user\'s approval; when the user rejects one, do not repeat it.',
  'When you are done, answer with a concise report for the main agent: what you changed (paths), what you ran and its outcome, and what is left undone.',
].join('\n');

const workspaceLine = (root: string) => `Working directory (the workspace root; relative paths start here): ${root}`;

export function createExploreTool(opts: ExploreToolOptions): ToolDefinition<typeof exploreParameters, SubagentResult> {
  const offered = opts.offered ?? isOffered;
  let runs = 0;
  return mark({
    name: 'explore',
    description:
      'Spawn a subagent with read-only tools (read, list, search) to explore the codebase and answer one focused question. ' +
      'Use it for broad searches whose intermediate output you do not need; it returns only its final report. ' +
      'Several explore calls in one reply run at the same time.',
    parameters: exploreParameters,
    policy: 'read',
    execute(args, ctx) {
      const tools = childCandidates(opts.registry, offered).filter((d) => d.policy === 'read').map((d) => d.name);
      return runChild(opts, ctx, {
        name: 'explore',
        label: `explore #${++runs}: ${firstWords(args.task)}`,
        task: args.task,
        tools,
        mode: 'plan',
        systemPrompt: `${EXPLORE_PROMPT}\n${workspaceLine(ctx.workspace.root)}`,
        stepLimit: opts.stepLimit ?? 15,
        requestApproval: async () => ({ decision: 'reject', reason: 'explore cannot ask for approval' }),
      });
    },
  });
}

export function createAgentTool(opts: AgentToolOptions): ToolDefinition<typeof agentParameters, SubagentResult> {
  const offered = opts.offered ?? isOffered;
  let runs = 0;
  return mark({
    name: 'agent',
    description:
      'Spawn a subagent that carries out one self-contained task (e.g. "add unit tests for parseArgs in test/args.test.ts") with its own ' +
      'context and tools, and returns only its final report. It runs in the session\'s permission mode: its file changes and commands ' +
      'ask the user as yours do. Put everything it needs in `task`. Several agent calls in one reply run at the same time: give ' +
      'independent pieces of work (different files) to different subagents.',
    parameters: agentParameters,
    policy: 'read',
    execute(args, ctx) {
      const available = childCandidates(opts.registry, offered).map((d) => d.name);
      const tools = args.tools === undefined ? available : [...new Set(args.tools)];
      const unknown = tools.filter((t) => !available.includes(t));
      if (unknown.length > 0) {
        throw new ToolError('invalid_arguments', `Not a tool a subagent can use: ${unknown.join(', ')}.`, {
          suggestedAction: `Name tools among: ${available.join(', ')} (or leave out "tools" to give it all of them).`,
          details: { issues: unknown.map((t) => ({ path: 'tools', message: `unknown tool "${t}"` })), available },
        });
      }
      const mode = opts.mode();
      return runChild(opts, ctx, {
        name: 'agent',
        label: `agent #${++runs}: ${firstWords(args.task)}`,
        task: args.task,
        tools,
        mode,
        followMode: opts.mode,
        systemPrompt: `${AGENT_PROMPT}\n${modeNote(mode)}\n${workspaceLine(ctx.workspace.root)}`,
        stepLimit: opts.stepLimit ?? 30,
        requestApproval: opts.requestApproval,
        approvalCancelled: opts.approvalCancelled,
        grants: opts.grants,
      });
    },
  });
}

/* ------------------------------------------------------------------------------------------------
 * The child
 * ---------------------------------------------------------------------------------------------- */

interface ChildSpec {
  name: SubagentName;
  label: string;
  task: string;
  tools: string[];
  mode: PermissionMode;
  /** The parent's mode, read at each of the child's tool calls (explore's children stay in plan). */
  followMode?: () => PermissionMode;
  systemPrompt: string;
  stepLimit: number;
  requestApproval: (req: ApprovalRequest) => Promise<ApprovalDecision>;
  approvalCancelled?: (req: { id: string }) => void;
  grants?: Set<string>;
}

async function runChild(opts: CommonOptions, ctx: ToolContext, spec: ChildSpec): Promise<SubagentResult> {
  const toolCallId = ctx.toolCallId ?? '';
  let toolCalls = 0;
  const failures: string[] = [];
  // The child's own calls get their own ids and approvals; nothing of the parent's call carries over.
  const base: ToolContext = { ...ctx, toolCallId: undefined, review: undefined };
  const report = (status: SubagentTranscript['status']): void => {
    try {
      opts.onTranscript?.({ toolCallId, name: spec.name, label: spec.label, task: spec.task, tools: spec.tools, mode: spec.mode, status, messages: child.messages });
    } catch (e) {
      opts.log?.error('subagent transcript handler threw: %s', e instanceof Error ? e.message : String(e));
    }
  };
  const child: Agent = new Agent({
    provider: opts.provider,
    registry: new ScopedRegistry(opts.registry, new Set(spec.tools)),
    mode: spec.mode,
    followMode: spec.followMode,
    stepLimit: spec.stepLimit,
    maxQueue: 0,
    systemPrompt: spec.systemPrompt,
    projectRules: opts.projectRules,
    grants: spec.grants,
    makeContext: (signal) => ({ ...base, signal }),
    requestApproval: (req) => spec.requestApproval({ ...req, label: spec.label }),
    events: {
      toolCall: (c) => {
        toolCalls++;
        opts.onProgress?.({ toolCallId, label: spec.label, step: toolCalls, tool: c.name, args: c.args });
      },
      messageAdded: () => report('running'),
      usage: (u) => opts.onUsage?.(u),
      error: (e) => void failures.push(`${e.kind}: ${e.message}`),
      approvalCancelled: (req) => spec.approvalCancelled?.(req),
    },
    log: opts.log,
  });
  const onAbort = (): void => void child.stop();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  try {
    if (!ctx.signal.aborted) {
      child.send(spec.task);
      await child.idle();
    }
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
  }
  const last = child.messages.at(-1);
  const answer = last?.role === 'assistant' && typeof last.content === 'string' ? last.content : '';
  const status = ctx.signal.aborted ? 'cancelled' : failures.length > 0 && answer === '' ? 'error' : 'ok';
  report(status);
  if (status === 'cancelled') throw new ToolError('cancelled', 'The subagent was stopped.');
  if (status === 'error') {
    throw new ToolError(failures[0].startsWith('step_limit') ? 'timeout' : 'network_error', `The subagent failed: ${failures.join('; ')}`);
  }
  const full = failures.length > 0 ? `${answer}\n\n[subagent: ${failures.join('; ')}]` : answer;
  const capped = capText(full);
  if (!capped.truncated) return { answer: full, toolCalls };
  const notice = truncationNotice(capped, "the subagent's answer was cut at the output cap; ask for a shorter report, or have it write long results to a file");
  return { answer: `${capped.text}${capped.text.endsWith('\n') ? '' : '\n'}${notice}`, toolCalls, truncated: true };
}

/** The parent's registry as a child sees it: only `allowed` exists; any other name is an unknown tool. */
class ScopedRegistry extends ToolRegistry {
  constructor(
    private readonly parent: ToolRegistry,
    private readonly allowed: ReadonlySet<string>,
  ) {
    super();
  }

  override add(): void {
    throw new Error('a subagent registry is read-only');
  }

  override get(name: string): ToolDefinition | undefined {
    return this.allowed.has(name) ? this.parent.get(name) : undefined;
  }

  override names(): string[] {
    return this.parent.names().filter((n) => this.allowed.has(n));
  }

  override specs(filter?: (d: ToolDefinition) => boolean): ToolSpec[] {
    return this.parent.specs((d) => this.allowed.has(d.name) && (filter ? filter(d) : true));
  }

  override call(name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
    // An unknown name falls through to the base class: invalid_arguments listing this child's tools.
    return this.allowed.has(name) ? this.parent.call(name, args, ctx) : super.call(name, args, ctx);
  }
}

/** The session's task list is the main agent's: a child's list would replace it in the chat. */
const PARENT_ONLY = new Set(['todo_write', 'todo_read']);

/** Tools a child may be given: the parent's offered tools, never a subagent tool (no nesting). */
function childCandidates(registry: ToolRegistry, offered: (d: ToolDefinition) => boolean): ToolDefinition[] {
  return registry
    .names()
    .map((n) => registry.get(n))
    .filter((d): d is ToolDefinition => d !== undefined && offered(d) && !isSubagentTool(d) && !PARENT_ONLY.has(d.name));
}

/** The task's first words, for labels: one line, at most ~40 characters. */
function firstWords(task: string, max = 40): string {
  const line = task.trim().split('\n')[0].replace(/\s+/g, ' ');
  if (line.length <= max) return line;
  const cut = line.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

const SUBAGENT_MARK = Symbol.for('caboose.subagent');

export function isSubagentTool(d: ToolDefinition): boolean {
  return (d as unknown as Record<symbol, unknown>)[SUBAGENT_MARK] === true;
}

/** Marks a definition so child agents never see a subagent tool (no nesting). */
function mark<T extends object>(d: T): T {
  Object.defineProperty(d, SUBAGENT_MARK, { value: true });
  return d;
}
