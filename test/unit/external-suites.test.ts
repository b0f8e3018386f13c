import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, codexConformanceSuite } from '../support/external';

// The two test files that read the Codex suite kept beside the checkout (../shared in CI).
const READERS = ['test/unit/patch-conformance.test.ts', 'test/unit/conformance-apply-patch.test.ts'];

function runTests(env: NodeJS.ProcessEnv): { status: number | null; out: string } {
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', ...READERS], {
    cwd: REPO_ROOT,
    // NODE_TEST_CONTEXT would make the child think it is a subtest runner and skip its files.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')), ...env },
    encoding: 'utf8',
    timeout: 180_000,
  });
  return { status: res.status, out: `${res.stdout}\n${res.stderr}` };
}

test('a fresh clone (nothing beside it): the conformance tests skip with "skipped: <what> not found at <where>" and pass', () => {
  const missing = path.join(os.tmpdir(), `caboose-no-shared-${process.pid}`, 'conformance', 'codex-apply-patch');
  const { status, out } = runTests({ CABOOSE_CONFORMANCE_DIR: missing, CABOOSE_REQUIRE_EXTERNAL: '' });
  assert.equal(status, 0, out);
  const skips = out.split('\n').filter((l) => l.includes(`# SKIP skipped: the Codex apply-patch conformance suite not found at ${missing}`));
  assert.equal(skips.length, 2, `one skip per file:\n${out}`);
  assert.match(out, /# fail 0/);
});

test('CABOOSE_REQUIRE_EXTERNAL=1 (CI) makes a missing suite a failure, not a skip', () => {
  const missing = path.join(os.tmpdir(), `caboose-no-shared-${process.pid}`, 'x');
  assert.throws(() => codexConformanceSuite({ CABOOSE_CONFORMANCE_DIR: missing, CABOOSE_REQUIRE_EXTERNAL: '1' }), /not found at/);
});

test('present: the suite runs (every scenario folder becomes a test)', (t) => {
  const suite = codexConformanceSuite({});
  if (!suite.present) {
    t.skip(`skipped: the Codex apply-patch conformance suite not found at ${suite.dir}`);
    return;
  }
  const scenarios = fs.readdirSync(suite.dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  const { status, out } = runTests({ CABOOSE_CONFORMANCE_DIR: suite.dir });
  assert.equal(status, 0, out);
  assert.doesNotMatch(out, /# SKIP/);
  for (const name of scenarios) assert.ok(out.includes(`conformance: ${name}`), `${name} ran`);
});

test('no other test, stress suite or bench reads ../shared behind the helper\'s back', () => {
  const offenders: string[] = [];
  for (const top of ['test', 'stress', 'bench']) {
    const walk = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.(ts|mjs|js)$/.test(e.name) && p !== path.join(REPO_ROOT, 'test/support/external.ts') && p !== __filename) {
          const text = fs.readFileSync(p, 'utf8');
          if (/\.\.\/shared|'shared',\s*'conformance'|\/work\/shared/.test(text.replace(/^\s*(\/\/|\*).*$/gm, ''))) offenders.push(path.relative(REPO_ROOT, p));
        }
      }
    };
    if (fs.existsSync(path.join(REPO_ROOT, top))) walk(path.join(REPO_ROOT, top));
  }
  assert.deepEqual(offenders, []);
});
