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

/**
 * Host → Lua events. Notifications (not requests) keep streaming cheap and ordered:
 * Neovim runs them in arrival order on its main loop.
 */
export class LuaUi {
  constructor(
    private readonly nvim: NvimNotifier,
    private readonly log: Logger,
  ) {}

  emit(name: string, payload: Record<string, unknown> = {}): void {
    try {
      this.nvim.notify('nvim_exec_lua', [DISPATCH, [name, stripNulls(payload)]]);
    } catch (err) {
      this.log.error('emit %s failed: %s', name, err instanceof Error ? err.message : String(err));
    }
  }

  /** Runs Lua and returns its value (one round trip). */
  async lua<T>(code: string, args: unknown[] = []): Promise<T> {
    return (await this.nvim.request('nvim_exec_lua', [code, args])) as T;
  }
}
