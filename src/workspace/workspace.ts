/**
 * Placeholder owned by the workspace layer (issue 3): the object every tool reaches through ctx.workspace.
 * It will grow (file access, trash, audit); `root`, `dataDir` and `sessionId` are stable.
 */
export interface Workspace {
  /** Absolute, realpath-resolved workspace root. */
  readonly root: string;
  /** Where the SQLite database and the trash live (outside the workspace by default). */
  readonly dataDir: string;
  readonly sessionId: string;
}
