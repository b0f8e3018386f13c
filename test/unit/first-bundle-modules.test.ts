/**
 * What the first-request bundle loads before its request (issue 24): node:crypto (≈ 1.3 ms of a cold start)
 * is not among the modules its evaluation loads; the first request's session id is made once the request
 * is on its way (first-request.ts), the rules are deduplicated by their bytes (workspace/rules.ts), a tool
 * call id of our own loads it when one is needed (agent/stream.ts); node:child_process neither (sandbox.ts,
 * provider-config.ts load it when they start a process). Needs `npm run build`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const bundle = path.join(__dirname, '..', '..', 'dist', 'host-first.bundle.js');

test('evaluating the first-request bundle loads neither node:crypto nor node:child_process', (t) => {
  if (!fs.existsSync(bundle)) return t.skip(`skipped: the first-request bundle not found at ${bundle} (npm run build)`);
  // A script file, as index.js runs (`node -e` loads node:crypto itself); only what the bundle added counts.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-modules-'));
  const probe = path.join(dir, 'probe.js');
  fs.writeFileSync(probe, `const before = new Set(process.moduleLoadList); require(${JSON.stringify(bundle)}); process.stdout.write(JSON.stringify({ before: [...before].filter((m) => /crypto/.test(m)), added: process.moduleLoadList.filter((m) => !before.has(m)) }));`);
  try {
    const out = JSON.parse(execFileSync(process.execPath, [probe], { encoding: 'utf8' })) as { before: string[]; added: string[] };
    assert.deepEqual(out.before, [], 'precondition: node:crypto is not loaded before the bundle');
    assert.ok(out.added.length > 0, 'precondition: the bundle loaded modules');
    assert.deepEqual(out.added.filter((m) => /crypto/.test(m)), [], 'node:crypto was loaded by the bundle');
    // Nor node:child_process (with dgram and its socket list: ≈ 0.4 ms): the sandbox's trial and an
    // api_key_cmd load it when they start a process.
    assert.deepEqual(out.added.filter((m) => /child_process|dgram/.test(m)), [], 'node:child_process was loaded by the bundle');
    // Nor node:fs/promises: the first request reads the rules with synchronous calls (rules.ts syncRulesIo).
    assert.deepEqual(out.added.filter((m) => /fs\/promises/.test(m)), [], 'node:fs/promises was loaded by the bundle');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
