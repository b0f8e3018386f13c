/**
 * The diagnostics seam: what the editor (vim.diagnostic, fed by the user's language servers) holds about
 * loaded buffers. The workspace asks through `DiagnosticsSource` (src/host/nvim-diagnostics.ts implements
 * it over RPC); without Neovim there is none.
 */

export const SEVERITIES = ['error', 'warning', 'info', 'hint'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** 0 for errors … 3 for hints (vim.diagnostic.severity minus one). */
export function severityRank(s: Severity): number {
  return SEVERITIES.indexOf(s);
}

/** One diagnostic of a buffer. Lines and columns are 1-based; columns count characters; the end is exclusive. */
export interface Diagnostic {
  severity: Severity;
  line: number;
  col: number;
  endLine: number;
  endCol: number;
  message: string;
  source?: string;
  code?: string | number;
}

/** A diagnostic with the workspace-relative path of its file (what the tools report). */
export interface LocatedDiagnostic extends Diagnostic {
  path: string;
}

export type SeverityCounts = Record<Severity, number>;

/** A loaded buffer and what the editor holds about it. */
export interface BufferDiagnostics {
  /** The file's absolute path (as asked, or the buffer's resolved name when listing). */
  abs: string;
  /** The buffer has unsaved changes: its diagnostics describe that text, not the disk. */
  modified: boolean;
  /** Names of the language-server clients attached to the buffer. */
  clients: string[];
  /** Per severity, over all its diagnostics (before any filter or limit). */
  counts: SeverityCounts;
  /** How many are at or above the asked severity. */
  matched: number;
  /** Those, sorted by severity then position, at most the asked limit. */
  diagnostics: Diagnostic[];
}

export interface DiagnosticsQuery {
  /** Files to report on (absolute); absent: every loaded file buffer under `root`. */
  paths?: string[];
  root: string;
  minSeverity: Severity;
  /** Most diagnostics returned per buffer. */
  limit: number;
}

/** A line hunk of an edit: `count` lines at `start` (1-based) became `newCount` lines at `newStart`. */
export interface LineHunk {
  start: number;
  count: number;
  newStart: number;
  newCount: number;
}

/** A watched buffer once its watch ended. */
export interface WatchedBuffer extends BufferDiagnostics {
  /** Its text changed since the watch was armed. */
  changed: boolean;
  /** A language server reported on it after the change reached the server. */
  answered: boolean;
  /** How its lines moved since the watch was armed (to match diagnostics that only shifted). */
  hunks: LineHunk[];
}

/**
 * `others`: the other loaded file buffers of the workspace, as they are now. An
 * edit to one file changes the diagnostics of others (a changed export breaks an importer): they are
 * compared too.
 */
export type WatchPoll = { done: false } | { done: true; buffers: WatchedBuffer[]; others?: BufferDiagnostics[] };

/**
 * The editor's diagnostics. Every method is one round trip and returns at once (the editor never
 * waits on the host); waiting for language servers is the caller polling `poll`.
 */
export interface DiagnosticsSource {
  list(q: DiagnosticsQuery): Promise<BufferDiagnostics[]>;
  /**
   * Before a write: watches the loaded buffers among `paths` that a language server is attached to.
   * Returns their diagnostics now and a token, or null when no such buffer exists (nothing to wait for).
   * With `root`, also the diagnostics now of every other loaded file buffer under it (`others`, at most
   * 100); its polls then wait until those are quiet too, and return them.
   */
  watch(paths: string[], limit: number, root?: string): Promise<{ token: number; before: BufferDiagnostics[]; others?: BufferDiagnostics[] } | null>;
  /**
   * Done once every watched buffer is settled: unchanged, gone, or answered and then quiet for
   * `settleMs`. With `final`, done whatever their state. A done poll ends the watch.
   */
  poll(token: number, settleMs: number, final: boolean): Promise<WatchPoll>;
  /** Ends a watch without reading it. */
  cancel(token: number): Promise<void>;
}

export function emptyCounts(): SeverityCounts {
  return { error: 0, warning: 0, info: 0, hint: 0 };
}

/** Sorts by path, then severity (errors first), then position. */
export function compareDiagnostics(a: LocatedDiagnostic, b: LocatedDiagnostic): number {
  if (a.path !== b.path) return a.path < b.path ? -1 : 1;
  return severityRank(a.severity) - severityRank(b.severity) || a.line - b.line || a.col - b.col || a.endLine - b.endLine || a.endCol - b.endCol;
}
