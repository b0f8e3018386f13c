import type { FileWorkspace } from '../workspace/workspace';
import {
  busyError,
  listCheckpoints,
  previewCheckpoint,
  rewindCheckpoints,
  type CheckpointPreview,
  type CheckpointSummary,
  type RewindResult,
} from '../workspace/rewind';

/** :CabooseUndo and :CabooseCheckpoints for one session runtime. */
export interface CheckpointApi {
  list(): CheckpointSummary[];
  preview(id: number): Promise<CheckpointPreview>;
  rewind(opts: { id?: number; force?: boolean }): Promise<RewindResult>;
}

/** `busy`: the agent is in a turn or waiting (a rewind must not race its writes). */
export function checkpointApi(ws: FileWorkspace, sessionId: () => string, busy: () => boolean): CheckpointApi {
  return {
    list: () => listCheckpoints(ws, sessionId()),
    preview: (id) => previewCheckpoint(ws, sessionId(), id),
    rewind(opts) {
      if (busy()) return Promise.reject(busyError());
      return rewindCheckpoints(ws, sessionId(), opts);
    },
  };
}
