import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, ERROR_KINDS } from '../../src/index';
import { seededRandom } from '../support/rng';
import { FUZZ_WORDS, randomFuzzText } from '../support/fuzz-gen';

const rng = seededRandom;
const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');
const FILE_KINDS = new Set<string>(ERROR_KINDS.filter((k) => !['internal_error', 'cancelled', 'timeout', 'network_error'].includes(k)));

function snapshot(root: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(r);
      else out.set(r, fs.readFileSync(path.join(root, r)));
    }
  };
  walk('');
  return out;
}
function sameTree(a: Map<string, Buffer>, b: Map<string, Buffer>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (!b.get(k)?.equals(v)) return false;
  return true;
}


test('fuzz: thousands of random edits and patches never crash and never write partially', async () => {
  const seed = Number(process.env.FUZZ_SEED ?? 20261122);
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-fuzz-')));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  const ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 'fuzz' });
  const names = ['a.txt', 'b.txt', 'd/c.txt', 'd/e/f.txt', 'g.txt'];
  const randomText = (): string => randomFuzzText(rand);
  for (const n of names.slice(0, 4)) {
    fs.mkdirSync(path.dirname(path.join(root, n)), { recursive: true });
    fs.writeFileSync(path.join(root, n), randomText());
  }
  let faults = true;
  let okCount = 0;
  let failCount = 0;
  const ITER = Number(process.env.FUZZ_ITER ?? 2500);
  try {
    for (let i = 0; i < ITER; i++) {
      const before = snapshot(root);
      // One call in ten gets a simulated I/O failure at a random commit step.
      const failAt = faults && rand() < 0.1 ? Math.floor(rand() * 6) : -1;
      let step = 0;
      ws.workspace.files.faultHook = () => {
        if (step++ === failAt) throw Object.assign(new Error('simulated EIO'), { code: 'EIO' });
      };
      const target = pick(names);
      const cur = before.get(target);
      const curText = cur?.toString('utf8') ?? '';
      const curLines = curText.split('\n');
      const goodSha = cur ? sha(cur) : sha('');
      const expectedSha = rand() < 0.85 ? goodSha : sha('stale' + i);
      const randomSnippet = (): string => {
        if (rand() < 0.7 && curLines.length > 1) {
          const s = Math.floor(rand() * (curLines.length - 1));
          return curLines.slice(s, s + 1 + Math.floor(rand() * 2)).join('\n').replace(/\r/g, '');
        }
        return pick(FUZZ_WORDS) + (rand() < 0.5 ? ' ' + pick(FUZZ_WORDS) : '');
      };
      const op = rand();
      let name: string;
      let args: unknown;
      if (op < 0.45) {
        name = 'edit_file';
        args = {
          path: target,
          expectedSha256: expectedSha,
          edits: Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({ oldText: randomSnippet(), newText: randomText().slice(0, 30), replaceAll: rand() < 0.2 })),
        };
      } else if (op < 0.75) {
        name = 'apply_patch';
        const sections: string[] = [];
        for (let k = 0; k < 1 + Math.floor(rand() * 3); k++) {
          const p = pick(names);
          const r = rand();
          if (r < 0.25) sections.push(`*** Add File: ${p}\n` + randomText().replace(/\r/g, '').split('\n').filter((l, idx, xs) => idx < xs.length - 1 || l !== '').map((l) => `+${l}`).join('\n') + '\n');
          else if (r < 0.4) sections.push(`*** Delete File: ${p}\n`);
          else {
            const old = randomSnippet().split('\n');
            sections.push(`*** Update File: ${p}\n@@\n${old.map((l) => `-${l}`).join('\n')}\n+${pick(FUZZ_WORDS)}\n`);
          }
        }
        const patch = rand() < 0.05 ? sections.join('') : `*** Begin Patch\n${sections.join('')}*** End Patch\n`;
        args = { patch, ...(rand() < 0.5 ? { expectedSha256ByPath: { [target]: rand() < 0.2 ? '' : expectedSha } } : {}) };
      } else if (op < 0.85) {
        name = 'write_file';
        args = { path: target, content: randomText(), expectedSha256: expectedSha };
      } else if (op < 0.92) {
        name = 'create_file';
        args = { path: target, content: randomText() };
      } else if (op < 0.96) {
        name = 'move_file';
        args = { from: target, to: pick(names), expectedSha256: expectedSha };
      } else {
        name = 'delete_file';
        args = { path: target, expectedSha256: expectedSha };
      }
      const res = await ws.call(name, args);
      const after = snapshot(root);
      if (!res.ok) {
        failCount++;
        if (failAt === -1 || step <= failAt) assert.ok(FILE_KINDS.has(res.error.kind), `iteration ${i} (seed ${seed}): ${name} ${JSON.stringify(res.error)}`);
        assert.ok(sameTree(before, after), `iteration ${i} (seed ${seed}): failed ${name} changed files: ${JSON.stringify(args)}`);
        continue;
      }
      okCount++;
      // Success: every file the result names has the reported content; every other file is untouched.
      const d = res.data as { path?: string; sha256?: string; to?: string; from?: string; files?: { path: string; action: string; moveTo?: string; sha256?: string }[] };
      const touched = new Set<string>();
      if (d.files) {
        const finals = new Map<string, string | null>();
        for (const f of d.files) {
          touched.add(f.path);
          if (f.moveTo) touched.add(f.moveTo);
          if (f.action === 'delete') finals.set(f.path, null);
          else if (f.action === 'move') {
            finals.set(f.path, null);
            finals.set(f.moveTo!, f.sha256!);
          } else finals.set(f.path, f.sha256!);
        }
        for (const [p, s] of finals) {
          if (s === null) assert.ok(!after.has(p) || finals.get(p) !== null, `iteration ${i}: ${p} should be gone`);
          else assert.equal(sha(after.get(p)!), s, `iteration ${i}: ${p} content`);
        }
      } else if (name === 'move_file') {
        touched.add(d.from!).add(d.to!);
        assert.ok(!after.has(d.from!));
        assert.ok(after.get(d.to!)!.equals(before.get(d.from!)!));
      } else if (name === 'delete_file') {
        touched.add(d.path!);
        assert.ok(!after.has(d.path!));
      } else {
        touched.add(d.path!);
        assert.equal(sha(after.get(d.path!)!), d.sha256, `iteration ${i}: ${name} content`);
      }
      for (const [p, v] of before) if (!touched.has(p)) assert.ok(after.get(p)?.equals(v), `iteration ${i}: untouched ${p} changed`);
      for (const p of after.keys()) assert.ok(before.has(p) || touched.has(p), `iteration ${i}: stray file ${p}`);
      // Keep the workspace populated.
      if (after.size < 2) {
        faults = false;
        for (const n of names.slice(0, 3)) if (!after.has(n)) await ws.call('create_file', { path: n, content: randomText() });
        faults = true;
      }
    }
  } finally {
    ws.workspace.files.faultHook = undefined;
    ws.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  assert.ok(okCount > ITER / 10, `enough successes (${okCount})`);
  assert.ok(failCount > ITER / 10, `enough failures (${failCount})`);
});
