/**
 * The layers of src/ import one way (see ARCHITECTURE.md):
 *
 *   store <- workspace <- tools, mcp <- agent, acp <- host <- index.ts
 *
 * A module may import its own folder, any lower layer, and within one layer only the sibling the table
 * allows (mcp builds on tools, acp builds on agent). No module may take part in an import cycle, type-only
 * imports included. Every import is parsed with the TypeScript compiler's own pre-processor.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(__dirname, '../../src');

/** The layer of each top-level folder of src/ (and of src/index.ts, the library's public entry). */
const LAYERS: Record<string, number> = {
  types: -1, // ambient declarations for untyped packages
  store: 0,
  workspace: 1,
  tools: 2,
  mcp: 2,
  agent: 3,
  acp: 3,
  host: 4,
  'index.ts': 5,
};
/** Same-layer imports that are allowed, as `from -> to`. */
const SIBLINGS = new Set(['mcp->tools', 'acp->agent']);

type Graph = Map<string, { spec: string; target: string }[]>;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.tsx?$/.test(e.name)) out.push(p);
  }
  return out;
}

/** The file a relative import names (`./x`, `./x.js`, `./dir` with index.ts), relative to src/; null = not under src/. */
function resolveImport(fromRel: string, spec: string): string | null {
  const base = path.join(path.dirname(path.join(SRC, fromRel)), spec).replace(/\.(js|ts)$/, '');
  for (const cand of [`${base}.ts`, `${base}.tsx`, `${base}.d.ts`, path.join(base, 'index.ts')]) {
    if (fs.existsSync(cand)) return path.relative(SRC, cand).split(path.sep).join('/');
  }
  return null;
}

/** Every relative import of every module under src/ (static, `export ... from`, `import()`, `require()`). */
function importGraph(): Graph {
  const graph: Graph = new Map();
  for (const abs of sourceFiles(SRC)) {
    const rel = path.relative(SRC, abs).split(path.sep).join('/');
    const info = ts.preProcessFile(fs.readFileSync(abs, 'utf8'), true, true);
    const edges: { spec: string; target: string }[] = [];
    for (const f of info.importedFiles) {
      if (!f.fileName.startsWith('.')) continue; // a package
      const target = resolveImport(rel, f.fileName);
      assert.ok(target, `src/${rel}: import '${f.fileName}' names no file under src/`);
      edges.push({ spec: f.fileName, target });
    }
    graph.set(rel, edges);
  }
  return graph;
}

function layerOf(rel: string): { name: string; rank: number | undefined } {
  const name = rel.includes('/') ? rel.slice(0, rel.indexOf('/')) : rel;
  return { name, rank: LAYERS[name] };
}

/** The imports that break the layering, one message each. */
export function upwardImports(graph: Graph): string[] {
  const problems: string[] = [];
  for (const [from, edges] of graph) {
    const a = layerOf(from);
    if (a.rank === undefined) {
      problems.push(`src/${from}: '${a.name}' is in no layer; add it to LAYERS in test/unit/layers.test.ts and to ARCHITECTURE.md`);
      continue;
    }
    for (const { spec, target } of edges) {
      const b = layerOf(target);
      if (b.rank === undefined || a.name === b.name) continue; // reported for the target's own file / same folder
      if (b.rank > a.rank) problems.push(`src/${from}: import '${spec}' runs upward (${a.name} -> ${b.name}, src/${target})`);
      else if (b.rank === a.rank && !SIBLINGS.has(`${a.name}->${b.name}`)) {
        problems.push(`src/${from}: import '${spec}' runs sideways (${a.name} -> ${b.name}, src/${target}); allowed within a layer: ${[...SIBLINGS].join(', ')}`);
      }
    }
  }
  return problems;
}

/** Every import cycle (Tarjan's strongly connected components), each as `a -> b -> ... -> a`. */
export function importCycles(graph: Graph): string[] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const { target: w } of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) !== idx.get(v)) return;
    const members: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      members.push(w);
    } while (w !== v);
    const self = (graph.get(v) ?? []).some((e) => e.target === v);
    if (members.length > 1 || self) cycles.push(describeCycle(graph, new Set(members), v));
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return cycles;
}

/** One concrete loop through a strongly connected component, naming the import at each step. */
function describeCycle(graph: Graph, members: Set<string>, start: string): string {
  const steps: string[] = [];
  const seen = new Set<string>();
  let at = start;
  while (!seen.has(at)) {
    seen.add(at);
    const next = (graph.get(at) ?? []).find((e) => members.has(e.target))!;
    steps.push(`src/${at} imports '${next.spec}'`);
    at = next.target;
  }
  return `import cycle: ${steps.join(' -> ')} -> back to src/${at}`;
}

test('every import in src/ runs down the layers (or to an allowed sibling)', () => {
  const problems = upwardImports(importGraph());
  assert.deepEqual(problems, [], `imports that break the layering:\n${problems.join('\n')}`);
});

test('no two modules in src/ import each other, directly or around a loop', () => {
  const cycles = importCycles(importGraph());
  assert.deepEqual(cycles, [], `${cycles.join('\n')}`);
});

test('the check itself catches an upward import, a sideways one and a cycle', () => {
  const g: Graph = new Map([
    ['workspace/a.ts', [{ spec: '../tools/b', target: 'tools/b.ts' }]],
    ['tools/b.ts', [{ spec: '../mcp/c', target: 'mcp/c.ts' }]],
    ['mcp/c.ts', [{ spec: '../tools/b', target: 'tools/b.ts' }]],
    ['agent/d.ts', [{ spec: '../store', target: 'store/index.ts' }]],
    ['store/index.ts', []],
  ]);
  const up = upwardImports(g);
  assert.equal(up.length, 2);
  assert.match(up[0], /^src\/workspace\/a\.ts: import '\.\.\/tools\/b' runs upward \(workspace -> tools/);
  assert.match(up[1], /^src\/tools\/b\.ts: import '\.\.\/mcp\/c' runs sideways/);
  const cycles = importCycles(g);
  assert.equal(cycles.length, 1);
  assert.match(cycles[0], /src\/tools\/b\.ts imports '\.\.\/mcp\/c' -> src\/mcp\/c\.ts imports '\.\.\/tools\/b'/);
});
