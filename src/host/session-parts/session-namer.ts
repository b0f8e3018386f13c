/** Once, after the first reply: a 3–6 word title from the model (the first words stand in until then). */
import type { ChatMessage, ModelClient } from '../../agent/provider';
import type { SessionRepository } from '../../store/sessions';
import type { Logger } from '../logger';
import { requestTitle } from '../session-title';

export interface SessionNamerOptions {
  sessions: Pick<SessionRepository, 'get' | 'rename'>;
  sessionId: string;
  /** A client of the chat's current model. */
  client(): ModelClient;
  onTitle(title: string): void;
  log: Pick<Logger, 'info'>;
  /** Aborted when the session is disposed. */
  signal: AbortSignal;
}

export class SessionNamer {
  private naming = false;
  /** The title request in flight (it writes the title when it comes back). */
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly o: SessionNamerOptions) {}

  /** After a turn: asks the model for a title unless one was asked for, or the model or the user gave one. */
  nameAfterTurn(msgs: readonly ChatMessage[]): void {
    const { sessions, sessionId: id } = this.o;
    const info = sessions.get(id);
    if (this.naming || !info || info.titleSource === 'model' || info.titleSource === 'user') return;
    const first = msgs.find((m) => m.role === 'user');
    const reply = [...msgs].reverse().find((m) => m.role === 'assistant' && typeof m.content === 'string' && m.content !== '');
    if (!first || typeof first.content !== 'string') return;
    this.naming = true;
    const firstText = info.title ?? first.content;
    this.pending = requestTitle(this.o.client(), firstText, typeof reply?.content === 'string' ? reply.content : '', this.o.signal)
      .then((title) => {
        const now = sessions.get(id);
        if (!title || !now || now.titleSource === 'user') return;
        sessions.rename(id, title, 'model');
        this.o.onTitle(title);
      })
      .catch((e: unknown) => this.o.log.info('session title: %s', e instanceof Error ? e.message : String(e)));
  }

  /** Resolves once the title request in flight (if any) has come back and been stored (or failed). */
  settled(): Promise<void> {
    return this.pending;
  }
}
