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

/** A done rewind carries the line the chat shows (and the session keeps) about it. */
export type RewindReply = RewindResult | (RewindResult & { status: 'rewound'; summary: string });

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

const firstLine = (s: string): string => {
  const l = (s.split('\n')[0] ?? '').trim();
  return [...l].length > 60 ? `${[...l].slice(0, 59).join('')}…` : l;
};

/** What a rewind did, in one line: the message rewound to (the oldest) and each file's fate. */
export function describeRewind(res: RewindResult & { status: 'rewound' }): string {
  const first = res.checkpoints.find((c) => c.id === res.id) ?? { message: '' };
  const what = res.files.flatMap((f) => {
    switch (f.action) {
      case 'trashed':
        return [`${f.path} removed (:CabooseRestore brings it back)`];
      case 'recreated':
        return [`${f.path} recreated`];
      case 'moved':
        return [`${f.from ?? '?'} moved back to ${f.path}`];
      case 'restored':
        return [`${f.path} restored${f.savedToDisk === false ? ' (in its unsaved buffer)' : ''}`];
      default:
        return [];
    }
  });
  const later = res.checkpoints.length - 1;
  const head = `rewound "${firstLine(first.message)}"${later > 0 ? ` and ${later} later message${later > 1 ? 's' : ''}` : ''}`;
  return `${head}: ${what.length > 0 ? what.join(', ') : 'the files were already as before'}`;
}
