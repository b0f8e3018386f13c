/**
 * A real concurrent symlink swapper (issue 18, item 8): a separate process exchanges a folder of the
 * workspace with a symlink to an outside folder using renameat2(RENAME_EXCHANGE), thousands of times a
 * second, while the agent's tools read, grep, list, create, write, edit, delete and move files in that
 * folder. Nothing outside may be read, listed or changed, and no temp file may be left outside; the
 * suite checks that the swapper really swapped (its count) while the calls ran.
 * Run: `node --import tsx stress/swap.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openWorkspace } from '../src/index';
import type { ToolResult } from '../src/tools/tool';
import { startSwapper, swapperUnavailable } from '../test/support/swapper';
import { Checks, mainIfDirect, sameTree, scaled, sha256, snapshotTree, tempDir, treeDiff, type SuiteReport } from './lib';

const CANARY = 'OUTSIDE-SWAP-CANARY';
const OUTSIDE_NAME = 'only-outside-name';
const SAME = 'same content on both sides\n';

/** Every entry under `dir` (names, symlink targets, inode, size, mtime in ns): cheap enough to take after every call. */
function statTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const st = fs.lstatSync(path.join(dir, r), { bigint: true });
      out.set(r, e.isSymbolicLink() ? `link ${fs.readlinkSync(path.join(dir, r))}` : `${e.isDirectory() ? 'dir' : 'file'} ${st.ino} ${st.size} ${st.mtimeNs}`);
      if (e.isDirectory()) walk(r);
    }
  };
  walk('');
  return out;
}

function statDiff(a: Map<string, string>, b: Map<string, string>): string | null {
  for (const [k, v] of a) if (b.get(k) !== v) return b.has(k) ? `${k} changed` : `${k} disappeared`;
  for (const k of b.keys()) if (!a.has(k)) return `${k} appeared`;
  return null;
}

type Op = 'read_file' | 'grep' | 'search_files' | 'glob' | 'list_directory' | 'create_file' | 'write_file' | 'edit_file' | 'delete_file' | 'move_file (out of the folder)' | 'move_file (into the folder)' | 'apply_patch';

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks(Number(process.env.STRESS_EXAMPLES ?? 20));
  const why = swapperUnavailable();
  if (why) {
    checks.figures.push(why);
    return checks.report('swap', 'Concurrent symlink swapper (renameat2 RENAME_EXCHANGE)', started);
  }
  const rounds = scaled(250, 5);
  const tmp = tempDir('swap');
  try {
    const base = tmp.dir;
    const root = path.join(base, 'ws');
    const outside = path.join(base, 'outside');
    const victim = path.join(outside, 'victim');
    fs.mkdirSync(path.join(root, 'd'), { recursive: true });
    fs.mkdirSync(victim, { recursive: true });
    fs.writeFileSync(path.join(root, 'd', 'f.txt'), 'inside text\n');
    fs.writeFileSync(path.join(victim, 'f.txt'), `${CANARY} read from outside\n`);
    fs.writeFileSync(path.join(victim, `${OUTSIDE_NAME}.txt`), `${CANARY}\n`);
    for (let i = 0; i < rounds; i++) {
      // Same bytes inside and outside: the stale-file gate cannot tell them apart, only confinement can.
      for (const dir of [path.join(root, 'd'), victim]) {
        fs.writeFileSync(path.join(dir, `w${i}.txt`), SAME);
        fs.writeFileSync(path.join(dir, `e${i}.txt`), SAME);
        fs.writeFileSync(path.join(dir, `del${i}.txt`), SAME);
        fs.writeFileSync(path.join(dir, `mv${i}.txt`), SAME);
        fs.writeFileSync(path.join(dir, `p${i}.txt`), SAME);
      }
      fs.writeFileSync(path.join(root, `in${i}.txt`), SAME);
    }
    fs.symlinkSync(victim, path.join(root, 'lnk'));
    const ws = openWorkspace({ root, dataDir: path.join(base, 'data'), sessionId: 'stress-swap' });
    const outsideBefore = snapshotTree(outside);
    const statsBefore = statTree(outside);
    const sha = sha256(SAME);
    const ops: [Op, (i: number) => Promise<ToolResult>][] = [
      ['read_file', () => ws.call('read_file', { path: 'd/f.txt' })],
      ['grep', () => ws.call('grep', { pattern: 'CANARY|inside', path: 'd' })],
      ['search_files', () => ws.call('search_files', { mode: 'text', query: 'CANARY', path: 'd' })],
      ['glob', () => ws.call('glob', { pattern: '**/*only*', path: 'd' })],
      ['list_directory', () => ws.call('list_directory', { path: 'd' })],
      ['create_file', (i) => ws.call('create_file', { path: `d/new${i}.txt`, content: 'created\n' })],
      ['write_file', (i) => ws.call('write_file', { path: `d/w${i}.txt`, content: 'written\n', expectedSha256: sha })],
      ['edit_file', (i) => ws.call('edit_file', { path: `d/e${i}.txt`, expectedSha256: sha, edits: [{ oldText: 'same', newText: 'edited' }] })],
      ['delete_file', (i) => ws.call('delete_file', { path: `d/del${i}.txt`, expectedSha256: sha })],
      ['move_file (out of the folder)', (i) => ws.call('move_file', { from: `d/mv${i}.txt`, to: `moved${i}.txt`, expectedSha256: sha })],
      ['move_file (into the folder)', (i) => ws.call('move_file', { from: `in${i}.txt`, to: `d/in${i}.txt`, expectedSha256: sha })],
      [
        'apply_patch',
        (i) =>
          ws.call('apply_patch', {
            patch: `--- a/d/p${i}.txt\n+++ b/d/p${i}.txt\n@@ -1 +1 @@\n-same content on both sides\n+patched\n`,
            expectedSha256ByPath: { [`d/p${i}.txt`]: sha },
          }),
      ],
    ];
    const stats = new Map<Op, { attempts: number; refused: number; escaped: number }>();
    const swapper = await startSwapper(path.join(root, 'd'), path.join(root, 'lnk'));
    let swaps = 0;
    const t0 = Date.now();
    try {
      for (let i = 0; i < rounds; i++) {
        for (const [op, call] of ops) {
          const s = stats.get(op) ?? { attempts: 0, refused: 0, escaped: 0 };
          stats.set(op, s);
          s.attempts++;
          let res: ToolResult;
          try {
            res = await call(i);
          } catch (err) {
            checks.record('no call throws', `${op} #${i}: ${String(err)}`);
            continue;
          }
          if (!res.ok) s.refused++;
          const text = JSON.stringify(res);
          const leaked = text.includes(CANARY) || text.includes(OUTSIDE_NAME);
          // After every call: names, inodes, sizes and nanosecond mtimes (any write changes one); bytes at the end.
          const changed = statDiff(statsBefore, statTree(outside));
          if (leaked || changed) s.escaped++;
          checks.record('no outside content or name in any result', leaked && `${op} #${i}: ${text.slice(0, 300)}`);
          checks.record('nothing outside created, changed or deleted (temp files included; checked by stat after each call)', changed && `${op} #${i}: ${changed}`);
          if (changed) {
            // Put the outside back so the next calls are judged on their own.
            fs.rmSync(victim, { recursive: true, force: true });
            fs.mkdirSync(victim, { recursive: true });
            for (const [rel, bytes] of outsideBefore) fs.writeFileSync(path.join(outside, rel), bytes);
            statsBefore.clear();
            for (const [k, v] of statTree(outside)) statsBefore.set(k, v);
          }
        }
      }
    } finally {
      swaps = await swapper.stop();
    }
    const seconds = (Date.now() - t0) / 1000;
    const attempts = [...stats.values()].reduce((n, s) => n + s.attempts, 0);
    // The precondition: the folder really was exchanged, many times per call on average.
    checks.record(`the swapper exchanged the folder at least once per call (${attempts} calls)`, swaps < attempts && `only ${swaps} swaps`);
    const end = snapshotTree(outside);
    checks.record('files outside the workspace unchanged at the end (every byte)', !sameTree(outsideBefore, end) && treeDiff(outsideBefore, end));
    const verify = ws.verifyAuditLog();
    checks.record('the audit chain verifies', !verify.ok && JSON.stringify(verify));
    ws.close();
    checks.figures.push(`${swaps} exchanges by a separate process in ${seconds.toFixed(1)} s (${Math.round(swaps / seconds)}/s) during ${attempts} calls (${rounds} rounds × ${ops.length} tool uses).`);
    checks.figures.push('| tool use | attempts | refused | escaped |');
    checks.figures.push('|---|---:|---:|---:|');
    for (const [op, s] of stats) checks.figures.push(`| ${op} | ${s.attempts} | ${s.refused} | ${s.escaped} |`);
    const escaped = [...stats.values()].reduce((n, s) => n + s.escaped, 0);
    const refused = [...stats.values()].reduce((n, s) => n + s.refused, 0);
    checks.figures.push(`In all: ${attempts} attempts, ${refused} refused, ${escaped} escaped.`);
  } finally {
    tmp.remove();
  }
  return checks.report('swap', 'Concurrent symlink swapper (renameat2 RENAME_EXCHANGE)', started);
}

mainIfDirect(module, run);
