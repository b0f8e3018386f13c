/**
 * :CabooseExport / the chat's /export write like the plugin's other writes: a relative path stays in the
 * workspace (links of its folders resolved) and out of .git; only a path the user typed as absolute goes
 * elsewhere; the file appears whole (temp file, then a hard link that fails if anything is at the name), so
 * a link put at the name after the check is never written through.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const SETUP = "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })";

forEachNvim((bin) => {
  describe(`export is confined (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const notes = async () => JSON.stringify(await e.t.notifications());
    const waitNote = (re: RegExp, what: string) => e.t.waitFor(async () => re.test(await notes()), what);

    it('refuses ../, a folder linked out of the workspace and .git; an absolute path goes; never through a link placed after the check', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      const away = fs.mkdtempSync(path.join(path.dirname(cwd), `away-${path.basename(cwd)}-`));
      try {
        e.fake.script({ text: 'hello back' });
        await e.t.lua("require('caboose').send('hello')");
        await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('hello back'), 'the reply');
        await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');

        const escaped = `escaped-${path.basename(cwd)}.md`;
        assert.ok(!fs.existsSync(path.join(path.dirname(cwd), escaped)), 'precondition: nothing there yet');
        try {
          await e.t.lua('require("caboose").send(...)', [`/export ../${escaped}`]);
          await waitNote(/escaped-.*\.md is outside the workspace/, 'the ../ refusal');
          assert.ok(!fs.existsSync(path.join(path.dirname(cwd), escaped)), 'nothing written above the workspace');
        } finally {
          fs.rmSync(path.join(path.dirname(cwd), escaped), { force: true });
        }

        fs.symlinkSync(away, path.join(cwd, 'docs'));
        await e.t.cmd('CabooseExport docs/sub/chat.md');
        await waitNote(/docs\/sub\/chat\.md is outside the workspace/, 'the linked-folder refusal');
        assert.deepEqual(fs.readdirSync(away), [], 'no folder nor file made through the link');

        fs.mkdirSync(path.join(cwd, '.git'));
        await e.t.cmd('CabooseExport .git/hooks/chat.md');
        await waitNote(/chat\.md is inside a \.git folder/, 'the .git refusal');
        assert.ok(!fs.existsSync(path.join(cwd, '.git', 'hooks')));

        // Typed as an absolute path, the user's choice: written there, whole, no temp file left.
        const outside = path.join(away, 'chat.md');
        await e.t.cmd(`CabooseExport ${outside}`);
        await e.t.waitFor(async () => fs.existsSync(outside), 'the absolute export');
        assert.match(fs.readFileSync(outside, 'utf8'), /## You\n\nhello\n/);
        assert.deepEqual(fs.readdirSync(away), ['chat.md'], 'no temp file left');

        // A link appears at the name after the check (the check is made to miss it): not written through.
        const victim = path.join(away, 'victim.md');
        fs.writeFileSync(victim, 'keep me\n');
        await e.t.lua(`local lstat = vim.uv.fs_lstat
          vim.uv.fs_lstat = function(p, ...) if p:match('raced%.md$') then return nil end return lstat(p, ...) end`);
        fs.symlinkSync(victim, path.join(cwd, 'raced.md'));
        await e.t.cmd('CabooseExport raced.md');
        await waitNote(/raced\.md exists: not overwritten/, 'the refusal at the link');
        assert.equal(fs.readFileSync(victim, 'utf8'), 'keep me\n', 'the file behind the link is untouched');
        assert.deepEqual(fs.readdirSync(cwd).filter((n) => n.includes('caboose-tmp')), [], 'no temp file left');
      } finally {
        fs.rmSync(away, { recursive: true, force: true });
      }
    });
  });
});
