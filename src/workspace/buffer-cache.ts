/**
 * What the host knows of each loaded buffer: its lines (and, when modified, the bytes it writes and
 * their sha256) at one changedtick and format. A view of an unchanged buffer then needs no bytes from
 * Neovim, and an update sends only the changed line hunks instead of the whole text.
 */
import { lineHunksBytes, type LineHunk } from './buffer-hunks';
import { bufferLines, fmtKey, linesToBytes, type BufferOp, type BufferOpResult, type BufferSnapshot } from './buffer-bridge';

/** A buffer's lines (UTF-8, see bufferLines) and its bytes when modified, valid for one changedtick and format. */
export interface KnownBuffer {
  tick: number;
  fmt: string;
  lines?: Buffer;
  bytes?: Buffer;
  sha?: string;
}

export class KnownBuffers {
  private readonly known = new Map<string, KnownBuffer>();

  get(abs: string): KnownBuffer | undefined {
    return this.known.get(abs);
  }

  set(abs: string, entry: KnownBuffer): void {
    this.known.set(abs, entry);
  }

  /**
   * A 'set' op putting `lines` (see bufferLines) into the buffer: only line hunks when the buffer's
   * lines at the checked changedtick are known. `text` is decoded only if something reads it.
   */
  setOp(fields: Omit<BufferOp & { type: 'set' }, 'text' | 'hunks'>, lines: Buffer, s: BufferSnapshot): BufferOp & { type: 'set' } {
    const k = this.known.get(fields.abs);
    let hunks: LineHunk[] | undefined;
    // The lines depend on the changedtick only; bytes also on the format they were written with.
    if (k && k.tick === s.changedtick) {
      const bytesOk = k.bytes && k.fmt === fmtKey(s.format) && s.format.fileencoding === 'utf-8';
      const old = k.lines ?? (bytesOk ? bufferLines(k.bytes!, s.format).lines : undefined);
      if (old) hunks = lineHunksBytes(old, lines);
    }
    let text: string | undefined;
    const op = { ...fields, ...(hunks ? { hunks } : {}) } as BufferOp & { type: 'set' };
    Object.defineProperty(op, 'text', { enumerable: true, get: () => (text ??= lines.toString('utf8')) });
    return op;
  }

  /** Records the buffers' lines after 'set' ops (and forgets buffers that were wiped, renamed or reloaded). */
  learn(ops: BufferOp[], results: BufferOpResult[], status: Map<string, BufferSnapshot>, opLines: Map<BufferOp, Buffer>): void {
    ops.forEach((op, i) => {
      const r = results[i];
      if (op.type === 'set') {
        const s = status.get(op.abs);
        const lines = opLines.get(op);
        if (!r?.ok || r.changedtick === undefined || !s || !lines) return void this.known.delete(op.abs);
        // A clean buffer is viewed from disk: only its lines are kept (for the next hunks).
        const entry: { tick: number; fmt: string; lines: Buffer; bytes?: Buffer } = { tick: r.changedtick, fmt: fmtKey(s.format), lines };
        if (!op.clean && s.format.fileencoding === 'utf-8') entry.bytes = r.bytes ?? linesToBytes(lines, s.format);
        this.known.set(op.abs, entry);
      } else if (op.type === 'rename') {
        this.known.delete(op.from);
        this.known.delete(op.to);
      } else this.known.delete(op.abs);
    });
  }
}
