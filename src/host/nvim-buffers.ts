import type { BufferBridge, BufferFormat, BufferOp, BufferOpResult, BufferSnapshot } from '../workspace/buffer-bridge';

/** The slice of LuaUi the bridge needs: run Lua in Neovim, one round trip per call. */
export interface LuaRunner {
  lua<T>(code: string, args?: unknown[]): Promise<T>;
}

/** A snapshot as lua/caboose/buffers/snapshot.lua makes it (bytes base64-encoded: msgpack strings decode as UTF-8). */
interface RawSnapshot {
  bufnr: number;
  modified: boolean;
  changedtick: number;
  format: { eol: string; final_eol: boolean; bom: boolean; fileencoding: string };
  bytes64?: string;
  /** Non-UTF-8 'fileencoding': the same text in UTF-8. */
  utf8_64?: string;
  path?: string;
}

interface RawOpResult {
  ok: boolean;
  changedtick?: number;
  reason?: string;
  message?: string;
  bytes64?: string;
}

const STATUS = "return require('caboose.buffers').status(...)";
const MODIFIED = "return require('caboose.buffers').modified()";
const UPDATE = "return require('caboose.buffers').update(...)";

function toFormat(f: RawSnapshot['format']): BufferFormat {
  const eol = f.eol === '\r\n' || f.eol === '\r' ? f.eol : '\n';
  return { eol, finalEol: !!f.final_eol, bom: !!f.bom, fileencoding: f.fileencoding || 'utf-8' };
}

function toSnapshot(r: RawSnapshot): BufferSnapshot {
  const s: BufferSnapshot = { bufnr: r.bufnr, modified: !!r.modified, changedtick: r.changedtick, format: toFormat(r.format) };
  if (typeof r.bytes64 === 'string') s.bytes = Buffer.from(r.bytes64, 'base64');
  if (typeof r.utf8_64 === 'string') s.utf8 = Buffer.from(r.utf8_64, 'base64');
  return s;
}

/** Lua encodes an empty table as an array; a map otherwise. */
function entries<T>(v: unknown): [string, T][] {
  if (!v || Array.isArray(v) || typeof v !== 'object') return [];
  return Object.entries(v as Record<string, T>);
}

/**
 * BufferBridge over the Neovim RPC channel: every method is one `nvim_exec_lua` request into
 * lua/caboose/buffers/init.lua (lines and options read together, never per line).
 */
export class NvimBufferBridge implements BufferBridge {
  constructor(private readonly nvim: LuaRunner) {}

  async status(absPaths: string[], withBytes: 'modified' | 'never', have?: Map<string, number>): Promise<Map<string, BufferSnapshot>> {
    const out = new Map<string, BufferSnapshot>();
    if (absPaths.length === 0) return out;
    const known = have && have.size ? Object.fromEntries(have) : null;
    const raw = await this.nvim.lua<unknown>(STATUS, known ? [absPaths, withBytes, known] : [absPaths, withBytes]);
    for (const [abs, snap] of entries<RawSnapshot>(raw)) out.set(abs, toSnapshot(snap));
    return out;
  }

  async modified(): Promise<Map<string, BufferSnapshot>> {
    const raw = await this.nvim.lua<RawSnapshot[] | Record<string, never>>(MODIFIED);
    const out = new Map<string, BufferSnapshot>();
    if (Array.isArray(raw)) for (const r of raw) if (r.path) out.set(r.path, toSnapshot(r));
    return out;
  }

  async update(ops: BufferOp[]): Promise<BufferOpResult[]> {
    if (ops.length === 0) return [];
    const wire = ops.map((op) => {
      if (op.type !== 'set') return op;
      // Field by field: `text` may be decoded on access, so it is read only when no hunks are sent.
      const w: Record<string, unknown> = { type: 'set', abs: op.abs, clean: op.clean };
      if (op.hunks) w.hunks = op.hunks;
      else w.text = op.text;
      if (op.changedtick !== undefined) w.changedtick = op.changedtick;
      if (op.finalEol !== undefined) w.final_eol = op.finalEol;
      if (op.bom !== undefined) w.bom = op.bom;
      if (op.sizeChanged) w.size_changed = true;
      if (op.returnBytes) w.return_bytes = true;
      if (op.file) {
        w.file = {
          ino: op.file.ino,
          size: op.file.size,
          mtime_sec: op.file.mtimeSec,
          mtime_nsec: op.file.mtimeNsec,
          ...(op.file.ctimeSec !== undefined ? { ctime_sec: op.file.ctimeSec, ctime_nsec: op.file.ctimeNsec } : {}),
        };
      }
      return w;
    });
    const raw = await this.nvim.lua<RawOpResult[]>(UPDATE, [wire]);
    return (Array.isArray(raw) ? raw : []).map((r) => ({
      ok: !!r.ok,
      ...(typeof r.changedtick === 'number' ? { changedtick: r.changedtick } : {}),
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.message ? { message: r.message } : {}),
      ...(typeof r.bytes64 === 'string' ? { bytes: Buffer.from(r.bytes64, 'base64') } : {}),
    }));
  }
}
