/**
 * Step marks of one write call for the bench (issue 24): with CABOOSE_EDIT_TRACE set to a file, each
 * edit_file call appends one JSON line there: [label, ms since the call started] for every step reached.
 * Off (one boolean test a mark) without it. Never written to stdout (the RPC channel).
 */
import fs from 'node:fs';

const file = process.env.CABOOSE_EDIT_TRACE || null;
let t0 = 0n;
let marks: [string, number][] | null = null;

/** Starts a trace (drops an unfinished one). */
export function traceStart(): void {
  if (!file) return;
  t0 = process.hrtime.bigint();
  marks = [];
}

/** Starts a trace unless one is running (a step inside a traced request). */
export function traceStartIfIdle(): void {
  if (!marks) traceStart();
}

/** Marks that the current trace reached `label`. */
export function traceMark(label: string): void {
  if (marks) marks.push([label, Number(process.hrtime.bigint() - t0) / 1e6]);
}

/** Ends the trace and appends it to the trace file. */
export function traceEnd(): void {
  if (!marks || !file) return;
  traceMark('end');
  try {
    fs.appendFileSync(file, JSON.stringify(marks) + '\n');
  } catch {
    // a trace is best effort
  }
  marks = null;
}
