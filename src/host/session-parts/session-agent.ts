/** The agent of one chat: the loop (src/agent/loop.ts) configured from the host's settings and the session's parts. */
import { Agent, type AgentEvents } from '../../agent/loop';
import { DEFAULT_CONTEXT_WINDOW, knownContextWindow } from '../../agent/context';
import type { ModelClient } from '../../agent/provider';
import { isOffered } from '../../tools/offered';
import type { ToolRegistry } from '../../tools/registry';
import type { Workspace } from '../../workspace/workspace';
import type { Logger } from '../logger';
import { resolveContextWindow } from '../model-list';
import type { HostConfig } from '../protocol';
import type { ResolvedProvider } from '../provider-config';
import type { ChatSession } from '../session';
import type { SessionRecorder } from '../session-recorder';

export interface ChatAgentOptions {
  config: HostConfig;
  cwd: string;
  /** The provider the session started with. */
  provider: ResolvedProvider;
  /** The provider now (:CabooseModel may have switched it). */
  current(): ResolvedProvider;
  client: ModelClient;
  registry: ToolRegistry;
  /** "Always" grants, shared with the agent subagents. */
  grants: Set<string>;
  projectRules(): string | undefined;
  /** Awaited before each model request (MCP servers start). */
  prepareTools?: (signal: AbortSignal) => Promise<void>;
  recorder: Pick<SessionRecorder, 'storedId' | 'archive'>;
  workspace: Workspace;
  session: Pick<ChatSession, 'id' | 'ask' | 'requestApproval'>;
  events: AgentEvents;
  log: Logger;
}

export function createChatAgent(o: ChatAgentOptions): Agent {
  const { config, session, log } = o;
  return new Agent({
    provider: o.client,
    registry: o.registry,
    mode: config.mode ?? 'create',
    stepLimit: config.step_limit ?? 50,
    maxQueue: config.max_queue ?? 3,
    cwd: o.cwd,
    systemPrompt: config.system_prompt ?? undefined,
    projectRules: o.projectRules,
    toolFilter: isOffered,
    grants: o.grants,
    ...(o.provider.media ? { acceptsMedia: o.provider.media } : {}),
    ...(o.prepareTools ? { prepareTools: o.prepareTools } : {}),
    ...contextWindowOptions(o.provider, o.current, log),
    storedRef: o.recorder.storedId,
    archive: o.recorder.archive,
    makeContext: (signal) => ({
      signal,
      workspace: o.workspace,
      sessionId: session.id,
      ask: session.ask,
      reportDiagnostics: true,
      log: (level, msg, meta) => log[level]('%s %j', msg, meta ?? {}),
    }),
    requestApproval: session.requestApproval,
    events: o.events,
    log: {
      debug: (m: string, ...a: unknown[]) => log.debug(m, ...a),
      info: (m: string, ...a: unknown[]) => log.info(m, ...a),
      warn: (m: string, ...a: unknown[]) => log.warn(m, ...a),
      error: (m: string, ...a: unknown[]) => log.error(m, ...a),
    },
  });
}

/**
 * Compaction is always on: the configured window, else a well-known model's, else (asked only when the
 * conversation gets long) the server's model list, else a conservative default.
 */
export function contextWindowOptions(
  p: ResolvedProvider,
  current: () => ResolvedProvider,
  log: Pick<Logger, 'info'>,
): { contextWindow: number; contextWindowLookup?: () => Promise<number> } {
  return {
    contextWindow: p.contextWindow ?? knownContextWindow(p.model) ?? DEFAULT_CONTEXT_WINDOW,
    contextWindowLookup:
      p.contextWindow || knownContextWindow(p.model)
        ? undefined
        : async () => {
            const w = await resolveContextWindow(current());
            log.info('context window %d tokens (%s)', w.tokens, w.source);
            return w.tokens;
          },
  };
}

/** The window after :CabooseModel switched to `p`. */
export function contextWindowOf(p: ResolvedProvider): number {
  return p.contextWindow ?? knownContextWindow(p.model) ?? DEFAULT_CONTEXT_WINDOW;
}
