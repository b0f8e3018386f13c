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
import { startFakeOpenAI } from '../support/fake-openai';
import { defaultNvim, startNvim } from '../support/nvim';

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

test('the bundle is ASCII: V8 keeps it as a one-byte string (half the memory, faster to read and hash at every start)', () => {
  assert.ok(fs.existsSync(BUNDLE), `run npm run build first: ${BUNDLE} is missing`);
  const text = fs.readFileSync(BUNDLE, 'utf8');
  const at = text.search(/[^\x00-\x7f]/);
  assert.equal(at, -1, `non-ASCII at ${at}: ${text.slice(Math.max(0, at - 40), at + 10)}`);
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

test('a cold chat from the bundled host: the first requests go out without loading Node’s fetch (undici)', async () => {
  assert.ok(fs.existsSync(BUNDLE), `run npm run build first: ${BUNDLE} is missing`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-undici-'));
  const out = path.join(work, 'probe.json');
  const node = path.join(work, 'node.sh');
  fs.writeFileSync(node, `#!/bin/sh\nUNDICI_PROBE_OUT=${JSON.stringify(out)} exec ${JSON.stringify(process.execPath)} -r ${JSON.stringify(path.join(REPO, 'test', 'support', 'undici-probe.cjs'))} "$@"\n`, { mode: 0o755 });
  const fake = await startFakeOpenAI();
  const t = await startNvim({
    nvim: defaultNvim(),
    env: { OPENAI_BASE_URL: fake.url, CABOOSE_MODEL: 'fake-model' },
    initLua: `require('caboose').setup({ host = { node = ${JSON.stringify(node)} } })`,
  });
  try {
    fake.script({ text: 'Cold reply from the bundle.' });
    await t.cmd('Caboose hi');
    await t.waitFor(async () => (await t.chatLines()).join('\n').includes('Cold reply from the bundle.'), 'the reply', 30_000);
    const hostPid = await t.lua<number>("return require('caboose.rpc').host_pid()");
    // The probe writes every 50 ms: wait for a write after the reply.
    const after = Date.now();
    const seen = await t.waitFor(async (): Promise<{ pid: number; undici: boolean } | null> => {
      try {
        const st = fs.statSync(out);
        if (st.mtimeMs <= after) return null;
        return JSON.parse(fs.readFileSync(out, 'utf8')) as { pid: number; undici: boolean };
      } catch {
        return null;
      }
    }, 'the probe', 10_000);
    assert.equal(seen.pid, hostPid, 'precondition: the probe ran in the host');
    assert.ok(fake.chatRequests.length >= 1, 'precondition: the request reached the server');
    assert.equal(seen.undici, false, 'undici was loaded by the cold path');
  } finally {
    await t.close();
    await fake.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
