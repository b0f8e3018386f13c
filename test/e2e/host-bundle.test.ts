/**
 * Issue 24: the host starts from one bundled file (dist/host.bundle.js, built by `npm run build`) and
 * keeps its compiled code between starts (Node 20: a V8 code cache in CABOOSE_CACHE_DIR).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..');
const ENTRY = path.join(REPO, 'rplugin', 'node', 'caboose');
const BUNDLE = path.join(REPO, 'dist', 'host.bundle.js');

/** Loads the entry as the classic remote-plugin host does; prints which of dist's files Node required. */
const PROBE = `
const plugin = require(${JSON.stringify(ENTRY)});
if (typeof plugin !== 'function') throw new Error('the entry exports no plugin function');
const fromDist = Object.keys(require.cache).filter((f) => f.includes(${JSON.stringify(path.join(REPO, 'dist') + path.sep)}));
process.stdout.write(JSON.stringify(fromDist));
`;

function probe(env: Record<string, string>): string[] {
  const out = execFileSync(process.execPath, ['-e', PROBE], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return JSON.parse(out) as string[];
}

test('the host entry loads the bundled host, not the compiled modules', () => {
  assert.ok(fs.existsSync(BUNDLE), `run npm run build first: ${BUNDLE} is missing`);
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-host-cache-'));
  try {
    const loaded = probe({ CABOOSE_CACHE_DIR: cache });
    assert.ok(!loaded.some((f) => f.endsWith(path.join('dist', 'host', 'main.js'))), `compiled modules loaded: ${loaded.join(', ')}`);
    // The escape hatch still loads the compiled modules.
    const unbundled = probe({ CABOOSE_CACHE_DIR: cache, CABOOSE_HOST_UNBUNDLED: '1' });
    assert.ok(unbundled.some((f) => f.endsWith(path.join('dist', 'host', 'main.js'))), 'CABOOSE_HOST_UNBUNDLED=1 loads dist/host/main.js');
  } finally {
    fs.rmSync(cache, { recursive: true, force: true });
  }
});

test('without Node’s own compile cache, the compiled code is cached in CABOOSE_CACHE_DIR and used on the next start', (t) => {
  if (typeof (Module as unknown as { enableCompileCache?: unknown }).enableCompileCache === 'function') {
    t.skip(`skipped: Node ${process.version} caches compiled code itself (module.enableCompileCache)`);
    return;
  }
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-host-cache-'));
  try {
    probe({ CABOOSE_CACHE_DIR: cache });
    const files = fs.readdirSync(cache).filter((f) => f.endsWith('.v8cache'));
    assert.equal(files.length, 1, `one cache file: ${files.join(', ')}`);
    const first = fs.statSync(path.join(cache, files[0]));
    assert.equal(first.mode & 0o077, 0, 'private to the user');
    // The next start reads it (a rejected or missing cache would be written again, with a new time).
    probe({ CABOOSE_CACHE_DIR: cache });
    const again = fs.readdirSync(cache).filter((f) => f.endsWith('.v8cache'));
    assert.deepEqual(again, files);
    assert.equal(fs.statSync(path.join(cache, again[0])).mtimeMs, first.mtimeMs, 'the cache was used, not rewritten');
  } finally {
    fs.rmSync(cache, { recursive: true, force: true });
  }
});
