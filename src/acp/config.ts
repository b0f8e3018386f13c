/** The `acp` part of the host config: external agents spoken to over the Agent Client Protocol. */
import { z } from 'zod';

export const AcpAgentConfigSchema = z.object({
  /** The program and its first arguments (Lua's `command = { 'npx', '@zed-industries/codex-acp' }`). */
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  /** Added to the host's environment (API keys, base URLs). Never logged. */
  env: z.record(z.string(), z.string()).optional(),
  /** How long `initialize` and `session/new` may take (default 30 s: npx may download the agent). */
  start_timeout_ms: z.number().int().positive().optional(),
});

export const AcpConfigSchema = z
  .object({
    agents: z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/), AcpAgentConfigSchema),
  })
  .partial();

export type AcpAgentConfig = z.infer<typeof AcpAgentConfigSchema>;
export type AcpConfig = z.infer<typeof AcpConfigSchema>;

/** The name the chat uses for the built-in agent (`:CabooseAgent caboose`). */
export const BUILTIN_AGENT = 'caboose';
