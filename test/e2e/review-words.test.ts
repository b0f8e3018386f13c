/** Issue 17, defect 5: the changed words of an added line are drawn in another highlight than the rest of
 * the line, on the screen (a UI attached), in the inline review and in the approval float. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { waitApprovalFloat } from '../support/approval';

const sha = (b: string) => createHash('sha256').update(b).digest('hex');
const ORIG = 'alpha line\nthe quick brown fox jumps\nomega line\n';
const EDIT = { oldText: 'the quick brown fox jumps', newText: 'the quick red fox jumps' };
const SETUP = (style: string) => `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = '${style}' } })`;

/** Screen attributes of the cells of `text` and of the rest of its line, as drawn in window `win`. */
const CELLS = `
  local win, text, word = ...
  vim.cmd('redraw')
  local buf = vim.api.nvim_win_get_buf(win)
  for lnum, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local s = l:find(word, 1, true)
    if l:find(text, 1, true) and s then
      local function attr(col)
        local p = vim.fn.screenpos(win, lnum, col)
        return p.row > 0 and vim.fn.screenattr(p.row, p.col) or -1
      end
      local word_attrs, rest = {}, {}
      for c = 1, #l do
        if c >= s and c < s + #word then table.insert(word_attrs, attr(c)) elseif l:sub(c, c) ~= ' ' then table.insert(rest, attr(c)) end
      end
      return { word = word_attrs, rest = rest }
    end
  end
  return vim.NIL`;

forEachNvim((bin) => {
  describe(`changed words in the review (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const check = (cells: { word: number[]; rest: number[] }) => {
      assert.ok(cells.word.length === 3 && cells.rest.length > 0, JSON.stringify(cells));
      assert.ok(cells.word.every((a) => a > 0) && cells.rest.every((a) => a > 0), `every cell drawn: ${JSON.stringify(cells)}`);
      const w = new Set(cells.word);
      assert.equal(w.size, 1, 'the word in one highlight');
      assert.ok(!cells.rest.some((a) => w.has(a)), `the changed word's cells differ from the rest of the line: ${JSON.stringify(cells)}`);
    };

    it('inline review: "red" is drawn in another highlight than the rest of the added line', async () => {
      await e.start({ initLua: SETUP('inline') });
      await e.t.nvim.uiAttach(120, 30, { ext_linegrid: true, rgb: true });
      fs.writeFileSync(path.join(e.t.cwd, 'a.txt'), ORIG);
      e.fake.script({ toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(ORIG), edits: [EDIT] } }] }, { text: 'done' });
      await e.t.cmd('edit a.txt');
      await e.t.cmd('Caboose change it');
      const r = await e.t.waitFor(() => e.t.lua<{ win: number } | null>("return require('caboose.ui.review').state()"), 'the review');
      const cells = await e.t.waitFor(() => e.t.lua<{ word: number[]; rest: number[] } | null>(CELLS, [r.win, 'the quick red fox', 'red']), 'the line drawn');
      check(cells);
    });

    it('approval float: "red" is drawn in another highlight than the rest of the added line', async () => {
      await e.start({ initLua: SETUP('float') });
      await e.t.nvim.uiAttach(120, 30, { ext_linegrid: true, rgb: true });
      fs.writeFileSync(path.join(e.t.cwd, 'a.txt'), ORIG);
      e.fake.script({ toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(ORIG), edits: [EDIT] } }] }, { text: 'done' });
      await e.t.cmd('Caboose change it');
      const f = await waitApprovalFloat(e.t, 'edit_file');
      const cells = await e.t.waitFor(() => e.t.lua<{ word: number[]; rest: number[] } | null>(CELLS, [f.win, 'the quick red fox', 'red']), 'the line drawn');
      check(cells);
    });
  });
});
