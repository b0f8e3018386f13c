/**
 * Large files through the trash (issue 18 item 5): a 600 MB text file (STRESS_SCALE scales it) is
 * deleted and restored through the tools while the host's memory and event loop are watched. It must
 * come back byte for byte, the host's RSS must stay far below the file's size (streamed, never held
 * whole), and the event loop must keep turning (the host stays responsive: no long stall).
 * Run after `npm run build`: `node --import tsx stress/trash-large.ts`.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Checks, mainIfDirect, scale, tempDir, type SuiteReport } from './lib';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { openWorkspace } = require('../dist/index') as typeof import('../src/index');

/** RSS growth allowed while a file of any size goes to the trash and back. */
const MAX_RSS_GROWTH = 256 * 1024 * 1024;
/** Longest event-loop stall allowed (the host answers Neovim between chunks). */
const MAX_STALL_MS = 1000;

function shaFile(p: string): string {
  const h = createHash('sha256');
  const fd = fs.openSync(p, 'r');
  const buf = Buffer.allocUnsafe(1 << 22);
  try {
    for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) h.update(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return h.digest('hex');
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks();
  const mb = Math.max(20, Math.round(600 * scale()));
  const tmp = tempDir('trash-large');
  try {
    const root = path.join(tmp.dir, 'ws');
    fs.mkdirSync(root);
    const file = path.join(root, 'big.log');
    const line = Buffer.from('2026-11-25T10:00:00Z INFO a line of a large log file, the kind that ends up deleted by mistake\n');
    const chunk = Buffer.concat(Array.from({ length: Math.ceil((1 << 20) / line.length) }, () => line)).subarray(0, 1 << 20);
    const fd = fs.openSync(file, 'w');
    for (let i = 0; i < mb; i++) fs.writeSync(fd, chunk);
    fs.closeSync(fd);
    const sha = shaFile(file);
    const ws = openWorkspace({ root, dataDir: path.join(tmp.dir, 'data'), sessionId: 'large' });
    try {
      const loop = monitorEventLoopDelay({ resolution: 10 });
      const rss0 = process.memoryUsage().rss;
      let peak = rss0;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      loop.enable();
      const t0 = Date.now();
      const del = await ws.call('delete_file', { path: 'big.log', expectedSha256: sha });
      const tDel = Date.now() - t0;
      checks.record('the large file is deleted', del.ok ? null : JSON.stringify(del));
      checks.record('precondition: the file really left the workspace and is in the trash', !fs.existsSync(file) && ws.listTrash().some((e) => e.sha256 === sha) ? null : 'not in the trash');
      const entry = ws.listTrash().find((e) => e.sha256 === sha);
      const t1 = Date.now();
      const res = entry ? await ws.call('restore_file', { trashId: entry.id }) : null;
      const tRes = Date.now() - t1;
      loop.disable();
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      checks.record('it is restored', res?.ok ? null : JSON.stringify(res));
      checks.record('byte for byte', fs.existsSync(file) && shaFile(file) === sha ? null : 'the restored file differs');
      const growth = peak - rss0;
      checks.record(`the host's memory stays bounded (RSS growth < ${MAX_RSS_GROWTH / 2 ** 20} MB)`, growth < MAX_RSS_GROWTH ? null : `RSS grew ${(growth / 2 ** 20).toFixed(0)} MB`);
      const stall = loop.max / 1e6;
      checks.record(`the host stays responsive (event loop never stalls ${MAX_STALL_MS} ms)`, stall < MAX_STALL_MS ? null : `longest stall ${stall.toFixed(0)} ms`);
      checks.figures.push(
        `${mb} MB file: delete ${(tDel / 1000).toFixed(1)} s, restore ${(tRes / 1000).toFixed(1)} s; host RSS +${(growth / 2 ** 20).toFixed(0)} MB at peak; ` +
          `longest event-loop stall ${stall.toFixed(0)} ms (mean delay ${(loop.mean / 1e6).toFixed(1)} ms).`,
      );
    } finally {
      ws.close();
    }
  } finally {
    tmp.remove();
  }
  return checks.report('trash-large', 'Large files through the trash', started);
}

mainIfDirect(module, run);
