import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffDiagnostics, mapLine } from '../../src/workspace/diagnostics-diff';
import { compareDiagnostics, type LineHunk, type LocatedDiagnostic, type Severity } from '../../src/workspace/diagnostics';

const d = (line: number, message: string, extra: Partial<LocatedDiagnostic> = {}): LocatedDiagnostic => ({
  path: 'a.ts',
  severity: 'error' as Severity,
  line,
  col: 1,
  endLine: line,
  endCol: 2,
  message,
  source: 'ts',
  ...extra,
});
const hunk = (start: number, count: number, newStart: number, newCount: number): LineHunk => ({ start, count, newStart, newCount });
const at = (xs: LocatedDiagnostic[]) => xs.map((x) => `${x.path}:${x.line} ${x.severity} ${x.message}`);

test('mapLine: lines before a hunk stay, lines after it move by its size, lines inside it are not exact', () => {
  // Lines 3-4 replaced by 5 lines at 3-7.
  const hunks = [hunk(3, 2, 3, 5)];
  assert.deepEqual(mapLine(2, hunks), { line: 2, exact: true });
  assert.deepEqual(mapLine(3, hunks), { line: 3, exact: false });
  assert.deepEqual(mapLine(4, hunks), { line: 4, exact: false });
  assert.deepEqual(mapLine(5, hunks), { line: 8, exact: true });
  // Insertion of 2 lines after line 1 (count 0: inserted after `start`), deletion of line 6.
  const more = [hunk(1, 0, 2, 2), hunk(6, 1, 7, 0)];
  assert.deepEqual(mapLine(1, more), { line: 1, exact: true });
  assert.deepEqual(mapLine(2, more), { line: 4, exact: true });
  assert.deepEqual(mapLine(6, more), { line: 7, exact: false });
  assert.deepEqual(mapLine(7, more), { line: 8, exact: true });
  // Insertion before the first line.
  assert.deepEqual(mapLine(1, [hunk(0, 0, 1, 3)]), { line: 4, exact: true });
  assert.deepEqual(mapLine(10, []), { line: 10, exact: true });
});

test('the same diagnostics on both sides are unchanged, even when the edit moved their lines', () => {
  const before = [d(1, 'a'), d(5, 'b', { severity: 'warning' })];
  const after = [d(1, 'a'), d(9, 'b', { severity: 'warning' })];
  assert.deepEqual(diffDiagnostics(before, after, new Map([['a.ts', [hunk(2, 0, 3, 4)]]])), { introduced: [], resolved: [], unchanged: 2 });
  // Without the hunks, a lone diagnostic that moved still matches its key.
  assert.deepEqual(diffDiagnostics(before, after), { introduced: [], resolved: [], unchanged: 2 });
});

test('new and gone diagnostics are introduced and resolved; errors first', () => {
  const r = diffDiagnostics([d(1, 'old'), d(2, 'stays')], [d(2, 'stays'), d(4, 'new hint', { severity: 'hint' }), d(3, 'new')]);
  assert.deepEqual(at(r.introduced), ['a.ts:3 error new', 'a.ts:4 hint new hint']);
  assert.deepEqual(at(r.resolved), ['a.ts:1 error old']);
  assert.equal(r.unchanged, 1);
});

test('severity, source, code and path are part of what makes two diagnostics the same', () => {
  const base = d(1, 'm', { code: 1 });
  for (const other of [{ severity: 'warning' as Severity }, { source: 'eslint' }, { code: 2 }, { path: 'b.ts' }, { source: undefined }]) {
    const r = diffDiagnostics([base], [{ ...base, ...other }]);
    assert.equal(r.introduced.length, 1, JSON.stringify(other));
    assert.equal(r.resolved.length, 1, JSON.stringify(other));
    assert.equal(r.unchanged, 0);
  }
});

test('repeated messages: the one the edit added is introduced, those it only moved are not', () => {
  // "unused import" hints at lines 1-3; 10 lines inserted at the top, and one more hint on new line 5.
  const msg = 'unused import';
  const before = [d(1, msg), d(2, msg), d(3, msg)];
  const after = [d(5, msg), d(11, msg), d(12, msg), d(13, msg)];
  const hunks = new Map([['a.ts', [hunk(0, 0, 1, 10)]]]);
  const r = diffDiagnostics(before, after, hunks);
  assert.deepEqual(at(r.introduced), ['a.ts:5 error unused import']);
  assert.deepEqual(r.resolved, []);
  assert.equal(r.unchanged, 3);
  // One of three removed: the one whose line the edit replaced is the one resolved.
  const r2 = diffDiagnostics(before, [d(1, msg), d(2, msg)], new Map([['a.ts', [hunk(2, 1, 2, 0)]]]));
  assert.deepEqual(at(r2.resolved), ['a.ts:2 error unused import']);
  assert.equal(r2.unchanged, 2);
});

test('a diagnostic on an edited line that is still there after the edit is unchanged', () => {
  const r = diffDiagnostics([d(3, "Cannot find name 'foo'.")], [d(3, "Cannot find name 'foo'.", { col: 9 })], new Map([['a.ts', [hunk(3, 1, 3, 1)]]]));
  assert.deepEqual(r, { introduced: [], resolved: [], unchanged: 1 });
});

test('several files at once; results sorted by path, severity, position', () => {
  const before = [d(1, 'x', { path: 'b.ts' })];
  const after = [d(2, 'w', { path: 'b.ts', severity: 'warning' }), d(9, 'e', { path: 'a.ts' }), d(1, 'w', { path: 'a.ts', severity: 'warning' })];
  const r = diffDiagnostics(before, after);
  assert.deepEqual(at(r.introduced), ['a.ts:9 error e', 'a.ts:1 warning w', 'b.ts:2 warning w']);
  assert.deepEqual(at(r.resolved), ['b.ts:1 error x']);
  assert.deepEqual([...r.introduced].sort(compareDiagnostics), r.introduced);
});

test('large groups of identical diagnostics stay fast and balanced', () => {
  const before = Array.from({ length: 2000 }, (_, i) => d(i + 1, 'same'));
  const after = Array.from({ length: 1990 }, (_, i) => d(i + 1, 'same'));
  const t0 = performance.now();
  const r = diffDiagnostics(before, after);
  assert.ok(performance.now() - t0 < 2000);
  assert.equal(r.unchanged, 1990);
  assert.equal(r.resolved.length, 10);
  assert.equal(r.introduced.length, 0);
});
