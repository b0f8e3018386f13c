import { z } from 'zod';
import { PERMISSION_MODES } from '../tools/permissions';
import { McpConfigSchema } from '../mcp/config';
import { hostConfigFieldsAfterMcp, hostConfigFieldsBeforeMcp, initParamsFields } from './protocol-config';

export { ProviderConfigSchema, ModelOptionsSchema, NamedProviderSchema, RulesConfigSchema, ContextItemParams, SendParams } from './protocol-config';

export { METHODS, EVENTS } from './protocol-names';


export const HostConfigSchema = z
  .object({ ...hostConfigFieldsBeforeMcp, mcp: McpConfigSchema.optional().nullable(), ...hostConfigFieldsAfterMcp })
  .partial();

export type HostConfig = z.infer<typeof HostConfigSchema>;

export const InitParams = z.object(initParamsFields(HostConfigSchema.default({})));

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
