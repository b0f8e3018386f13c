import { z } from 'zod';
import { PERMISSION_MODES } from '../tools/permissions';
import { isValidRulesPattern } from '../workspace/rules';
import { McpConfigSchema } from '../mcp/config';
import { AcpConfigSchema } from '../acp/config';
import { SandboxConfigSchema } from '../workspace/sandbox/policy';

export { METHODS, EVENTS } from './protocol-names';


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

export const HostConfigSchema = z
  .object({
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
    mcp: McpConfigSchema.optional().nullable(),
    acp: AcpConfigSchema.optional().nullable(),
    sandbox: SandboxConfigSchema.optional().nullable(),
  })
  .partial();

export type HostConfig = z.infer<typeof HostConfigSchema>;

export const InitParams = z.object({
  config: HostConfigSchema.default({}),
  cwd: z.string().min(1),
  data_dir: z.string().min(1),
  log_file: z.string().optional().nullable(),
  log_level: z.enum(['debug', 'info', 'warn', 'error', 'off']).optional(),
  nvim_version: z.string().optional(),
  /** Neovim's OPENAI_API_KEY: sent here, never through the host's environment (issue 18, item 12). */
  env_api_key: z.string().optional().nullable(),
});

/** :checkhealth caboose: `cwd` is Neovim's current directory (the rules a new conversation there would read). */
export const HealthParams = z.object({ cwd: z.string().min(1).optional().nullable() });
/** model.list: `refresh` asks each provider's /models again (else a cached list is used). */
export const ModelListParams = z.object({ refresh: z.boolean().optional().nullable() });
/** model.set: `provider` may be omitted with a single provider (or to keep the current one). */
export const ModelSetParams = z.object({ provider: z.string().min(1).max(200).optional().nullable(), model: z.string().min(1).max(500) });

export const SessionListParams = z.object({ query: z.string().max(1000).optional().nullable() });
/** `scope`: the chat's number for the view it switches to (rpc.lua leave_scope): the session it opens is tagged with it. */
const Scope = z.number().int().nonnegative().optional().nullable();
export const SessionOpenParams = z.object({ id: z.string().min(1).max(200), scope: Scope });
const FilesChoice = z.enum(['ask', 'rewind', 'keep']).optional().nullable();
/** :CabooseRetry [model]: `files` says what to do with the files the dropped turn changed (default: ask). */
export const SessionRetryParams = z.object({ model: z.string().min(1).max(500).optional().nullable(), files: FilesChoice, force: z.boolean().optional().nullable() });
/** Edit-and-resend: the chat's `index`-th user message (1-based), whose text the chat shows as `text`. */
export const SessionForkParams = z.object({
  index: z.number().int().positive(),
  text: z.string().max(1_000_000),
  files: FilesChoice,
  force: z.boolean().optional().nullable(),
});
export const SessionRenameParams = z.object({ title: z.string().min(1).max(1000) });
export const SessionDeleteParams = z.object({ id: z.string().min(1).max(200), scope: Scope });
export const ResetParams = z.object({ cwd: z.string().min(1).optional(), scope: Scope });
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
/** :CabooseAgent: `name` an `acp.agents` entry or 'caboose' (the built-in agent); `new_chat` always starts a new chat. */
export const AgentSelectParams = z.object({ name: z.string().min(1).max(64), new_chat: z.boolean().optional().nullable(), scope: Scope });
export const SetModeParams = z.object({ mode: z.enum(PERMISSION_MODES) });
/** A hunk review's answer: per file, the sha256 the review was shown for and the hunks (1-based) rejected. */
export const ReviewSelectionParams = z.object({
  files: z
    .array(
      z.object({
        path: z.string().min(1),
        before_sha256: z.string().nullable().optional(),
        rejected: z.array(z.object({ hunk: z.number().int().min(1), reason: z.string().max(10_000).optional().nullable() })).max(10_000),
      }),
    )
    .max(1000),
});
export const ApprovalResolveParams = z.object({
  id: z.string(),
  decision: z.enum(['once', 'always', 'reject']),
  reason: z.string().optional().nullable(),
  review: ReviewSelectionParams.optional().nullable(),
});
/** Without `tool`, every standing "always" grant of the session is revoked. */
export const GrantsRevokeParams = z.object({ tool: z.string().min(1).optional().nullable() });
export const AskResolveParams = z.object({ id: z.string(), answer: z.string().nullable().optional() });
export const TrashRestoreParams = z.object({ trash_id: z.string(), target_path: z.string().optional().nullable() });
export const SelectionEditParams = z.object({
  id: z.number().int(),
  instruction: z.string().min(1).max(100_000),
  path: z.string().optional().nullable(),
  filetype: z.string().optional().nullable(),
  start_line: z.number().int().min(1),
  end_line: z.number().int().min(1),
  text: z.string().max(4_000_000),
  before: z.string().max(100_000).optional().nullable(),
  after: z.string().max(100_000).optional().nullable(),
});
export const SelectionEditCancelParams = z.object({ id: z.number().int() });
export const ToolCallParams = z.object({ name: z.string().min(1), args: z.unknown().optional() });
export const CheckpointDiffParams = z.object({ id: z.number().int().positive() });
/** Without `id`, the newest checkpoint not yet rewound; `force` rewinds over files changed since. */
export const CheckpointRewindParams = z.object({ id: z.number().int().positive().optional().nullable(), force: z.boolean().optional().nullable() });
/** :CabooseAudit: the last `limit` rows about the workspace at `cwd` (default: the host's cwd). */
export const AuditListParams = z.object({ limit: z.number().int().min(1).max(10_000).optional().nullable(), cwd: z.string().min(1).optional().nullable() });
export const AuditDiffParams = z.object({ id: z.number().int().min(1) });
/** :CabooseMcp: the servers and their tools; `start` starts the servers not started yet first. */
export const McpListParams = z.object({ start: z.boolean().optional().nullable() });
export const McpRestartParams = z.object({ name: z.string().min(1).max(100) });
