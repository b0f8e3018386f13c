import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Runs htmlToMarkdown in a worker thread. Converting a large page takes seconds and a pathologically nested
 * one much longer (the HTML parser's work grows with the square of the depth, and deep recursion can exhaust the
 * stack): in the worker it neither stalls the
 * host's RPC loop nor outlives its time limit, and a cancelled tool call stops it.
 */

export type ConversionResult =
  | { ok: true; markdown: string }
  | { ok: false; reason: 'timeout' | 'failed'; message: string };

interface WorkerInput {
  module: string;
  html: string;
  baseUrl: string;
}

type WorkerOutput = { markdown: string } | { error: string };

// The worker requires the converter module beside this one: dist/…/html-to-markdown.js in the plugin, the .ts
// source under the test runner, where tsx's require hook has to be registered in the thread first.
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
if (workerData.module.endsWith('.ts')) require(require.resolve('tsx/cjs', { paths: [workerData.module] }));
try {
  const { htmlToMarkdown } = require(workerData.module);
  parentPort.postMessage({ markdown: htmlToMarkdown(workerData.html, workerData.baseUrl) });
} catch (err) {
  parentPort.postMessage({ error: String(err && err.message) });
}
`;

/** True in the one-file host that scripts/bundle-host.mjs builds (it defines this constant). */
declare const __CABOOSE_BUNDLED__: boolean | undefined;

/** The converter module's file: beside this one, or (in the bundled host, dist/host.bundle.js) in dist/tools. */
function converterModule(): string {
  if (typeof __CABOOSE_BUNDLED__ !== 'undefined' && __CABOOSE_BUNDLED__) return path.join(__dirname, 'tools', 'html-to-markdown.js');
  return path.join(__dirname, `html-to-markdown${path.extname(__filename)}`);
}

export function convertHtmlInWorker(html: string, baseUrl: string, opts: { timeoutMs: number; signal: AbortSignal }): Promise<ConversionResult> {
  const workerData: WorkerInput = { module: converterModule(), html, baseUrl };
  return new Promise((resolve, reject) => {
    // A heap of its own, bounded: a huge page's DOM runs the worker out of memory, not the host.
    const worker = new Worker(BOOTSTRAP, { eval: true, workerData, resourceLimits: { maxOldGenerationSizeMb: 1024 } });
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const onAbort = (): void => finish(() => reject(opts.signal.reason));
    const timer = setTimeout(
      () => finish(() => resolve({ ok: false, reason: 'timeout', message: `no result within ${opts.timeoutMs} ms` })),
      opts.timeoutMs,
    );
    opts.signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (out: WorkerOutput) =>
      finish(() =>
        resolve('markdown' in out ? { ok: true, markdown: out.markdown } : { ok: false, reason: 'failed', message: out.error }),
      ),
    );
    worker.on('error', (err) => finish(() => resolve({ ok: false, reason: 'failed', message: err.message })));
    worker.on('exit', (code) => finish(() => resolve({ ok: false, reason: 'failed', message: `the worker exited (${code})` })));
    if (opts.signal.aborted) onAbort();
  });
}
