import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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
        for (const tag of ['caboose', 'caboose-config', 'caboose-commands', ':Caboose', ':CabooseRestore', ':CabooseUndo', ':CabooseCheckpoints', 'caboose-checkpoints', 'caboose.undo()', ':CabooseRevoke', ':CabooseAudit', 'caboose.audit()', '<Plug>(CabooseApproval)', 'caboose-approval', 'caboose-review-keys', 'caboose.revoke()', 'caboose.state()', 'caboose-events', 'caboose-highlights', 'caboose-health', 'caboose-rules', 'caboose-diagnostics', 'caboose-safety', ':CabooseMcp', 'caboose-mcp', 'caboose.mcp()', 'caboose.mcp_restart()', 'caboose-sandbox', 'caboose-insertables', 'caboose-slash-commands', 'caboose-variables', 'caboose-completion', 'caboose.compact()', ':CabooseExport', 'caboose.export()', 'caboose-prompts', ':CaboosePrompts', 'caboose-prompts-trust', 'caboose-prompts-placeholders', 'caboose-prompts-builtin', ':CabooseRetry', 'caboose-conversation', ':CabooseDebug', 'caboose-images', 'caboose-progress', 'caboose-lualine']) {
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

/** A copy of the plugin as a user's checkout would have it (no doc/tags yet). */
function checkoutCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-checkout-'));
  for (const sub of ['plugin', 'lua', 'doc', 'scripts']) fs.cpSync(path.join(REPO_ROOT, sub), path.join(dir, sub), { recursive: true });
  fs.rmSync(path.join(dir, 'doc', 'tags'), { force: true });
  return dir;
}

forEachNvim((bin) => {
  describe(`help tags from a checkout (Neovim ${bin.version})`, () => {
    const run = (dir: string, ...cmds: string[]) =>
      execFileSync(bin.path, ['--headless', '-u', path.join(dir, 'scripts', 'minimal_init.lua'), '-i', 'NONE', '-n', ...cmds.map((c) => `+${c}`), '+qa!'], {
        encoding: 'utf8',
        env: { ...process.env, NVIM_APPNAME: 'caboose-help-test', XDG_CONFIG_HOME: dir, XDG_DATA_HOME: dir, XDG_STATE_HOME: dir },
        timeout: 20_000,
      });

    it(':help caboose and :help :CabooseRestore resolve with the README main command (scripts/minimal_init.lua)', () => {
      const dir = checkoutCopy();
      try {
        for (const tag of ['caboose', ':CabooseRestore']) {
          const out = run(dir, `help ${tag}`, "lua io.stdout:write(vim.bo.buftype .. ' ' .. vim.fn.expand('%:t'))");
          assert.match(out, /help caboose\.txt/, tag);
        }
        assert.ok(fs.existsSync(path.join(dir, 'doc', 'tags')), 'doc/tags generated');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('tags a plugin manager generated (lazy.nvim) are left alone while up to date', () => {
      const dir = checkoutCopy();
      try {
        const tags = path.join(dir, 'doc', 'tags');
        fs.writeFileSync(tags, 'caboose\tcaboose.txt\t/*caboose*\n');
        const later = new Date(Date.now() + 60_000);
        fs.utimesSync(tags, later, later);
        const before = fs.statSync(tags).mtimeMs;
        run(dir, 'help caboose');
        assert.equal(fs.statSync(tags).mtimeMs, before);
        assert.equal(fs.readFileSync(tags, 'utf8'), 'caboose\tcaboose.txt\t/*caboose*\n');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('tags older than the help file within the same second are regenerated (a doc edit right after helptags)', () => {
      const dir = checkoutCopy();
      try {
        const tags = path.join(dir, 'doc', 'tags');
        const txt = path.join(dir, 'doc', 'caboose.txt');
        fs.writeFileSync(tags, 'caboose\tcaboose.txt\t/*caboose*\n');
        const sec = Math.floor(Date.now() / 1000);
        fs.utimesSync(tags, sec + 0.1, sec + 0.1);
        fs.utimesSync(txt, sec + 0.9, sec + 0.9);
        assert.ok(fs.statSync(tags).mtimeMs < fs.statSync(txt).mtimeMs, 'the file system keeps sub-second times');
        const out = run(dir, 'help :CabooseRestore', "lua io.stdout:write(vim.bo.buftype .. ' ' .. vim.fn.expand('%:t'))");
        assert.match(out, /help caboose\.txt/);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
