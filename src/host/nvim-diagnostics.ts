import { z } from 'zod';
import { SEVERITIES, type BufferDiagnostics, type Diagnostic, type DiagnosticsQuery, type DiagnosticsSource, type WatchPoll } from '../workspace/diagnostics';
import type { LuaRunner } from './nvim-buffers';

const LIST = "return require('caboose.diagnostics').list(...)";
const WATCH = "return require('caboose.diagnostics').watch(...)";
const POLL = "return require('caboose.diagnostics').poll(...)";
const CANCEL = "return require('caboose.diagnostics').cancel(...)";

// What lua/caboose/diagnostics.lua returns (validated: it crosses the process boundary).
const int = z.number().int();
const DiagnosticWire = z.object({
  severity: z.enum(SEVERITIES),
  line: int,
  col: int,
  end_line: int,
  end_col: int,
  message: z.string(),
  source: z.string().nullish(),
  code: z.union([z.string(), z.number()]).nullish(),
});
const BufferWire = z.object({
  path: z.string(),
  modified: z.boolean(),
  clients: z.array(z.string()),
  counts: z.object({ error: int, warning: int, info: int, hint: int }),
  matched: int,
  diagnostics: z.array(DiagnosticWire),
});
const ListWire = z.array(BufferWire);
const WatchWire = z.object({ token: int.nullish(), buffers: z.array(BufferWire), others: z.array(BufferWire).optional() });
const PollWire = z.union([
  z.object({ done: z.literal(false) }),
  z.object({
    done: z.literal(true),
    buffers: z.array(
      BufferWire.extend({
        changed: z.boolean(),
        answered: z.boolean(),
        // vim.diff indices: { start, count, new start, new count }
        hunks: z.array(z.tuple([int, int, int, int])),
      }),
    ),
    others: z.array(BufferWire).optional(),
  }),
]);

function toDiagnostic(w: z.infer<typeof DiagnosticWire>): Diagnostic {
  const d: Diagnostic = { severity: w.severity, line: w.line, col: w.col, endLine: w.end_line, endCol: w.end_col, message: w.message };
  if (w.source != null && w.source !== '') d.source = w.source;
  if (w.code != null && w.code !== '') d.code = w.code;
  return d;
}

function toBuffer(w: z.infer<typeof BufferWire>): BufferDiagnostics {
  return { abs: w.path, modified: w.modified, clients: w.clients, counts: w.counts, matched: w.matched, diagnostics: w.diagnostics.map(toDiagnostic) };
}

/** Reads a Lua reply with its schema; a reply of another shape is an error naming the call. */
function parse<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.infer<S> {
  const r = schema.safeParse(raw);
  if (!r.success) throw new Error(`caboose.diagnostics.${what} replied unexpectedly: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** An empty Lua table may arrive as an empty map: no buffers. */
const emptyIsList = (raw: unknown): unknown => (raw && typeof raw === 'object' && !Array.isArray(raw) && Object.keys(raw).length === 0 ? [] : raw);

/** DiagnosticsSource over the Neovim RPC channel: every method is one `nvim_exec_lua` into lua/caboose/diagnostics.lua. */
export class NvimDiagnostics implements DiagnosticsSource {
  constructor(private readonly nvim: LuaRunner) {}

  async list(q: DiagnosticsQuery): Promise<BufferDiagnostics[]> {
    // No `paths` key at all when listing (a null would reach Lua as vim.NIL).
    const wire = { root: q.root, min_severity: q.minSeverity, limit: q.limit, ...(q.paths ? { paths: q.paths } : {}) };
    const raw = await this.nvim.lua<unknown>(LIST, [wire]);
    return parse(ListWire, emptyIsList(raw), 'list').map(toBuffer);
  }

  async watch(paths: string[], limit: number, root?: string): Promise<{ token: number; before: BufferDiagnostics[]; others?: BufferDiagnostics[] } | null> {
    const raw = await this.nvim.lua<unknown>(WATCH, root === undefined ? [paths, limit] : [paths, limit, root]);
    const w = parse(WatchWire, raw, 'watch');
    if (w.token == null) return null;
    return { token: w.token, before: w.buffers.map(toBuffer), ...(w.others ? { others: w.others.map(toBuffer) } : {}) };
  }

  async poll(token: number, settleMs: number, final: boolean): Promise<WatchPoll> {
    const p = parse(PollWire, await this.nvim.lua<unknown>(POLL, [token, settleMs, final]), 'poll');
    if (!p.done) return p;
    return {
      done: true,
      buffers: p.buffers.map((b) => ({
        ...toBuffer(b),
        changed: b.changed,
        answered: b.answered,
        hunks: b.hunks.map(([start, count, newStart, newCount]) => ({ start, count, newStart, newCount })),
      })),
      ...(p.others ? { others: p.others.map(toBuffer) } : {}),
    };
  }

  async cancel(token: number): Promise<void> {
    await this.nvim.lua(CANCEL, [token]);
  }
}
