/** Small file helpers shared by the unit tests that build a workspace on disk. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { ToolResult } from '../../src/tools/tool';

/** Writes `rel` under `root`, creating its folders. */
export function writeUnder(root: string, rel: string, content: string | Buffer, mode?: number): void {
  const p = path.join(root, rel);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, content);
  if (mode !== undefined) fs.chmodSync(p, mode);
}

/** Every file under `root` by relative path, with its text (temp and backup leftovers included). */
export function fileTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else out[r] = fs.readFileSync(path.join(root, r), 'utf8');
    }
  };
  walk('');
  return out;
}

/** Every file under `dir` (none if it does not exist) by relative path, with its bytes. */
export function byteTree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (!fs.existsSync(dir)) return out;
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) out.set(r, fs.readFileSync(path.join(dir, r)));
    }
  };
  walk('');
  return out;
}

/** The data of a successful tool result (fails the test with the result otherwise). */
export function okData<T>(r: ToolResult): T {
  assert.equal(r.ok, true, JSON.stringify(r));
  return (r as { data: T }).data;
}
