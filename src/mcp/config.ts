/**
 * The `mcp` part of the host configuration: which MCP servers to start and how far to trust their tools.
 * Only zod here (no SDK): the schema is part of host.init's params.
 */
import { z } from 'zod';

/** Server names become the prefix of tool names (`<server>__<tool>`): letters, digits, `-`, single `_`. */
export const MCP_SERVER_NAME_RE = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$/;
export const MCP_SERVER_NAME_MAX = 32;
export const DEFAULT_MCP_START_TIMEOUT_MS = 10_000;
export const DEFAULT_MCP_CALL_TIMEOUT_MS = 60_000;

/** Lua sends an empty table as an empty array: read it as an empty object where an object is meant. */
const dict = <T extends z.ZodType>(value: T) => z.preprocess((v) => (Array.isArray(v) && v.length === 0 ? {} : v), z.record(z.string(), value));

const common = {
  /** true: every tool of the server runs without asking; a list: those tools (their MCP names). */
  allow: z.union([z.boolean(), z.array(z.string().min(1))]).optional(),
  disabled: z.boolean().optional(),
  /** Per tool call. */
  timeout_ms: z.number().int().positive().optional(),
  /** The server's model requests (sampling): 'ask' the user each time (default), 'allow' them, or 'deny'. */
  sampling: z.enum(['ask', 'allow', 'deny']).optional(),
};

export const McpStdioServerSchema = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: dict(z.string()).optional(),
    cwd: z.string().min(1).optional(),
    /** Run the server inside the same OS sandbox as the agent's commands (:help caboose-sandbox). */
    sandbox: z.boolean().optional(),
    ...common,
  })
  .strict();

export const McpHttpServerSchema = z
  .object({
    url: z.string().regex(/^https?:\/\/\S+$/, 'an http(s) URL'),
    headers: dict(z.string()).optional(),
    ...common,
  })
  .strict();

export const McpServerSchema = z.union([McpStdioServerSchema, McpHttpServerSchema]);

export const McpServerNameSchema = z
  .string()
  .max(MCP_SERVER_NAME_MAX)
  .regex(MCP_SERVER_NAME_RE, 'letters, digits, "-" and single "_" (starting with a letter or digit)');

export const McpConfigSchema = z
  .object({
    servers: dict(McpServerSchema).superRefine((servers, ctx) => {
      for (const name of Object.keys(servers)) {
        const r = McpServerNameSchema.safeParse(name);
        if (!r.success) ctx.addIssue({ code: 'custom', path: [name], message: `invalid server name "${name}": ${r.error.issues[0]?.message ?? 'invalid'}` });
      }
    }),
    /** How long a server may take to start (spawn or connect, initialize, list its tools). */
    start_timeout_ms: z.number().int().positive(),
  })
  .partial();

export type McpConfig = z.infer<typeof McpConfigSchema>;
export type McpServerConfig = z.infer<typeof McpServerSchema>;
export type McpStdioServerConfig = z.infer<typeof McpStdioServerSchema>;
export type McpHttpServerConfig = z.infer<typeof McpHttpServerSchema>;

export function isStdioServer(c: McpServerConfig): c is McpStdioServerConfig {
  return 'command' in c;
}

/** What the server is, in a few words: `stdio: npx -y server-x` or `http: https://…`. */
export function describeTarget(c: McpServerConfig): string {
  if (isStdioServer(c)) return `stdio: ${[c.command, ...(c.args ?? [])].join(' ')}`;
  return `http: ${c.url}`;
}
