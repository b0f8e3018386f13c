/** Regression found by stress/processes.ts: quitting Neovim while a command ran left its processes behind. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { processAlive as alive } from '../support/processes';
import { useE2E } from '../support/e2e';

const pidsIn = (file: string): number[] =>
  fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number) : [];

forEachNvim((bin) => {
  describe(`processes of bash commands (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('quitting Neovim while a command runs leaves none of its processes (SIGTERM ignored, own session)', async () => {
      // Unsandboxed (the process sweep is what is tested; in the sandbox, $$ and $! are pids of its own
      // namespace, and test/unit/sandbox.test.ts checks that everything dies with the host).
      const t = await e.start({ initLua: "require('caboose').setup({ mode = 'chug', sandbox = { mode = 'off' } })" });
      const pidFile = path.join(t.cwd, 'pids.txt');
      const command =
        `trap '' TERM; echo $$ >> ${pidFile}; sleep 300 & echo $! >> ${pidFile}; ` +
        `setsid sh -c 'trap "" TERM; sleep 300' >/dev/null 2>&1 </dev/null & echo $! >> ${pidFile}; wait`;
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command, timeoutMs: 600_000 } }] });
      await t.cmd('Caboose run it');
      await t.waitFor(async () => pidsIn(pidFile).length === 3, 'the command started');
      const pids = pidsIn(pidFile);
      await t.close();
      const deadline = Date.now() + 5000;
      while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const left = pids.filter(alive);
      for (const p of left) process.kill(p, 'SIGKILL');
      assert.deepEqual(left, [], 'processes left behind');
    });
  });
});
