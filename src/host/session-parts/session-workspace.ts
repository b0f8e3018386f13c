/**
 * The workspace of one chat: the file layer over the live buffers (issue 4), with the editor's diagnostics
 * (issue 12), and its checkpoints (one per user message) reporting failures to the chat and keeping the
 * notes a rewind leaves for the model with the session.
 */
import * as path from 'node:path';
import { openWorkspace, type OpenedWorkspace } from '../../tools/open';
import type { Logger } from '../logger';
import type { LuaUi } from '../lua-ui';
import { NvimBufferBridge } from '../nvim-buffers';
import { NvimDiagnostics } from '../nvim-diagnostics';
import { EVENTS, type HostConfig } from '../protocol';

export interface SessionWorkspaceOptions {
  config: HostConfig;
  cwd: string;
  dataDir: string;
  sessionId: string;
  /** The model the session row is created with when a note needs it. */
  model: string;
  ui: LuaUi;
  log: Logger;
  /**
   * An external (ACP) agent runs the chat: no post-edit diagnostics report and no rewind notes (it has
   * its own context, which ours does not reach).
   */
  externalAgent?: boolean;
}

export function openSessionWorkspace(o: SessionWorkspaceOptions): OpenedWorkspace {
  const { config, ui, log } = o;
  const ws = openWorkspace({
    root: o.cwd,
    dataDir: path.resolve(o.dataDir),
    sessionId: o.sessionId,
    denyGlobs: config.deny_globs,
    secretGlobs: config.secret_globs,
    trashRetentionDays: config.trash_retention_days,
    // The file tools see and edit live buffers (issue 4).
    bridge: new NvimBufferBridge(ui),
    unsavedBuffers: config.unsaved_buffers,
    allowReadonlyWrites: config.allow_readonly_writes,
    hardLinks: config.hard_links,
    // The diagnostics tool, and what the agent's edits report of the language servers (issue 12).
    diagnostics: new NvimDiagnostics(ui),
    postEditDiagnostics:
      o.externalAgent || config.diagnostics?.enabled === false
        ? null
        : {
            waitMs: config.diagnostics?.wait_ms ?? 2000,
            settleMs: config.diagnostics?.settle_ms ?? 300,
            onError: (err) => log.warn('post-edit diagnostics: %s', err instanceof Error ? err.message : String(err)),
          },
  });
  const { checkpoints, store } = ws.workspace;
  // One checkpoint per user message (its turn's writes); a failure to record one is reported, not fatal.
  checkpoints.onRecordError = (err) => {
    log.warn('checkpoint not recorded: %s', err instanceof Error ? err.stack : String(err));
    ui.emit(EVENTS.notice, { text: `checkpoint not recorded (:CabooseUndo cannot undo this change): ${err instanceof Error ? err.message : String(err)}` });
  };
  if (o.externalAgent) return ws;
  // What a rewind tells the model waits with the session: a host restart or a reopen does not lose it.
  checkpoints.noteStore = {
    add: (text) => {
      store.sessions.ensure({ id: o.sessionId, cwd: o.cwd, model: o.model });
      store.sessions.append(o.sessionId, { kind: 'note', display: { text }, text: '', inContext: false });
    },
    take: () => store.sessions.takeNotes(o.sessionId),
  };
  return ws;
}
