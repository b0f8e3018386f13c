import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace } from '../../src/index';
import { byteTree } from '../support/files';
import { codexConformanceSuite } from '../support/external';

/**
 * The Codex apply-patch scenarios in ../shared/conformance/codex-apply-patch, run unchanged with the rules
 * of its README (atomic, never overwrite). The suite is read in place, never copied into the project.
 */
const suite = codexConformanceSuite();
const SUITE = suite.dir;

/** Scenarios where our atomic, no-overwrite rules expect the unchanged input and this error kind. */
const OURS: Record<string, string> = {
  '010_move_overwrites_existing_destination': 'already_exists',
  '011_add_overwrites_existing_file': 'already_exists',
  '015_failure_after_partial_success_leaves_changes': 'not_found',
};


function makeWritable(dir: string): void {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    fs.chmodSync(p, fs.statSync(p).mode | 0o200);
    if (e.isDirectory()) makeWritable(p);
  }
}

function assertSameTree(actual: Map<string, Buffer>, expected: Map<string, Buffer>, name: string): void {
  assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort(), `${name}: file list`);
  for (const [k, v] of expected) assert.equal(actual.get(k)!.toString('utf8'), v.toString('utf8'), `${name}: ${k}`);
  for (const [k, v] of expected) assert.ok(actual.get(k)!.equals(v), `${name}: ${k} bytes`);
}

const present = suite.present;

// Absent in a user's clone (CI keeps ../shared beside the checkout): skipped, and said so.
test('the Codex apply-patch conformance suite is present', { skip: suite.skip }, () => {
  assert.ok(present);
});

const scenarios = present
  ? fs
      .readdirSync(SUITE, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort()
  : [];

for (const name of scenarios) {
  test(`conformance: ${name}`, async () => {
    const dir = path.join(SUITE, name);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-conf-'));
    const root = path.join(tmp, 'ws');
    const dataDir = path.join(tmp, 'data');
    fs.mkdirSync(root);
    if (fs.existsSync(path.join(dir, 'input'))) fs.cpSync(path.join(dir, 'input'), root, { recursive: true });
    // The shared suite is kept read-only on disk; its inputs are ordinary files (read-only ones are refused).
    makeWritable(root);
    const input = byteTree(root);
    const ws = openWorkspace({ root, dataDir, sessionId: 'conformance' });
    try {
      const patch = fs.readFileSync(path.join(dir, 'patch.txt'), 'utf8');
      const res = await ws.call('apply_patch', { patch });
      const after = byteTree(root);
      if (name in OURS) {
        assert.equal(res.ok, false, `${name} must fail`);
        if (!res.ok) assert.equal(res.error.kind, OURS[name]);
        assertSameTree(after, input, name);
        return;
      }
      const expected = byteTree(path.join(dir, 'expected'));
      if (/rejects_|_fails|requires_/.test(name)) {
        assert.equal(res.ok, false, `${name} must fail: ${JSON.stringify(res)}`);
        assertSameTree(after, input, name);
      } else {
        assert.equal(res.ok, true, `${name}: ${JSON.stringify(res)}`);
      }
      assertSameTree(after, expected, name);
    } finally {
      ws.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
}
