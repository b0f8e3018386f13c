import type { FileWorkspace } from '../workspace/workspace';
import {
  busyError,
  describeRewind,
  listCheckpoints,
  previewCheckpoint,
  rewindCheckpoints,
  type CheckpointPreview,
  type CheckpointSummary,
  type RewindResult,
} from '../workspace/rewind';

/** A done rewind carries the line the chat shows (and the session keeps) about it. */
export type RewindReply = Exclude<RewindResult, { status: 'rewound' }> | (Extract<RewindResult, { status: 'rewound' }> & { summary: string });

/** :CabooseUndo and :CabooseCheckpoints for one session runtime. */
export interface CheckpointApi {
  list(): CheckpointSummary[];
  preview(id: number): Promise<CheckpointPreview>;
  rewind(opts: { id?: number; force?: boolean }): Promise<RewindReply>;
}

/**
 * `busy`: the agent is in a turn or waiting (a rewind must not race its writes). `notice`: a chat line
 * that the session keeps (a reopened transcript still says what was rewound).
 */
export function checkpointApi(ws: FileWorkspace, sessionId: () => string, busy: () => boolean, notice: (text: string) => void): CheckpointApi {
  return {
    list: () => listCheckpoints(ws, sessionId()),
    preview: (id) => previewCheckpoint(ws, sessionId(), id),
    async rewind(opts) {
      if (busy()) throw busyError();
      const res = await rewindCheckpoints(ws, sessionId(), opts);
      if (res.status !== 'rewound') return res;
      const summary = describeRewind(res);
      notice(summary);
      return { ...res, summary };
    },
  };
}
