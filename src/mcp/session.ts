/** One session's view of the host's MCP servers (see attachMcp). */
import type { ToolRegistry } from '../tools/registry';
import type { McpPool, McpPoolLogger } from './client-pool';
import { mcpNotice } from './status';
import { McpToolSource } from './tools';

export interface McpSessionHooks {
  /** Awaited before each model request (the agent's prepareTools). */
  prepare(signal: AbortSignal): Promise<void>;
  /** A user message's turn begins: servers that died may start again. */
  turnStarted(): void;
  /** The session ends: no more notices. */
  detach(): void;
}

/**
 * The MCP servers' tools join the registry (as they come and go); their state changes become chat notices;
 * `prepare` starts them before a model request (and gives up waiting on stop()). A server that died is
 * started again at the first request of the next user message: within the turn that saw it die, the model
 * was told its tools are unavailable.
 */
const seconds = (ms: number): string => (ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(1));

/** How long the first reply may wait for servers before the chat says it is waiting for them. */
export const SLOW_START_NOTICE_MS = 1000;

export function attachMcp(
  pool: McpPool,
  registry: ToolRegistry,
  log: McpPoolLogger,
  notice: (text: string) => void,
  progress?: (toolCallId: string, text: string) => void,
): McpSessionHooks {
  const source = new McpToolSource(pool, { log: (level, msg) => log[level]('%s', msg), ...(progress ? { progress } : {}) });
  registry.addSource(() => source.definitions());
  const detach = pool.onChange((c) => {
    const text = mcpNotice(c);
    if (text) notice(text);
  });
  // Servers that failed before this session existed (:CabooseMcp or :checkhealth started them first, or
  // the previous session saw them fail): its chat names them too.
  for (const st of pool.status()) {
    if (st.state === 'failed') notice(`MCP server '${st.name}' is unavailable: ${st.reason ?? 'unknown reason'} (:CabooseMcp restart ${st.name} tries again)`);
  }
  let restartDied = false;
  const turnStarted = (): void => {
    restartDied = true;
  };
  const prepare = async (signal: AbortSignal): Promise<void> => {
    const restart = restartDied;
    restartDied = false;
    let onAbort: () => void = () => undefined;
    const aborted = new Promise<void>((resolve) => {
      onAbort = resolve;
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // A server that takes its time (npx fetching a package, say) holds the reply: the chat says why.
    const slow = setTimeout(() => {
      const names = pool.status().filter((st) => st.state === 'starting').map((st) => `'${st.name}'`);
      if (names.length > 0) notice(`waiting for MCP server${names.length === 1 ? '' : 's'} ${names.join(', ')} to start (at most ${seconds(pool.startTimeoutMs)} s; :CabooseStop stops waiting)`);
    }, SLOW_START_NOTICE_MS);
    try {
      await Promise.race([pool.ensureStarted({ restartDied: restart }), aborted]);
    } finally {
      clearTimeout(slow);
      signal.removeEventListener('abort', onAbort);
    }
  };
  return { prepare, detach, turnStarted };
}
