/**
 * Concurrent writers (issue 18 item 1): while the agent runs each write tool on a file, another process
 * appends a numbered line to that file about every millisecond (open, append, close, as `echo >>` does;
 * in bursts, so that some calls find the file quiet and succeed).
 * The agent reads the file, computes its change from what it read (keeping every line it saw), and
 * calls the tool with the sha256 of its read. Afterwards every line the writer wrote must still exist:
 * in the file, in the file it was moved to, or in the trash entry of a deleted version. A lost line is a
 * failure. Run after `npm run build`: `node --import tsx stress/writers.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Checks, mainIfDirect, scaled, sha256, sleep, tempDir, type SuiteReport } from './lib';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { openWorkspace } = require('../dist/index') as typeof import('../src/index');

const CHILD = path.join(__dirname, 'writer-child.js');
const TOOLS = ['edit_file', 'write_file', 'apply_patch', 'delete_file', 'move_file', 'create_file'] as const;
type Tool = (typeof TOOLS)[number];

interface Writer {
  child: ChildProcess;
  stop(): Promise<number>;
}

async function startWriter(file: string, id: string): Promise<Writer> {
  const child = spawn(process.execPath, [CHILD, file, id], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (d: string) => (out += d));
  while (!out.includes('ready\n')) await sleep(5);
  return {
    child,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve(Number(out.split('\n').filter(Boolean).at(-1))));
        child.kill('SIGTERM');
      }),
  };
}

/** The writer's lines `W<id>-<n>` present in `text`. */
function writerLines(text: string, id: string): Set<number> {
  const out = new Set<number>();
  const re = new RegExp(`^W${id}-(\\d+)$`, 'gm');
  for (const m of text.matchAll(re)) out.add(Number(m[1]));
  return out;
}

async function runTool(tool: Tool, calls: number, checks: Checks, figures: string[]): Promise<void> {
  const tmp = tempDir(`writers-${tool}`);
  const root = path.join(tmp.dir, 'ws');
  fs.mkdirSync(root);
  const rel = 'target.txt';
  const abs = path.join(root, rel);
  const base = Array.from({ length: 2000 }, (_, i) => `base line ${i} ${'x'.repeat(40)}`).join('\n') + '\n';
  fs.writeFileSync(abs, base);
  const ws = openWorkspace({ root, dataDir: path.join(tmp.dir, 'data'), sessionId: `writers-${tool}` });
  const id = tool.replace(/_/g, '');
  const writer = await startWriter(abs, id);
  const outcomes = new Map<string, number>();
  let concurrent = 0;
  let calls0 = 0;
  try {
    for (let k = 0; k < calls; k++) {
      // After a delete or a move the writer re-creates the file with its next line: wait for it.
      for (let w = 0; w < 200 && !fs.existsSync(abs) && tool !== 'create_file'; w++) await sleep(2);
      calls0++;
      // Read (as the agent does), then change what was read; the writer goes on meanwhile.
      const read = (await ws.call('read_file', { path: rel })) as { ok: boolean; data?: { sha256: string } };
      let bytes: Buffer;
      let seenSha: string;
      try {
        bytes = fs.readFileSync(abs);
        seenSha = sha256(bytes);
      } catch {
        continue;
      }
      if (!read.ok) continue;
      const text = bytes.toString('utf8');
      let args: Record<string, unknown>;
      const marker = `agent ${k}`;
      switch (tool) {
        case 'edit_file':
          args = { path: rel, expectedSha256: seenSha, edits: [{ oldText: `base line ${k % 2000} `, newText: `base line ${k % 2000} ${marker} ` }] };
          break;
        case 'write_file':
          args = { path: rel, expectedSha256: seenSha, content: text + `${marker}\n` };
          break;
        case 'apply_patch':
          args = { patch: `*** Begin Patch\n*** Update File: ${rel}\n@@\n-base line ${k % 2000} ${'x'.repeat(40)}\n+base line ${k % 2000} ${'x'.repeat(40)} ${marker}\n*** End Patch\n`, expectedSha256ByPath: { [rel]: seenSha } };
          if (!text.includes(`base line ${k % 2000} ${'x'.repeat(40)}\n`)) args = { patch: `*** Begin Patch\n*** Update File: ${rel}\n@@\n+${marker}\n*** End Patch\n`, expectedSha256ByPath: { [rel]: seenSha } };
          break;
        case 'delete_file':
          args = { path: rel, expectedSha256: seenSha };
          break;
        case 'move_file':
          args = { from: rel, to: `moved-${k}.txt`, expectedSha256: seenSha };
          break;
        case 'create_file':
          // The file is moved aside (its lines are counted there); create races the writer re-creating it.
          try {
            fs.renameSync(abs, path.join(root, `aside-${k}.txt`));
          } catch {
            // the writer has not re-created it yet
          }
          args = { path: rel, content: `created ${k}\n` };
          break;
      }
      const r = await ws.call(tool, args);
      const kind = r.ok ? 'ok' : r.error.kind;
      outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
      if (!r.ok && (r.error.details as { concurrentWrite?: boolean } | undefined)?.concurrentWrite) concurrent++;
      checks.record(`${tool}: a full result or stale_file (or the file was gone: not_found / already_exists)`, r.ok || ['stale_file', 'not_found', 'already_exists', 'old_text_not_found', 'patch_apply_error'].includes(kind) ? null : `call ${k}: ${JSON.stringify(r)}`);
    }
  } finally {
    const written = await writer.stop();
    // Every line the writer wrote: in the file, a moved copy, or a trash entry of a deleted version.
    const found = writerLines(fs.existsSync(abs) ? fs.readFileSync(abs, 'utf8') : '', id);
    for (const f of fs.readdirSync(root)) if (f.startsWith('moved-') || f.startsWith('aside-')) for (const n of writerLines(fs.readFileSync(path.join(root, f), 'utf8'), id)) found.add(n);
    for (const e of ws.listTrash()) {
      const b = await ws.workspace.trash.read(e);
      if (b) for (const n of writerLines(b.toString('utf8'), id)) found.add(n);
    }
    let lost = 0;
    const lostExamples: number[] = [];
    for (let n = 0; n < written; n++) {
      if (!found.has(n)) {
        lost++;
        if (lostExamples.length < 5) lostExamples.push(n);
      }
    }
    checks.record(`${tool}: no line of the other writer lost`, lost ? `${lost} of ${written} lines lost (e.g. ${lostExamples.join(', ')})` : null);
    // The precondition: the writer really wrote throughout (hundreds of lines per second of the run).
    checks.record(`${tool}: the other writer really wrote during the calls (precondition)`, written >= calls0 ? null : `only ${written} lines for ${calls0} calls`);
    if (tool !== 'create_file') {
      checks.record(`${tool}: the other writer hit the commit itself at least once (precondition)`, concurrent > 0 ? null : 'no call was refused for a write during its commit: the race was not exercised');
    }
    const leftovers = fs.readdirSync(root).filter((f) => /\.caboose-[0-9a-f]{12}\.(tmp|bak)$/.test(f));
    checks.record(`${tool}: no temp or backup file left`, leftovers.length ? leftovers.join(', ') : null);
    checks.record(`${tool}: the audit chain verifies`, ws.verifyAuditLog().ok ? null : JSON.stringify(ws.verifyAuditLog()));
    figures.push(
      `${tool}: ${calls0} calls while the writer appended ${written} lines, ${lost} lost; outcomes ${[...outcomes].map(([k, v]) => `${k} ${v}`).join(', ')}; ` +
        `${concurrent} refused because the other program wrote during the commit itself (their version kept).`,
    );
    ws.close();
    tmp.remove();
  }
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks();
  const calls = scaled(150, 10);
  for (const tool of TOOLS) await runTool(tool, calls, checks, checks.figures);
  checks.figures.unshift(`${calls} calls per tool, each against a writer process appending a line about every millisecond (open, append, close).`);
  return checks.report('writers', 'Concurrent writers during every write tool', started);
}

mainIfDirect(module, run);
