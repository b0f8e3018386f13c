import { compareDiagnostics, type LineHunk, type LocatedDiagnostic } from './diagnostics';

/** What an edit changed in the diagnostics of the files it touched. */
export interface DiagnosticsDiff {
  /** Present after the edit, not before (after-edit positions). */
  introduced: LocatedDiagnostic[];
  /** Present before the edit, gone after it (before-edit positions). */
  resolved: LocatedDiagnostic[];
  /** Present on both sides (possibly on another line). */
  unchanged: number;
}

/**
 * Where line `line` (1-based, before the edit) is after it. `exact` is false when the line was inside a
 * changed hunk: `line` is then the nearest line of what replaced it. Hunks are sorted by `start`; a hunk
 * with `count` 0 inserts its lines after line `start` (as vim.diff's indices say).
 */
export function mapLine(line: number, hunks: readonly LineHunk[]): { line: number; exact: boolean } {
  let delta = 0;
  for (const h of hunks) {
    if (h.count === 0) {
      if (line <= h.start) break;
      delta += h.newCount;
      continue;
    }
    if (line < h.start) break;
    if (line < h.start + h.count) {
      const inside = h.newCount === 0 ? 0 : Math.min(line - h.start, h.newCount - 1);
      return { line: Math.max(1, h.newStart + inside), exact: false };
    }
    delta += h.newCount - h.count;
  }
  return { line: line + delta, exact: true };
}

/** Diagnostics are the same one when these agree; the position may move. */
function keyOf(d: LocatedDiagnostic): string {
  return JSON.stringify([d.path, d.severity, d.source ?? null, d.code ?? null, d.message]);
}

/** Above this many candidate pairs in one group, the remaining ones are paired in order. */
const MAX_PAIRS = 250_000;

/**
 * Matches diagnostics before and after an edit by (path, severity, source, code, message). Within a group
 * of equal keys, a diagnostic whose line the edit only moved pairs first with one at its new line, then
 * the rest pair by nearest line; what is left over was introduced or resolved. `hunks` (per path) say
 * how the edit moved lines; without them lines are compared as they are.
 */
export function diffDiagnostics(
  before: readonly LocatedDiagnostic[],
  after: readonly LocatedDiagnostic[],
  hunks: ReadonlyMap<string, readonly LineHunk[]> = new Map(),
): DiagnosticsDiff {
  const groups = new Map<string, { b: LocatedDiagnostic[]; a: LocatedDiagnostic[] }>();
  const group = (d: LocatedDiagnostic) => {
    const k = keyOf(d);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { b: [], a: [] }));
    return g;
  };
  for (const d of before) group(d).b.push(d);
  for (const d of after) group(d).a.push(d);
  const introduced: LocatedDiagnostic[] = [];
  const resolved: LocatedDiagnostic[] = [];
  let unchanged = 0;
  for (const { b, a } of groups.values()) {
    const mapped = b.map((d) => mapLine(d.line, hunks.get(d.path) ?? []));
    const usedB = new Set<number>();
    const usedA = new Set<number>();
    const pair = (i: number, j: number) => {
      usedB.add(i);
      usedA.add(j);
      unchanged++;
    };
    // Only moved by the edit: the same line after mapping (the same column first).
    for (let i = 0; i < b.length; i++) {
      if (!mapped[i].exact) continue;
      const at = (sameCol: boolean) =>
        a.findIndex((d, j) => !usedA.has(j) && d.line === mapped[i].line && (!sameCol || (d.col === b[i].col && d.endLine - d.line === b[i].endLine - b[i].line)));
      const j = at(true) !== -1 ? at(true) : at(false);
      if (j !== -1) pair(i, j);
    }
    const restB = b.map((_, i) => i).filter((i) => !usedB.has(i));
    const restA = a.map((_, j) => j).filter((j) => !usedA.has(j));
    if (restB.length > 0 && restA.length > 0) {
      if (restB.length * restA.length > MAX_PAIRS) {
        for (let k = 0; k < Math.min(restB.length, restA.length); k++) pair(restB[k], restA[k]);
      } else {
        const pairs: [number, number, number][] = [];
        for (const i of restB) for (const j of restA) pairs.push([Math.abs(mapped[i].line - a[j].line), i, j]);
        pairs.sort((x, y) => x[0] - y[0] || x[1] - y[1] || x[2] - y[2]);
        for (const [, i, j] of pairs) if (!usedB.has(i) && !usedA.has(j)) pair(i, j);
      }
    }
    b.forEach((d, i) => usedB.has(i) || resolved.push(d));
    a.forEach((d, j) => usedA.has(j) || introduced.push(d));
  }
  return { introduced: introduced.sort(compareDiagnostics), resolved: resolved.sort(compareDiagnostics), unchanged };
}
