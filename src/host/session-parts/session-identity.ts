/** Which session the chat shows: its id, title, model and folder (the winbar), and the user's renaming. */
import type { SessionRepository } from '../../store/sessions';
import type { LuaUi } from '../lua-ui';
import { EVENTS } from '../protocol';

export interface SessionIdentityOptions {
  ui: Pick<LuaUi, 'emit'>;
  sessions: Pick<SessionRepository, 'get' | 'ensure' | 'rename'>;
  sessionId: string;
  cwd: string;
  /** The model the session row is created with. */
  model: string;
}

export class SessionIdentity {
  constructor(private readonly o: SessionIdentityOptions) {}

  /** The chat shows this title (the model's or the user's). */
  readonly onTitle = (title: string): void => this.o.ui.emit(EVENTS.sessionInfo, { session: this.o.sessionId, title });

  /** The chat shows the session, its model (`label`), folder and title. */
  announce(label: string): void {
    const { ui, sessions, sessionId, cwd } = this.o;
    ui.emit(EVENTS.sessionInfo, { session: sessionId, model: label, cwd, title: sessions.get(sessionId)?.title ?? null });
  }

  /** The user's title wins over the model's. */
  rename(title: string): { title: string } {
    const { sessions, sessionId, cwd, model } = this.o;
    const t = title.replace(/\s+/g, ' ').trim().slice(0, 120);
    if (t === '') throw new Error('a session title cannot be empty');
    sessions.ensure({ id: sessionId, cwd, model });
    sessions.rename(sessionId, t, 'user');
    this.onTitle(t);
    return { title: t };
  }

  info(): { session: string; title: string | null; cwd: string; messages: number } {
    const s = this.o.sessions.get(this.o.sessionId);
    return { session: this.o.sessionId, title: s?.title ?? null, cwd: this.o.cwd, messages: s?.messageCount ?? 0 };
  }
}
