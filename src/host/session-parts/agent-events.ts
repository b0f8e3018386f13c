/**
 * What the chat sees of its agent: each event of the agent loop becomes a chat event (Lua), a row of the
 * session's record, a checkpoint boundary (one per user message) or a tool line.
 */
import type { AgentEvents } from '../../agent/loop';
import type { Usage } from '../../agent/provider';
import type { McpSessionHooks } from '../../mcp/session';
import type { Checkpoints } from '../../workspace/checkpoints';
import type { LuaUi } from '../lua-ui';
import { EVENTS } from '../protocol';
import type { ChatSession } from '../session';
import type { SessionRecorder } from '../session-recorder';
import { metaOf } from './message-queue';
import type { ToolLines } from './tool-lines';

export interface ChatEventsOptions {
  session: Pick<ChatSession, 'id' | 'emitState' | 'cancelApproval'>;
  ui: Pick<LuaUi, 'emit'>;
  recorder: SessionRecorder;
  checkpoints: Pick<Checkpoints, 'begin' | 'end'>;
  mcp: Pick<McpSessionHooks, 'turnStarted'> | null;
  toolLines: ToolLines;
  usage(u: Usage): void;
  notice(text: string): void;
  /** A turn ended (its record is flushed). */
  turnEnded(): void;
}

export function chatEvents(o: ChatEventsOptions): AgentEvents {
  const { session, ui, recorder, checkpoints } = o;
  return {
    state: (state, previous) => session.emitState(state, previous),
    assistantStart: () => ui.emit(EVENTS.assistantStart, {}),
    text: (delta) => {
      // The chat first: a reply's first text creates its row in the database (an INSERT, ≈ 1 ms), which
      // would otherwise hold the first token back (issue 24). What is recorded is the same.
      ui.emit(EVENTS.assistantDelta, { text: delta });
      recorder.text(delta);
    },
    reasoning: (delta) => ui.emit(EVENTS.reasoningDelta, { text: delta }),
    messageAdded: (m) => recorder.messageAdded(m),
    assistantEnd: (info) => ui.emit(EVENTS.assistantEnd, { interrupted: info.interrupted }),
    turnStart: (m) => {
      o.mcp?.turnStarted();
      const meta = metaOf(m);
      checkpoints.begin({ sessionId: session.id, messageId: meta.id, text: meta.display });
      recorder.turnStart({ text: meta.display, ...(meta.labels.length > 0 ? { labels: meta.labels } : {}) });
      ui.emit(EVENTS.userMessage, { id: meta.id, text: meta.display, context: meta.labels });
    },
    turnEnd: () => {
      checkpoints.end();
      recorder.flush();
      o.turnEnded();
    },
    queueDiscarded: (ms) => ui.emit(EVENTS.queueDiscarded, { messages: ms.map((m) => ({ id: metaOf(m).id, text: metaOf(m).display })) }),
    retry: (r) => ui.emit(EVENTS.retry, { attempt: r.attempt, delay_ms: r.delayMs, message: r.message }),
    usage: (u) => o.usage(u),
    toolCall: (c) => o.toolLines.call(c),
    toolResult: (r) => o.toolLines.result(r),
    error: (e) => {
      recorder.chatLine('error', e.message);
      ui.emit(EVENTS.error, { kind: e.kind, message: e.message });
    },
    notice: (text) => o.notice(text),
    approvalCancelled: (req) => session.cancelApproval(req.id),
    compacted: (c) => recorder.compacted(c.added, c.archivedAs),
  };
}
