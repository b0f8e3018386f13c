import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, REPO_ROOT } from '../support/nvim';
import { useE2E } from '../support/e2e';

forEachNvim((bin) => {
  describe(`:help caboose (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    it('the help file has unique tags and every section opens', async () => {
      const t = await e.start();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-help-'));
      try {
        fs.mkdirSync(path.join(dir, 'doc'));
        fs.copyFileSync(path.join(REPO_ROOT, 'doc', 'caboose.txt'), path.join(dir, 'doc', 'caboose.txt'));
        await t.cmd(`helptags ${dir}/doc`);
        await t.lua('vim.opt.runtimepath:prepend(...)', [dir]);
        for (const tag of ['caboose', 'caboose-config', 'caboose-commands', ':Caboose', ':CabooseRestore', ':CabooseRevoke', '<Plug>(CabooseApproval)', 'caboose-approval', 'caboose.revoke()', 'caboose.state()', 'caboose-events', 'caboose-highlights', 'caboose-health']) {
          await t.cmd(`help ${tag}`);
          assert.equal(await t.lua('return vim.bo.buftype'), 'help', tag);
          assert.match(await t.lua<string>("return vim.fn.expand('%:t')"), /caboose\.txt/, tag);
          await t.cmd('helpclose');
        }
        const msgs = await t.lua<string>("return vim.fn.execute('messages')");
        assert.doesNotMatch(msgs, /E\d+:/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
