/** An in-memory stand-in for Neovim's buffers (unit tests of the buffer-aware file layer). */
import type { BufferBridge, BufferFormat, BufferOp, BufferSnapshot } from '../../src/index';

export const UNIX: BufferFormat = { eol: '\n', finalEol: true, bom: false, fileencoding: 'utf-8' };

/** Buffers by path, their text as file text. `onStatus` runs at each status round trip (before it answers). */
export class FakeBridge implements BufferBridge {
  bufs = new Map<string, { text: string; modified: boolean; tick: number }>();
  /** Every update call's ops, in order. */
  ops: BufferOp[][] = [];
  onStatus: ((withBytes: 'modified' | 'never') => void) | undefined;
  /** Awaited at each status round trip before it answers (a slow or busy Neovim). */
  statusDelay: ((withBytes: 'modified' | 'never') => Promise<void>) | undefined;

  async status(paths: string[], withBytes: 'modified' | 'never') {
    this.onStatus?.(withBytes);
    await this.statusDelay?.(withBytes);
    const out = new Map<string, BufferSnapshot>();
    for (const p of paths) {
      const b = this.bufs.get(p);
      if (!b) continue;
      const s: BufferSnapshot = { bufnr: 1, modified: b.modified, changedtick: b.tick, format: UNIX };
      if (withBytes === 'modified' && b.modified) s.bytes = Buffer.from(b.text);
      out.set(p, s);
    }
    return out;
  }

  async modified() {
    const out = new Map<string, BufferSnapshot>();
    for (const [p, b] of this.bufs) if (b.modified) out.set(p, { bufnr: 1, modified: true, changedtick: b.tick, format: UNIX, bytes: Buffer.from(b.text) });
    return out;
  }

  async update(ops: BufferOp[]) {
    this.ops.push(ops);
    return ops.map((op) => {
      if (op.type === 'set') {
        const b = this.bufs.get(op.abs)!;
        if (op.changedtick !== undefined && op.changedtick !== b.tick) return { ok: false, reason: 'changed' };
        Object.assign(b, { text: op.text, tick: b.tick + 1, modified: op.clean ? false : b.modified });
      } else if (op.type === 'wipe') this.bufs.delete(op.abs);
      else if (op.type === 'rename') {
        const b = this.bufs.get(op.from);
        this.bufs.delete(op.from);
        if (b) this.bufs.set(op.to, b);
      }
      return { ok: true };
    });
  }
  /** The user types: new text, modified, next changedtick. */
  type(abs: string, text: string) {
    const b = this.bufs.get(abs)!;
    Object.assign(b, { text, modified: true, tick: b.tick + 1 });
  }
}
