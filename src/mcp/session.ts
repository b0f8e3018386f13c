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
export function attachMcp(pool: McpPool, registry: ToolRegistry, log: McpPoolLogger, notice: (text: string) => void): McpSessionHooks {
  const source = new McpToolSource(pool, { log: (level, msg) => log[level]('%s', msg) });
  registry.addSource(() => source.definitions());
  const detach = pool.onChange((c) => {
    const text = mcpNotice(c);
    if (text) notice(text);
  });
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
    try {
      await Promise.race([pool.ensureStarted({ restartDied: restart }), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };
  return { prepare, detach, turnStarted };
}
