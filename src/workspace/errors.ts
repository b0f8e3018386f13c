/** The closed set of error kinds a tool result may carry. Tests and the model rely on these exact strings. */
export const ERROR_KINDS = [
  'stale_file',
  'not_found',
  'already_exists',
  'permission_denied',
  'outside_workspace',
  'is_directory',
  'binary_file',
  'file_too_large',
  'old_text_not_found',
  'multiple_matches',
  'overlapping_edits',
  'patch_parse_error',
  'patch_apply_error',
  'invalid_arguments',
  // buffer-aware and agent-level kinds
  'unsaved_buffer',
  'blocked_by_mode',
  'rejected_by_user',
  'cancelled',
  'timeout',
  'network_error',
  'internal_error',
  // MCP tools: the server's tool reported an error / the server is not running
  'mcp_error',
  'mcp_unavailable',
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];

export interface ToolErrorInfo {
  kind: ErrorKind;
  message: string;
  path?: string;
  suggestedAction?: string;
  /** Extra structured detail for the model (e.g. zod issues, match count, closest candidates). */
  details?: unknown;
}

/** Thrown inside tool handlers; the shared wrapper turns it into `{ ok: false, error }`. */
export class ToolError extends Error {
  readonly kind: ErrorKind;
  readonly path?: string;
  readonly suggestedAction?: string;
  readonly details?: unknown;

  constructor(kind: ErrorKind, message: string, extra: Omit<ToolErrorInfo, 'kind' | 'message'> = {}) {
    super(message);
    this.name = 'ToolError';
    this.kind = kind;
    this.path = extra.path;
    this.suggestedAction = extra.suggestedAction;
    this.details = extra.details;
  }

  toInfo(): ToolErrorInfo {
    const info: ToolErrorInfo = { kind: this.kind, message: this.message };
    if (this.path !== undefined) info.path = this.path;
    if (this.suggestedAction !== undefined) info.suggestedAction = this.suggestedAction;
    if (this.details !== undefined) info.details = this.details;
    return info;
  }
}

export const STALE_FILE_ACTION = 'Re-read the file to obtain the current sha256 and re-apply your edit.';

/** Throws `cancelled` once `signal` is aborted: write paths call it up to their commit point. */
export function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ToolError('cancelled', 'The call was cancelled before it changed anything; no file was written.');
}
