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

const DISPATCH = "return require('caboose.rpc').on_event(...)";

/** Streamed text is sent at most once per frame (~60 per second), however fast the model streams. */
export const FRAME_MS = 16;
const DELTA_EVENT = 'assistant_delta';

/**
 * Host → Lua events. Notifications (not requests) keep streaming cheap and ordered: Neovim runs them in
 * arrival order on its main loop. Text deltas are coalesced into frames: the first goes at once, the ones
 * arriving within the next frame are joined and sent together; any other event sends pending text first,
 * so the order Lua sees is the order the agent emitted.
 */
export class LuaUi {
  private pendingText = '';
  private timer: NodeJS.Timeout | null = null;
  private lastFrame = 0;

  constructor(
    private readonly nvim: NvimNotifier,
    private readonly log: Logger,
    private readonly frameMs = FRAME_MS,
  ) {}

  emit(name: string, payload: Record<string, unknown> = {}): void {
    if (name === DELTA_EVENT && typeof payload.text === 'string') {
      this.pendingText += payload.text;
      const wait = this.lastFrame + this.frameMs - Date.now();
      if (wait <= 0) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), wait);
      return;
    }
    this.flush();
    this.send(name, payload);
  }

  /** Sends the text waiting for its frame (if any). */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pendingText === '') return;
    const text = this.pendingText;
    this.pendingText = '';
    this.lastFrame = Date.now();
    this.send(DELTA_EVENT, { text });
  }

  private send(name: string, payload: Record<string, unknown>): void {
    try {
      this.nvim.notify('nvim_exec_lua', [DISPATCH, [name, stripNulls(payload)]]);
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
