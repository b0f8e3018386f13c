/**
 * `explore` / `agent`: a tool that runs a child Agent on a focused task with read-only tools and returns
 * its final answer as the tool result. The child shares the parent's model client and tool registry,
 * runs in plan mode (only `read`/`interactive` policies), cannot spawn further subagents, and is stopped
 * when the parent's call is cancelled.
 */
import { z } from 'zod';
import { ToolError } from '../tools/errors';
import type { ToolRegistry } from '../tools/registry';
import type { ToolDefinition } from '../tools/tool';
import { isOffered } from '../tools/offered';
import { Agent, type AgentLogger } from './loop';
import type { ModelClient, ProviderConfig } from './provider';

export interface SubagentToolOptions {
  /** Tool id the model calls. Default 'explore'. */
  name?: string;
  provider: ProviderConfig | ModelClient;
  /** The parent's registry; the child only sees its `read` tools (and never another subagent tool). */
  registry: ToolRegistry;
  /** Model calls the child may make. Default 15. */
  stepLimit?: number;
  log?: AgentLogger;
}

const parameters = z.object({
  task: z.string().min(1).describe('What to find out, precisely: the question, where to look, and what the answer should contain.'),
});

export interface SubagentResult {
  answer: string;
  toolCalls: number;
}

const CHILD_PROMPT = [
  'You are a research subagent of Caboose, a coding assistant inside Neovim.',
  'You have read-only tools. Investigate the task you are given, then answer with a concise, factual report:',
  'file paths, symbols and line numbers that matter, and what you found. Do not propose edits unless asked.',
].join('\n');

export function createSubagentTool(opts: SubagentToolOptions): ToolDefinition<typeof parameters, SubagentResult> {
  const name = opts.name ?? 'explore';
  return mark({
    name,
    description:
      'Spawn a subagent with read-only tools (read, list, search) to explore the codebase and answer one focused question. ' +
      'Use it for broad searches whose intermediate output you do not need; it returns only its final report.',
    parameters,
    policy: 'read',
    async execute(args, ctx) {
      let toolCalls = 0;
      const failures: string[] = [];
      const child = new Agent({
        provider: opts.provider,
        registry: opts.registry,
        toolFilter: (d) => d.policy === 'read' && !isSubagentTool(d) && isOffered(d),
        mode: 'plan',
        stepLimit: opts.stepLimit ?? 15,
        maxQueue: 0,
        systemPrompt: CHILD_PROMPT,
        makeContext: (signal) => ({ ...ctx, signal }),
        requestApproval: async () => ({ decision: 'reject', reason: 'subagents cannot ask for approval' }),
        events: {
          toolCall: () => void toolCalls++,
          error: (e) => void failures.push(`${e.kind}: ${e.message}`),
        },
        log: opts.log,
      });
      const onAbort = (): void => void child.stop();
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      try {
        child.send(args.task);
        await child.idle();
      } finally {
        ctx.signal.removeEventListener('abort', onAbort);
      }
      if (ctx.signal.aborted) throw new ToolError('cancelled', 'The subagent was stopped.');
      const last = child.messages.at(-1);
      const answer = last?.role === 'assistant' && typeof last.content === 'string' ? last.content : '';
      if (failures.length > 0 && answer === '') {
        throw new ToolError(failures[0].startsWith('step_limit') ? 'timeout' : 'network_error', `The subagent failed: ${failures.join('; ')}`);
      }
      return { answer: failures.length > 0 ? `${answer}\n\n[subagent: ${failures.join('; ')}]` : answer, toolCalls };
    },
  });
}

const SUBAGENT_MARK = Symbol.for('caboose.subagent');

function isSubagentTool(d: ToolDefinition): boolean {
  return (d as unknown as Record<symbol, unknown>)[SUBAGENT_MARK] === true;
}

/** Marks a definition so child agents never see a subagent tool (no nesting). */
function mark<T extends object>(d: T): T {
  Object.defineProperty(d, SUBAGENT_MARK, { value: true });
  return d;
}
