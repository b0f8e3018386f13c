/**
 * The first request reads the project rules with synchronous file calls (workspace/rules.ts `syncRulesIo`,
 * issue 24); the session reads them with node:fs/promises. Both must find and read exactly the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_RULES_FILES, loadRules, syncRulesIo, type RulesOptions } from '../../src/workspace/rules';

test('the synchronous reading gives the same snapshot as node:fs/promises (found, read, cut, skipped)', async () => {
  const top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-rules-io-')));
  try {
    const repo = path.join(top, 'repo');
    const cwd = path.join(repo, 'pkg', 'sub');
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    fs.mkdirSync(path.join(cwd, '.cursor', 'rules'), { recursive: true });
    fs.mkdirSync(path.join(repo, '.github'), { recursive: true });
    fs.writeFileSync(path.join(cwd, 'AGENTS.md'), '# Near\nAnswer briefly.\n');
    fs.writeFileSync(path.join(cwd, 'CLAUDE.md'), '# Near\nAnswer briefly.\n'); // same text: skipped
    fs.writeFileSync(path.join(cwd, '.cursor', 'rules', 'b.mdc'), '---\ndescription: b\n---\nRule b.\n');
    fs.writeFileSync(path.join(cwd, '.cursor', 'rules', 'a.mdc'), 'Rule a.\n');
    fs.writeFileSync(path.join(repo, 'pkg', 'AGENTS.md'), Buffer.from([0x61, 0x00, 0x62])); // binary
    fs.writeFileSync(path.join(repo, 'AGENTS.md'), `${'long line of rules\n'.repeat(3000)}`); // cut
    fs.writeFileSync(path.join(repo, 'CLAUDE.md'), Buffer.from([0xff, 0xfe, 0x41])); // not UTF-8
    fs.writeFileSync(path.join(repo, '.github', 'copilot-instructions.md'), '');
    fs.symlinkSync(path.join(cwd, 'AGENTS.md'), path.join(repo, 'pkg', 'CLAUDE.md')); // same file
    const opts: RulesOptions = { files: DEFAULT_RULES_FILES, maxBytesPerFile: 16 * 1024, maxTotalBytes: 40 * 1024 };
    const viaPromises = await loadRules(cwd, opts);
    const viaSync = await loadRules(cwd, opts, syncRulesIo);
    assert.equal(viaPromises.root, repo, 'precondition: the repository was found');
    assert.ok(viaPromises.files.length >= 3 && viaPromises.skipped.length >= 4, 'precondition: files read and skipped');
    assert.deepEqual(viaSync, viaPromises);
    // A folder that does not exist, and one without rules.
    assert.deepEqual(await loadRules(path.join(top, 'gone'), opts, syncRulesIo), await loadRules(path.join(top, 'gone'), opts));
    assert.deepEqual(await loadRules(top, opts, syncRulesIo), await loadRules(top, opts));
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});
