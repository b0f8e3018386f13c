/**
 * The schemas of host.init and send: what the first-request bundle (first-main.ts, issue 24) validates
 * before the rest of the host loads. protocol.ts builds the host's full schemas from these parts; the
 * first-request bundle builds host.init's with `mcp` allowed only without servers (NoMcpServersSchema:
 * the first-request path does not run with MCP servers, and a config naming some is left to the host,
 * which validates it with the MCP servers' schema), so it does not build the MCP servers' schemas.
 */
import { z } from 'zod';
import { PERMISSION_MODES } from '../tools/permissions';
import { isValidRulesPattern } from '../workspace/rules';
import { AcpConfigSchema } from '../acp/config';
import { SandboxConfigSchema } from '../workspace/sandbox/policy';

const optStr = z.string().optional().nullable();

export const ProviderConfigSchema = z
  .object({
    base_url: optStr,
    api_key: optStr,
    api_key_cmd: z.union([z.string(), z.array(z.string())]).optional().nullable(),
    model: optStr,
    max_tokens: z.number().int().positive().optional().nullable(),
    context_window: z.number().int().positive().optional().nullable(),
    headers: z.record(z.string(), z.string()).optional().nullable(),
    timeout_ms: z.number().int().positive().optional().nullable(),
    max_retries: z.number().int().min(0).optional().nullable(),
    retry_base_delay_ms: z.number().int().min(0).optional().nullable(),
    media: z.array(z.enum(['image', 'audio'])).optional().nullable(),
    /** false: the model cannot read images; images the user attaches are not sent (the text is). */
    vision: z.boolean().optional().nullable(),
  })
  .partial();

/**
 * Per-model settings: its context window, and options sent only to it (`reasoning_effort`, `temperature`,
 * `max_tokens`, or any other top-level request field).
 */
export const ModelOptionsSchema = z
  .object({
    context_window: z.number().int().positive().optional().nullable(),
    max_tokens: z.number().int().positive().optional().nullable(),
    reasoning_effort: z.string().optional().nullable(),
    temperature: z.number().min(0).max(2).optional().nullable(),
    /** false: this model cannot read images (kept here, never sent as a request field). */
    vision: z.boolean().optional().nullable(),
  })
  .catchall(z.union([z.string(), z.number(), z.boolean(), z.null()]));

/** A named provider (issue 21): the single provider's fields, its env key source and its models. */
export const NamedProviderSchema = ProviderConfigSchema.extend({
  /** Name of an environment variable holding the key. */
  api_key_env: optStr,
  /** Models offered in the picker besides the server's list: names, or names → their options. */
  models: z.union([z.array(z.string()), z.record(z.string(), ModelOptionsSchema)]).optional().nullable(),
}).partial();

/** `false` turns project rules off; each key left out keeps its default (src/workspace/rules.ts). */
export const RulesConfigSchema = z.union([
  z.literal(false),
  z
    .object({
      files: z.array(z.string().refine(isValidRulesPattern, 'a name or glob relative to the folder searched (no leading "/", no "..")')).max(100),
      max_bytes_per_file: z.number().int().positive(),
      max_total_bytes: z.number().int().positive(),
    })
    .partial(),
]);

/** The host config's fields before `mcp`, in their order. */
export const hostConfigFieldsBeforeMcp = {
  /** The single-table form, or the name of the default provider among `providers`. */
  provider: z.union([z.string().min(1), ProviderConfigSchema]).optional(),
  providers: z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), NamedProviderSchema).optional().nullable(),
  mode: z.enum(PERMISSION_MODES).optional(),
  step_limit: z.number().int().positive().optional(),
  max_queue: z.number().int().min(0).optional(),
  unsaved_buffers: z.enum(['edit_buffer', 'refuse']).optional(),
  allow_readonly_writes: z.boolean().optional(),
  hard_links: z.enum(['refuse', 'in_place']).optional(),
  deny_globs: z.array(z.string()).optional(),
  secret_globs: z.array(z.string()).optional(),
  trash_retention_days: z.number().positive().optional(),
  bash_timeout_ms: z.number().int().positive().optional(),
  fetch_allow_hosts: z.array(z.string()).optional(),
  web_search: z.object({ searxng_url: z.string() }).optional().nullable(),
  system_prompt: z.string().optional().nullable(),
  rules: RulesConfigSchema.optional().nullable(),
  diagnostics: z
    .object({ enabled: z.boolean(), wait_ms: z.number().positive(), settle_ms: z.number().min(0) })
    .partial()
    .optional(),
};

/** The host config's fields after `mcp`. */
export const hostConfigFieldsAfterMcp = {
  acp: AcpConfigSchema.optional().nullable(),
  sandbox: SandboxConfigSchema.optional().nullable(),
};

/** `mcp` with no servers (a config naming servers fails here: see the file's comment). */
export const NoMcpServersSchema = z
  .object({
    servers: z.preprocess((v) => (Array.isArray(v) && v.length === 0 ? {} : v), z.record(z.string(), z.never())),
    start_timeout_ms: z.number().int().positive(),
  })
  .partial();

/** host.init's fields around its `config` schema. */
export const initParamsFields = <C extends z.ZodType>(config: C) => ({
  config,
  cwd: z.string().min(1),
  data_dir: z.string().min(1),
  log_file: z.string().optional().nullable(),
  log_level: z.enum(['debug', 'info', 'warn', 'error', 'off']).optional(),
  nvim_version: z.string().optional(),
  /** Neovim's OPENAI_API_KEY: sent here, never through the host's environment (issue 18, item 12). */
  env_api_key: z.string().optional().nullable(),
});

const n = z.number().int().positive().optional().nullable();
export const ContextItemParams = z.object({
  kind: z.enum(['buffer', 'selection', 'file', 'attachment', 'fetch', 'image']),
  url: z.string().max(8192).optional().nullable(),
  path: z.string().default(''),
  /** The file's full name (a buffer's, as Neovim has it): what the workspace's rules judge (`path` is relative to Neovim's cwd, which may have moved). */
  abs: z.string().max(8192).optional().nullable(),
  /** What the chat label names (`#buffers`, `#diagnostics`, `/file`, …); the kind's own tag without it. */
  name: z.string().max(200).optional().nullable(),
  filetype: z.string().optional().nullable(),
  text: z.string().max(4_000_000).optional().nullable(),
  start_line: n,
  end_line: n,
  modified: z.boolean().optional().nullable(),
});
export const SendParams = z.object({ text: z.string().min(1), context: z.array(ContextItemParams).max(50).optional().nullable() });
