// Libraries the first request does not use stay unloaded until first used (issue 24: each costs start-up
// CPU before a cold `send` reaches the model). Checked in a fresh process's module cache after loading the
// host's session runtime (what a cold start loads before the request).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const SRC = path.resolve(__dirname, '..', '..', 'src');

function loadedAfter(modules: string[], probe: string[]): Record<string, boolean> {
  const script = `
    for (const m of ${JSON.stringify(modules)}) require(m);
    const keys = Object.keys(require.cache);
    const out = {};
    for (const p of ${JSON.stringify(probe)}) out[p] = keys.some((k) => k.includes('/node_modules/' + p + '/'));
    process.stdout.write(JSON.stringify(out));`;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' })) as Record<string, boolean>;
}

test('the session runtime and the workspace load without jsdiff (loaded at the first diff)', () => {
  const loaded = loadedAfter([path.join(SRC, 'host', 'runtime.ts'), path.join(SRC, 'workspace', 'review.ts'), path.join(SRC, 'workspace', 'buffer-hunks.ts')], ['diff']);
  assert.deepEqual(loaded, { diff: false });
  const used = JSON.parse(
    execFileSync(process.execPath, ['--import', 'tsx', '-e', `const { unifiedDiff } = require(${JSON.stringify(path.join(SRC, 'workspace', 'patch', 'diff.ts'))}); process.stdout.write(JSON.stringify(unifiedDiff('a.txt', 'a\\n', 'b\\n')));`], { encoding: 'utf8' }),
  ) as string;
  assert.match(used, /^-a$/m);
  assert.match(used, /^\+b$/m);
});

test('the session runtime loads without node:http, node:https, node:tls or node:zlib (the fetch tool loads them at its first fetch)', () => {
  const script = `require(${JSON.stringify(path.join(SRC, 'host', 'runtime.ts'))}); require(${JSON.stringify(path.join(SRC, 'tools', 'fetch.ts'))});
    process.stdout.write(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule (http|https|tls|zlib)$/.test(m))));`;
  assert.deepEqual(JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' })), []);
});
