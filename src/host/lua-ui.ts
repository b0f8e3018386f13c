import type { Logger } from './logger';

/** The slice of the node-client we use to talk back to Neovim. */
export interface NvimNotifier {
  notify(name: string, args: unknown[]): void;
  request(name: string, args?: unknown[]): Promise<unknown>;
}

/** msgpack turns null into vim.NIL on the Lua side; drop null/undefined keys so Lua sees plain nils. */
export function stripNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripNulls);
  if (value && typeof value === 'object' && !(value instanceof Buffer)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === null || v === undefined) continue;
      out[k] = stripNulls(v);
    }
    return out;
  }
  return value;
}

/** An event as a LuaUi was asked to emit it (before frames and scope tags). */
export interface ShownEvent {
  name: string;
  payload: Record<string, unknown>;
}

const DISPATCH = "return require('caboose.rpc').on_event(...)";

/**
 * Streamed text is sent at most once per frame (20 a second), however fast the model streams. Each frame
 * costs Neovim a markdown re-parse and redraw of the chat (≈ 15–50 ms of CPU in a long chat): at 60 frames
 * a second a paced reply kept Neovim's CPU busy ~60% of the time even in a fresh chat (bench/chat.ts).
 */
export const FRAME_MS = 50;
const DELTA_EVENT = 'assistant_delta';
const START_EVENT = 'assistant_start';

/** Text waiting for its frame, shared by a UI and its scopes so one frame carries it all, in order. */
interface Frames {
  text: string;
  /** The scope whose text it is (its close() drops it). */
  owner: LuaUi | null;
  timer: NodeJS.Timeout | null;
  last: number;
}

/**
 * Host → Lua events. Notifications (not requests) keep streaming cheap and ordered: Neovim runs them in
 * arrival order on its main loop. Text deltas are coalesced into frames: the first goes at once, the ones
 * arriving within the next frame are joined and sent together; any other event sends pending text first,
 * so the order Lua sees is the order the agent emitted.
 */
export class LuaUi {
  private closed = false;

  constructor(
    private readonly nvim: NvimNotifier,
    private readonly log: Logger,
    private readonly frameMs = FRAME_MS,
    private readonly frames: Frames = { text: '', owner: null, timer: null, last: 0 },
    /** Sent with each of a scope's events as `_scope`: Lua drops a left session's events still in flight. */
    private tag?: number,
  ) {}

  /**
   * A view of this UI for one session: after its close(), what that session still emits (a replaced
   * session winding down its stopped turn) is dropped instead of reaching the chat that replaced it.
   * Lua calls still go through (a stopping tool may still need the buffers). `tag` goes with each event,
   * so Lua can also drop the ones sent before the session was left and still on their way.
   */
  scope(tag: number): LuaUi {
    return new LuaUi(this.nvim, this.log, this.frameMs, this.frames, tag);
  }

  /** The chat switched to a view it numbered `tag` and this session stays its session: its events carry that. */
  retag(tag: number): void {
    this.tag = tag;
  }

  /** Drops this scope's events from now on, and its text still waiting for a frame. */
  close(): void {
    this.closed = true;
    if (this.frames.owner === this) {
      this.frames.text = '';
      this.frames.owner = null;
    }
  }

  /**
   * Events the chat was already sent (the host's first-request path showed the first reply before this
   * session existed, first-request.ts): this session's own emissions of them, in the same order, are not
   * sent a second time. Each is dropped when it equals the next one still expected; others go through.
   */
  skipShown(events: readonly ShownEvent[]): void {
    this.shown = events.map((e) => ({ name: e.name, json: JSON.stringify(e.payload) }));
  }

  /** Events the chat was sent that this session has not emitted yet (skipShown). */
  get unmatchedShown(): number {
    return this.shown.length;
  }

  private shown: { name: string; json: string }[] = [];

  emit(name: string, payload: Record<string, unknown> = {}): void {
    if (this.closed) return;
    if (this.shown.length > 0 && this.shown[0].name === name && this.shown[0].json === JSON.stringify(payload)) {
      this.shown.shift();
      return;
    }
    if (name === DELTA_EVENT && typeof payload.text === 'string') {
      const f = this.frames;
      if (f.owner !== this) this.flush();
      f.text += payload.text;
      f.owner = this;
      const wait = f.last + this.frameMs - Date.now();
      if (wait <= 0) this.flush();
      else f.timer ??= setTimeout(() => this.flush(), wait);
      return;
    }
    this.flush();
    // A new reply (or the next step of one) starts: its first text goes at once, not when the frame of
    // the previous reply's last text ends (a message sent right after a reply waited up to FRAME_MS for
    // its first token, issue 24). The frames pace the text that follows.
    if (name === START_EVENT) this.frames.last = 0;
    this.send(name, payload);
  }

  /** Sends the text waiting for its frame (if any). */
  flush(): void {
    const f = this.frames;
    if (f.timer) {
      clearTimeout(f.timer);
      f.timer = null;
    }
    if (f.text === '') return;
    const text = f.text;
    const owner = f.owner ?? this;
    f.text = '';
    f.owner = null;
    f.last = Date.now();
    owner.send(DELTA_EVENT, { text });
  }

  private send(name: string, payload: Record<string, unknown>): void {
    try {
      const body = this.tag === undefined ? payload : { ...payload, _scope: this.tag };
      this.nvim.notify('nvim_exec_lua', [DISPATCH, [name, stripNulls(body)]]);
    } catch (err) {
      this.log.error('emit %s failed: %s', name, err instanceof Error ? err.message : String(err));
    }
  }

  /** Runs Lua and returns its value (one round trip). */
  async lua<T>(code: string, args: unknown[] = []): Promise<T> {
    this.flush();
    return (await this.nvim.request('nvim_exec_lua', [code, args])) as T;
  }
}
