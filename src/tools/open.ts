import { ToolRegistry } from './registry';
import type { ReviewSelection } from '../workspace/review';
import type { ToolContext, ToolDefinition, ToolResult, ToolSpec } from './tool';
import { FILE_TOOLS, FILE_WRITE_TOOL_NAMES } from './file-tools';
import { FileWorkspace, type WorkspaceOptions } from '../workspace/workspace';
import { COMMAND_TOOL_NAMES, CommandAudit } from './command-audit';
import type { ToolErrorInfo } from '../workspace/errors';
import type { AuditVerification, TrashEntry } from '../store';
import { EXPECTED_SHA_REQUIRED } from '../workspace/tool-support';

/**
 * The file tools' registry. Besides the shared validation, it audits write attempts refused for invalid
 * arguments (they never reach the tool) and every call of a command tool added to it (bash: run, failed or
 * refused, with the files it changed); `list()` gives the definitions to merge into another registry.
 */
export class FileToolRegistry extends ToolRegistry {
  private readonly commands: CommandAudit;

  constructor(private readonly ws: FileWorkspace) {
    super([...FILE_TOOLS]);
    this.commands = new CommandAudit(ws);
  }

  list(): ToolDefinition[] {
    return this.names().map((n) => this.get(n)!);
  }

  override async call(name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
    const def = this.get(name);
    if (def?.auditDetails) return this.auditedCall(def, name, args, ctx);
    if (def && COMMAND_TOOL_NAMES.has(name)) {
      const valid = def.parameters.safeParse(args ?? {}).success;
      return this.commands.run(name, args, valid, () => super.call(name, args, ctx), ctx.log);
    }
    const result = await super.call(name, args, ctx);
    if (!result.ok && result.error.kind === 'invalid_arguments' && missingSha(result.error.details)) {
      result.error.suggestedAction = 'Call read_file on the file, then call this tool again with expectedSha256 set to the sha256 it returned.';
    }
    if (!result.ok && result.error.kind === 'invalid_arguments' && FILE_WRITE_TOOL_NAMES.has(name) && !result.error.path) {
      const a = (args ?? {}) as Record<string, unknown>;
      const p = typeof a.path === 'string' ? a.path : typeof a.from === 'string' ? a.from : null;
      this.ws.recordAudit(name, 'invalid', { path: p, toPath: typeof a.to === 'string' ? a.to : null, beforeSha256: null, afterSha256: null, diff: null }, false, 'invalid_arguments');
    }
    return result;
  }

  override refused(name: string, args: unknown, error: ToolErrorInfo): void {
    const def = this.get(name);
    try {
      if (def?.auditDetails) this.recordCall(def, name, args, 'refused', error.kind, {});
      else if (COMMAND_TOOL_NAMES.has(name)) this.commands.refused(name, args, error);
    } catch {
      // the audit database is gone (closed workspace): the refusal itself still reaches the model
    }
  }

  /** A tool that declares `auditDetails` (MCP tools): one row per call, whatever its outcome. */
  private async auditedCall(def: ToolDefinition, name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
    const t0 = Date.now();
    const result = await super.call(name, args, ctx);
    const refused = !result.ok && result.error.kind === 'invalid_arguments';
    try {
      this.recordCall(def, name, args, refused ? 'refused' : 'call', result.ok ? null : result.error.kind, refused ? {} : { durationMs: Date.now() - t0 });
    } catch (err) {
      ctx.log?.('error', 'could not write the audit row of a tool call', { tool: name, error: err instanceof Error ? err.message : String(err) });
    }
    return result;
  }

  private recordCall(def: ToolDefinition, name: string, args: unknown, operation: string, errorKind: ToolErrorInfo['kind'] | null, extra: object): void {
    const draft = { path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null };
    this.ws.recordAudit(name, operation, draft, errorKind === null, errorKind, { ...def.auditDetails?.(args), ...extra });
  }
}

/** The zod issues (see registry.call) include a missing expectedSha256. */
function missingSha(details: unknown): boolean {
  const issues = (details as { issues?: { path: string; message: string }[] } | undefined)?.issues ?? [];
  return issues.some((i) => i.path === 'expectedSha256' && i.message === EXPECTED_SHA_REQUIRED);
}

export type OpenWorkspaceOptions = WorkspaceOptions;

export interface OpenedWorkspace {
  /** Name, description, JSON schema and policy of each file tool (what the model is sent). */
  tools: ToolSpec[];
  /** Validates and runs a tool; `{ ok: true, data }` or `{ ok: false, error }`, never throws. */
  call(name: string, args: unknown, opts?: { signal?: AbortSignal; review?: ReviewSelection }): Promise<ToolResult>;
  close(): void;
  /** Re-checks this workspace's audit log hash chain (see verifyAuditLog). */
  verifyAuditLog(): AuditVerification;
  /** Files in the trash, newest first (for restore_file / :CabooseRestore). */
  listTrash(): TrashEntry[];
  workspace: FileWorkspace;
  registry: FileToolRegistry;
}

/** Opens the workspace file layer: `<dataDir>/caboose.sqlite` (audit, trash) and the file tools. */
export function openWorkspace(opts: OpenWorkspaceOptions): OpenedWorkspace {
  const workspace = new FileWorkspace(opts);
  const registry = new FileToolRegistry(workspace);
  void workspace.trash.purge().catch(() => undefined);
  // Checkpoints are kept as long as the trash keeps deleted files.
  try {
    workspace.store.checkpoints.purge(new Date(Date.now() - workspace.trash.retentionDays * 86_400_000).toISOString());
  } catch {
    // a locked or read-only database: old checkpoints stay until the next start
  }
  return {
    tools: registry.specs(),
    workspace,
    registry,
    call(name, args, callOpts = {}) {
      const ctx: ToolContext = {
        signal: callOpts.signal ?? new AbortController().signal,
        workspace,
        sessionId: workspace.sessionId,
        ...(callOpts.review ? { review: callOpts.review } : {}),
      };
      return registry.call(name, args, ctx);
    },
    verifyAuditLog: () => workspace.audit.verify(),
    listTrash: () => workspace.trash.list(),
    close: () => workspace.close(),
  };
}
