/**
 * SIGKILLs during delete, move and create as well as write and patch (issue 18 items 2 and 3): a child
 * (stress/kills-child.js, on the built dist/) runs those tools on small files and is SIGKILLed at random
 * moments, half of them inside a commit. After some kills the "user" appends a line to a file the
 * interrupted call had already written, before the workspace is opened again. After each next open:
 * - a file the interrupted call deleted is either in place or has a restorable trash entry (its bytes
 *   come back with the recorded sha256), and every delete reported done has one;
 * - no trash content without its entry (orphans are adopted or dropped at the open);
 * - a move is all old or all new, a create absent or complete, every other file old or new;
 * - a line the user added after the crash is still there (recovery never reverts it);
 * - no temp or backup file is left, the audit chain verifies.
 * Run after `npm run build`: `node --import tsx stress/kills.ts`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { seededRandom } from '../test/support/rng';
import { Checks, mainIfDirect, scaled, sha256, sleep, tempDir, type SuiteReport } from './lib';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { openWorkspace } = require('../dist/index') as typeof import('../src/index');

const CHILD = path.join(__dirname, 'kills-child.js');
const NAMES = ['p0.txt', 'p1.txt', 'p2.txt', 'p3.txt', 'd/p4.txt', 'd/p5.txt', 'd/e/p6.txt', 'p7.txt'];
const LEFTOVER = /\.caboose-[0-9a-f]{12}\.(tmp|bak)$/;

interface Intent {
  n: number;
  tool: string;
  before: Record<string, string | null>;
  after: Record<string, string | null>;
}
type Line = { intent: Intent } | { done: number; ok: boolean; kind?: string; trashId?: string };

function readLog(file: string): Line[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Line];
      } catch {
        return [];
      }
    });
}

const shaOf = (root: string, rel: string): string | null => {
  try {
    return sha256(fs.readFileSync(path.join(root, rel)));
  } catch {
    return null;
  }
};

function leftovers(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(dir, e.name));
      else if (LEFTOVER.test(e.name)) out.push(path.relative(root, path.join(dir, e.name)));
    }
  };
  walk(root);
  return out;
}

async function runChild(root: string, dataDir: string, log: string, seed: number, atCall: number, atStep: string | null, delayMs: number): Promise<void> {
  const child = spawn(process.execPath, [CHILD, root, dataDir, log, String(seed)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const calls = (out.match(/^call \d+$/gm) ?? []).length;
      const tail = out.slice(out.lastIndexOf('call '));
      if (out.includes('ready\n') && calls >= atCall && (!atStep || (atCall > 0 && tail.includes(`step ${atStep}`)))) resolve();
    });
    void exited.then(() => reject(new Error(`kills child exited before the kill: ${stderr.slice(-1500)}`)));
  });
  await sleep(delayMs);
  child.kill('SIGKILL');
  await exited;
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks();
  const kills = scaled(150, 5);
  const tmp = tempDir('kills');
  const rand = seededRandom(20261125);
  const stats = { pendingDelete: 0, deleteGone: 0, deleteInPlace: 0, pendingMove: 0, pendingCreate: 0, userEdits: 0, userEditsOnRecovered: 0, kept: 0, restored: 0, adopted: 0, dropped: 0, deletesDone: 0, calls: 0 };
  const byTool = new Map<string, number>();
  try {
    const root = path.join(tmp.dir, 'ws');
    const dataDir = path.join(tmp.dir, 'data');
    const log = path.join(tmp.dir, 'intents.jsonl');
    for (const rel of NAMES.slice(0, 6)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), Array.from({ length: 300 }, (_, i) => `seed ${rel} ${i}`).join('\n') + '\n');
    }
    fs.mkdirSync(path.join(root, 'd', 'e'), { recursive: true });
    openWorkspace({ root, dataDir, sessionId: 'kills-setup' }).close();
    const doneDeletes: { rel: string; sha: string; trashId: string }[] = [];
    let seen = 0;
    for (let k = 0; k < kills; k++) {
      const known = new Map(NAMES.map((r) => [r, shaOf(root, r)]));
      const aim = rand();
      const atStep = aim < 0.2 ? 'commit' : aim < 0.4 ? 'renamed' : aim < 0.55 ? 'record' : null;
      const atCall = atStep ? 1 + Math.floor(rand() * 3) : Math.floor(rand() * 4);
      await runChild(root, dataDir, log, Math.floor(rand() * 2 ** 31), atCall, atStep, atStep ? Math.floor(rand() * 15) : Math.floor(rand() * 60));
      const lines = readLog(log).slice(seen);
      seen += lines.length;
      let pending: Intent | null = null;
      for (const l of lines) {
        if ('intent' in l) pending = l.intent;
        else if (pending && l.done === pending.n) {
          stats.calls++;
          byTool.set(pending.tool, (byTool.get(pending.tool) ?? 0) + 1);
          if (l.ok) for (const [rel, s] of Object.entries(pending.after)) known.set(rel, s);
          if (l.ok && pending.tool === 'delete_file' && l.trashId) {
            const rel = Object.keys(pending.before)[0];
            doneDeletes.push({ rel, sha: pending.before[rel]!, trashId: l.trashId });
          }
          pending = null;
        }
      }
      // The user edits a file the interrupted call had already written, before caboose starts again.
      let userEdit: { rel: string; line: string } | null = null;
      if (pending && rand() < 0.6) {
        const written = Object.entries(pending.after).filter(([rel, s]) => s !== null && shaOf(root, rel) === s);
        if (written.length) {
          const rel = written[0][0];
          userEdit = { rel, line: `USER EDIT after kill ${k}` };
          fs.appendFileSync(path.join(root, rel), `${userEdit.line}\n`);
          stats.userEdits++;
        }
      }
      const ws = openWorkspace({ root, dataDir, sessionId: `kills-check-${k}` });
      try {
        const rec = ws.workspace.recovered;
        stats.kept += rec.kept.length;
        stats.restored += rec.restored.length;
        stats.adopted += ws.workspace.trashRecovered.adopted.length;
        stats.dropped += ws.workspace.trashRecovered.dropped.length;
        if (userEdit && rec.kept.includes(path.join(root, userEdit.rel))) stats.userEditsOnRecovered++;
        const trash = ws.listTrash();
        const restorable = async (rel: string, sha: string, id?: string): Promise<boolean> => {
          const e = trash.find((t) => (id ? t.id === id : t.originalPath === rel && t.sha256 === sha));
          return !!e && e.sha256 === sha && !!(await ws.workspace.trash.read(e));
        };
        if (pending) {
          const p: Intent = pending;
          if (p.tool === 'delete_file') {
            stats.pendingDelete++;
            const rel = Object.keys(p.before)[0];
            const now = shaOf(root, rel);
            if (now === null) stats.deleteGone++;
            else stats.deleteInPlace++;
            checks.record(
              'a delete cut off by the kill: the file is in place or has a restorable trash entry',
              now === p.before[rel] || (now === null && (await restorable(rel, p.before[rel]!))) ? null : `kill ${k}: ${rel} ${now === null ? 'gone without a restorable entry' : 'neither old nor absent'}`,
            );
          }
          if (p.tool === 'move_file') {
            stats.pendingMove++;
            // A destination the user edited after the crash counts as new (it is kept as the user left it).
            const states = Object.entries(p.before).map(([rel, s]) =>
              shaOf(root, rel) === s ? 'old' : shaOf(root, rel) === p.after[rel] || userEdit?.rel === rel ? 'new' : 'neither',
            );
            if (userEdit && states.includes('old') && Object.keys(p.before).includes(userEdit.rel)) states.splice(0, states.length, 'old');
            checks.record('a move cut off by the kill is all old or all new', new Set(states).size === 1 && states[0] !== 'neither' ? null : `kill ${k}: ${states.join('/')}`);
          }
          if (p.tool === 'create_file') stats.pendingCreate++;
        }
        for (const rel of NAMES) {
          const now = shaOf(root, rel);
          if (userEdit && rel === userEdit.rel) {
            const text = fs.readFileSync(path.join(root, rel), 'utf8');
            checks.record('a line the user added after the crash is still there (recovery did not revert it)', text.includes(userEdit.line) ? null : `kill ${k}: ${rel} lost the user's line`);
            continue;
          }
          const allowed = [known.get(rel) ?? null, ...(pending && rel in pending.after ? [pending.after[rel]] : [])];
          checks.record('every file holds its old or its new bytes (or is absent where that is one of them)', allowed.includes(now) ? null : `kill ${k}: ${rel} (pending ${pending?.tool ?? 'none'})`);
        }
        for (const d of doneDeletes.splice(0)) {
          checks.record('every delete reported done has a restorable trash entry', (await restorable(d.rel, d.sha, d.trashId)) ? null : `kill ${k}: ${d.rel} (${d.trashId})`);
          stats.deletesDone++;
        }
        const trashDir = path.join(dataDir, 'trash');
        const blobs = fs.existsSync(trashDir) ? fs.readdirSync(trashDir).filter((f) => !f.endsWith('.json') && !f.endsWith('.tmp')) : [];
        const orphans = blobs.filter((b) => !ws.workspace.store.trash.get(b));
        checks.record('no trash content without its entry after the open (orphans adopted)', orphans.length ? `kill ${k}: ${orphans.join(', ')}` : null);
        const left = leftovers(root);
        checks.record('no temp or backup file left in the workspace after the next open', left.length ? `kill ${k}: ${left.join(', ')}` : null);
        const v = ws.verifyAuditLog();
        checks.record('the audit chain verifies', v.ok ? null : `kill ${k}: ${JSON.stringify(v)}`);
      } finally {
        ws.close();
      }
    }
  } finally {
    tmp.remove();
  }
  // The preconditions: kills really landed inside deletes, and the user really edited files a crashed commit had written.
  checks.record('kills landed in a delete whose file was already gone (precondition)', stats.deleteGone > 0 ? null : `0 of ${stats.pendingDelete} deletes in flight had removed the file`);
  checks.record('user edits on files an interrupted commit had written, kept by recovery (precondition)', stats.userEditsOnRecovered > 0 ? null : `${stats.userEdits} user edits, none on a file recovery had to decide about`);
  checks.figures.push(
    `${kills} SIGKILLs; ${stats.calls} tool calls completed between them (${[...byTool].map(([t, n]) => `${t} ${n}`).join(', ')}); ${stats.deletesDone} deletes reported done, each checked for a restorable entry.`,
    `In flight at the kill: ${stats.pendingDelete} deletes (file already gone ${stats.deleteGone}, still in place ${stats.deleteInPlace}), ${stats.pendingMove} moves, ${stats.pendingCreate} creates.`,
    `The next opens: ${stats.restored} files put back, ${stats.kept} left as they were (changed since the crash); trash rows adopted ${stats.adopted}, stashes of deletes that never happened dropped ${stats.dropped}.`,
    `${stats.userEdits} user edits after a kill, ${stats.userEditsOnRecovered} of them on a file the interrupted commit had written and recovery would otherwise have reverted.`,
  );
  return checks.report('kills', 'SIGKILL during delete, move, create, write and patch', started);
}

mainIfDirect(module, run);
