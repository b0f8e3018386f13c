/**
 * The audit of shell commands: one hash-chained row per bash call (run, failed or refused) with the command
 * line, cwd, exit status and the workspace files it created, changed or deleted, as far as a bounded
 * before/after scan of the workspace can tell.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ErrorKind, ToolErrorInfo } from '../workspace/errors';
import type { ToolContext, ToolResult } from './tool';
import { diffScans, type ScanLimits, type WorkspaceScan } from '../workspace/scan';
import type { FileWorkspace } from '../workspace/workspace';

/** Tools whose calls are audited as commands. */
export const COMMAND_TOOL_NAMES: ReadonlySet<string> = new Set(['bash']);

/** Paths kept per list (created, changed, deleted) in a row; the rest are counted in `filesOmitted`. */
export const AUDIT_MAX_LISTED_FILES = 100;
/** Longest command line stored. */
export const AUDIT_MAX_COMMAND_CHARS = 8 * 1024;

/** What a command's audit row holds in its `details` JSON. */
export interface CommandAuditDetails {
  command: string;
  /** Workspace-relative working directory ('.' for the root), as asked. */
  cwd: string;
  /** Exit code; null when a signal ended the shell. Absent when the command did not run to its end. */
  exitCode?: number | null;
  signal?: string;
  timedOut?: boolean;
  durationMs?: number;
  files?: { created: string[]; changed: string[]; deleted: string[] };
  /** Paths beyond AUDIT_MAX_LISTED_FILES per list. */
  filesOmitted?: number;
  /** 'incomplete': a scan limit cut the listing, files may be missing; 'failed': no file list. */
  scan?: 'complete' | 'incomplete' | 'failed';
}

interface BashData {
  exitCode: number | null;
  signal?: string;
  timedOut: boolean;
  durationMs: number;
}

export class CommandAudit {
  /** The last scan: the next one reuses its hashes for files whose size and mtime did not change. */
  private last: WorkspaceScan | undefined;

  constructor(
    private readonly ws: FileWorkspace,
    private readonly limits?: Partial<ScanLimits>,
  ) {}

  /**
   * Runs `exec` (the tool call) between two scans and records the row. Invalid arguments are recorded
   * without scanning: the command never starts.
   */
  async run(tool: string, args: unknown, valid: boolean, exec: () => Promise<ToolResult>, log?: ToolContext['log']): Promise<ToolResult> {
    if (!valid) {
      const result = await exec();
      this.recordSafely(log, tool, 'refused', args, result.ok ? null : result.error.kind, {});
      return result;
    }
    // During a user message's turn the files' bytes are kept from the first scan, so what the command
    // changes can be rewound with the turn's checkpoint (bounded by the scan's limits).
    const contents = this.ws.checkpoints.active ? new Map<string, { bytes: Buffer; mode: number }>() : null;
    const before = await this.scan(undefined, contents);
    const result = await exec();
    const after = before ? await this.scan(before) : undefined;
    if (contents && before && after) this.checkpoint(before, after, contents);
    const extra: Partial<CommandAuditDetails> = { ...exitOf(result), ...filesOf(before, after) };
    const errorKind: ErrorKind | null = !result.ok ? result.error.kind : extra.timedOut ? 'timeout' : null;
    this.recordSafely(log, tool, 'exec', args, errorKind, extra);
    return result;
  }

  /** A call the agent refused before it ran (blocked by the mode, rejected by the user). */
  refused(tool: string, args: unknown, error: ToolErrorInfo): void {
    this.record(tool, 'refused', args, error.kind, {});
  }

  /** The command's changes into the turn's checkpoint (files whose old bytes the first scan read). */
  private checkpoint(before: WorkspaceScan, after: WorkspaceScan, contents: Map<string, { bytes: Buffer; mode: number }>): void {
    const d = diffScans(before, after);
    const changes: { rel: string; before: Buffer | null; mode: number; afterSha256: string | null }[] = [];
    for (const rel of d.created) {
      const sha = after.files.get(rel)?.sha256;
      if (sha) changes.push({ rel, before: null, mode: 0o644, afterSha256: sha });
    }
    for (const rel of [...d.changed, ...d.deleted]) {
      const old = contents.get(rel);
      const sha = after.files.get(rel)?.sha256 ?? null;
      if (!old || sha === '') continue;
      changes.push({ rel, before: old.bytes, mode: old.mode, afterSha256: sha });
    }
    this.ws.checkpoints.recordExternal(changes);
  }

  private async scan(before: WorkspaceScan | undefined, contents: Map<string, { bytes: Buffer; mode: number }> | null = null): Promise<WorkspaceScan | undefined> {
    try {
      const onContent = contents
        ? (rel: string, bytes: Buffer) => {
            let mode = 0o644;
            try {
              mode = fs.statSync(path.join(this.ws.root, rel)).mode & 0o7777;
            } catch {
              // gone already: the default mode
            }
            contents.set(rel, { bytes, mode });
          }
        : undefined;
      // Keeping contents means reading every file now (a reused hash has no bytes to keep).
      const s = await this.ws.scanFiles({ previous: contents ? undefined : (before ?? this.last), limits: this.limits, ...(onContent ? { onContent } : {}) });
      this.last = s;
      return s;
    } catch {
      return undefined;
    }
  }

  /** The command has run: a failing audit write (database locked for long) must not lose its result. */
  private recordSafely(log: ToolContext['log'], ...a: Parameters<CommandAudit['record']>): void {
    try {
      this.record(...a);
    } catch (err) {
      log?.('error', 'could not write the audit row of a command', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  private record(tool: string, operation: string, args: unknown, errorKind: ErrorKind | null, extra: Partial<CommandAuditDetails>): void {
    const a = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
    const command = typeof a.command === 'string' ? a.command : '';
    const details: CommandAuditDetails = {
      command: command.length > AUDIT_MAX_COMMAND_CHARS ? `${command.slice(0, AUDIT_MAX_COMMAND_CHARS)}… [cut at ${AUDIT_MAX_COMMAND_CHARS} characters]` : command,
      cwd: typeof a.cwd === 'string' && a.cwd !== '' ? path.posix.normalize(a.cwd) : '.',
      ...extra,
    };
    const draft = { path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null };
    this.ws.recordAudit(tool, operation, draft, errorKind === null, errorKind, details);
  }
}

function exitOf(result: ToolResult): Partial<CommandAuditDetails> {
  if (!result.ok) return {};
  const d = result.data as BashData;
  return {
    exitCode: d.exitCode,
    ...(d.signal ? { signal: d.signal } : {}),
    ...(d.timedOut ? { timedOut: true } : {}),
    durationMs: d.durationMs,
  };
}

function filesOf(before: WorkspaceScan | undefined, after: WorkspaceScan | undefined): Partial<CommandAuditDetails> {
  if (!before || !after) return { scan: 'failed' };
  const diff = diffScans(before, after);
  const cap = (list: string[]): string[] => list.slice(0, AUDIT_MAX_LISTED_FILES);
  const omitted = [diff.created, diff.changed, diff.deleted].reduce((n, l) => n + Math.max(0, l.length - AUDIT_MAX_LISTED_FILES), 0);
  return {
    files: { created: cap(diff.created), changed: cap(diff.changed), deleted: cap(diff.deleted) },
    ...(omitted > 0 ? { filesOmitted: omitted } : {}),
    scan: before.complete && after.complete ? 'complete' : 'incomplete',
  };
}
