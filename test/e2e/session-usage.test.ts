/** Issue 17, defect 11: Σ usage is stored with the session and survives reopening it (and a restart). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const INIT = `vim.o.columns = 200
require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })
_G.pick = {}
vim.ui.select = function(items, opts, cb)
  local want = table.remove(_G.pick, 1)
  for i, it in ipairs(items) do
    local s = opts.format_item and opts.format_item(it) or tostring(it)
    if want and s:find(want, 1, true) then return cb(it, i) end
  end
  cb(nil)
end`;

const bar = (t: TestNvim) => t.lua<string>("return require('caboose.chat').status_text() or ''");
const idle = (t: TestNvim) => t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');

forEachNvim((bin) => {
  describe(`session usage (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('a reopened session continues its Σ, in the same Neovim and after a restart', async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-home-'));
      const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-ws-'));
      try {
        const t1 = await startNvim({ nvim: bin, home, cwd, env: { OPENAI_BASE_URL: e.fake.url }, initLua: INIT });
        try {
          e.fake.script({ text: 'about pelicans', usage: { prompt_tokens: 1200, completion_tokens: 300 } });
          await t1.cmd('Caboose tell me about pelicans');
          await t1.waitFor(async () => /Σ1\.5k/.test(await bar(t1)), 'Σ after the first reply');
          await idle(t1);
          await t1.cmd('CabooseNew');
          await t1.waitFor(async () => !/Σ/.test(await bar(t1)), 'a new session starts from nothing');
          await t1.lua("table.insert(_G.pick, '2 messages')");
          await t1.cmd('CabooseSessions');
          await t1.waitFor(async () => (await t1.chatLines()).includes('about pelicans'), 'the reopened transcript');
          await t1.waitFor(async () => /Σ1\.5k/.test(await bar(t1)), 'Σ of the reopened session').catch(async (err) => {
            throw new Error(`${err}: ${await bar(t1)}`);
          });
          e.fake.script({ text: 'more pelicans', usage: { prompt_tokens: 400, completion_tokens: 100 } });
          await t1.cmd('Caboose more');
          await t1.waitFor(async () => /↑400 ↓100 Σ2\.0k/.test(await bar(t1)), 'Σ continues from the stored total');
          await idle(t1);
        } finally {
          await t1.close();
        }
        const t2 = await startNvim({ nvim: bin, home, cwd, env: { OPENAI_BASE_URL: e.fake.url }, initLua: INIT });
        try {
          await t2.lua("table.insert(_G.pick, '4 messages')");
          await t2.cmd('CabooseSessions');
          await t2.waitFor(async () => (await t2.chatLines()).includes('more pelicans'), 'the reopened transcript after a restart');
          await t2.waitFor(async () => /Σ2\.0k/.test(await bar(t2)), 'Σ after a restart').catch(async (err) => {
            throw new Error(`${err}: ${await bar(t2)}`);
          });
          assert.doesNotMatch(await bar(t2), /↑/, 'no last request yet in this sitting');
        } finally {
          await t2.close();
        }
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
        fs.rmSync(cwd, { recursive: true, force: true });
      }
    });
  });
});
