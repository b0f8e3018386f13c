/** Issue 17, defect 8: ask_user never takes keys meant for another buffer. It opens where the user
 * chooses to answer: in the chat (when it is focused), with `gA` there (chat.keys.approval), or :CabooseApproval. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { firstToolResult } from '../support/chat-requests';

const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })
_G.ui_calls = {}
vim.ui.input = function(opts, cb) table.insert(_G.ui_calls, { kind = 'input', prompt = opts.prompt }) cb('blue') end`;

forEachNvim((bin) => {
  describe(`ask_user and the keys (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const calls = () => e.t.lua<unknown[]>('return _G.ui_calls');
    const asked = async () => {
      await e.t.waitFor(async () => (await e.t.chatLines()).some((l) => l.startsWith('◌ ask_user')), 'the question in the chat');
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => n.msg.includes('the agent asks: Favour')), 'told');
    };

    it('Normal-mode keys typed in the user\'s buffer (Go…) stay there; the chat takes the question when focused', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('edit notes.txt');
      e.fake.script({ toolCalls: [{ name: 'ask_user', arguments: { question: 'Favourite colour?' } }] }, { text: 'thanks' });
      const n = e.fake.chatRequests.length;
      await e.t.lua("require('caboose').send('ask me')");
      await asked();
      await e.t.nvim.input('Gonew line<Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'n', 'normal mode');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(await calls(), [], 'not asked in the user\'s buffer');
      assert.deepEqual(await e.t.lua('return vim.api.nvim_buf_get_lines(0, 0, -1, false)'), ['', 'new line'], 'the keys went to the buffer');
      // Going to the chat opens it.
      await e.t.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(require('caboose.chat').buf())[1])");
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('thanks'), 'answered in the chat');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[n + 1]).data, { answer: 'blue' });
      assert.equal((await calls()).length, 1);
    });

    it('<Plug>(CabooseApproval) opens the waiting question; the cursor stays in the user\'s buffer', async () => {
      await e.start({ initLua: `${SETUP}\nvim.keymap.set('n', '<F5>', '<Plug>(CabooseApproval)')` });
      await e.t.cmd('edit notes.txt');
      e.fake.script({ toolCalls: [{ name: 'ask_user', arguments: { question: 'Favourite colour?' } }] }, { text: 'first done' });
      await e.t.lua("require('caboose').send('ask me')");
      await asked();
      await e.t.nvim.input('<F5>');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('first done'), 'answered with the key');
      assert.equal(await e.t.lua('return vim.api.nvim_buf_get_name(0):match("notes.txt$") ~= nil'), true, 'the cursor stayed in the user\'s buffer');
    });

    it('a question asked while the user is in the chat opens at once', async () => {
      await e.start({ initLua: SETUP });
      e.fake.script({ toolCalls: [{ name: 'ask_user', arguments: { question: 'Favourite colour?' } }] }, { text: 'right away' });
      await e.t.cmd('CabooseChat');
      await e.t.lua("require('caboose').send('ask me')");
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('right away'), 'answered');
      assert.equal((await calls()).length, 1);
    });
  });
});
