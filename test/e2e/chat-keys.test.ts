/** Issue 17, defect 9: `?` in the chat is Neovim's backward search; `g?` lists the chat's keys. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

forEachNvim((bin) => {
  describe(`chat keys (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const cmdType = () => e.t.lua<string>('return vim.fn.getcmdtype()');
    const keysFloat = () => e.t.lua<boolean>("return vim.bo.filetype == 'caboose_keys'");

    for (const where of ['transcript', 'input'] as const) {
      it(`? in the ${where} starts a backward search; g? lists the keys`, async () => {
        e.fake.script({ text: 'alpha\nbeta\ngamma' });
        await e.start({ initLua: SETUP });
        await e.t.cmd('Caboose hello');
        await e.t.waitFor(async () => (await e.t.chatLines()).includes('gamma'), 'the reply');
        const buf = where === 'transcript' ? "require('caboose.chat').buf()" : "require('caboose.chat').input_buf()";
        await e.t.lua(`vim.api.nvim_set_current_win(vim.fn.win_findbuf(${buf})[1])`);
        await e.t.nvim.input('?');
        await e.t.waitFor(async () => (await cmdType()) === '?', 'the backward-search command line');
        assert.equal(await keysFloat(), false, 'no keys float');
        await e.t.nvim.input('<Esc>');
        await e.t.waitFor(async () => (await cmdType()) === '', 'the command line closed');
        await e.t.nvim.input('g?');
        await e.t.waitFor(keysFloat, 'the keys float');
        const text = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
        assert.match(text, /^ g\? /m, 'the list names g?');
        assert.doesNotMatch(text, /^ \? /m);
        await e.t.nvim.input('q');
        await e.t.waitFor(async () => !(await keysFloat()), 'the float closed');
      });
    }

    // UI pass: the float was 60 columns wide and as high as its line count, so the long entries wrapped
    // and pushed the last ones (#buffer, / #) out of it, at 160 columns as at 80.
    for (const [columns, lines] of [[160, 45], [80, 24]] as const) {
      it(`g? shows every key whole at ${columns}x${lines}`, async () => {
        await e.start({ initLua: SETUP });
        await e.t.lua(`vim.o.columns = ${columns}; vim.o.lines = ${lines}`);
        await e.t.cmd('CabooseChat');
        await e.t.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(require('caboose.chat').buf())[1])");
        await e.t.nvim.input('g?');
        await e.t.waitFor(keysFloat, 'the keys float');
        const shown = await e.t.lua<{ last: number; bottom: number; rows: number; height: number; text: string }>(`
          local win = vim.api.nvim_get_current_win()
          local rows = 0
          for _, l in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
            rows = rows + math.max(1, math.ceil(vim.fn.strdisplaywidth(l) / vim.api.nvim_win_get_width(win)))
          end
          return { last = vim.fn.line('$'), bottom = vim.fn.line('w$'), rows = rows, height = vim.api.nvim_win_get_height(win),
            text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n') }`);
        assert.match(shown.text, /#buffer/, 'the list has the message-area entries');
        assert.equal(shown.bottom, shown.last, `every line is in the float: ${JSON.stringify(shown)}`);
        assert.equal(shown.height, shown.rows, `the float is as high as the wrapped lines, no more: ${JSON.stringify(shown)}`);
        await e.t.nvim.input('q');
      });
    }

    it('the empty-chat hint and the message area name g?', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('CabooseChat');
      const hint = await e.t.waitFor(
        () =>
          e.t.lua<string>(`local buf = require('caboose.chat').buf()
            local marks = vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_get_namespaces().caboose_chat_hint, 0, -1, { details = true })
            return marks[1] and marks[1][4].virt_text[1][1] or ''`),
        'the hint',
      );
      assert.match(hint, /g\? lists the keys/);
      const bar = await e.t.lua<string>("return vim.wo[require('caboose.chat').input_win()].winbar");
      assert.match(bar, /g\? keys/);
      // At 80 columns (a 40-column chat) the bar still starts with its title and names g?.
      await e.t.lua('vim.o.columns = 80');
      const drawn = () =>
        e.t.lua<{ text: string; width: number }>(`local win = require('caboose.chat').input_win()
          local w = vim.api.nvim_win_get_width(win)
          return { text = vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = w }).str, width = w }`);
      const narrow = await e.t.waitFor(async () => {
        const d = await drawn();
        return d.width <= 40 && /^Message .*g\? keys/.test(d.text) ? d : null;
      }, 'the short message-area bar');
      assert.ok(narrow.text.length <= narrow.width, JSON.stringify(narrow));
    });
  });
});
