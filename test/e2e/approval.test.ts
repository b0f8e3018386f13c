import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';

const SETUP = (extra = '') => `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 } ${extra} })`;

forEachNvim((bin) => {
  describe(`the approval float (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const start = (extra = '') => e.start({ initLua: SETUP(extra) });
    const chatHas = (text: string) => e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(text), text);

    it('fits an 80x24 screen: keys in the footer, long lines wrapped, the body scrolls with <C-d>/<C-u>', async () => {
      await start();
      await e.t.cmd('set columns=80 lines=24');
      const long = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
      const content = [long, ...Array.from({ length: 80 }, (_, i) => `line ${i + 1}`)].join('\n') + '\n';
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'big.txt', content } }] }, { text: 'created' });
      await e.t.cmd('Caboose make big');
      const f = await waitApprovalFloat(e.t, 'create_file');
      assert.deepEqual(f.lines.slice(0, 2), ['path: big.txt', `content: 81 lines, ${Buffer.byteLength(content)} bytes`]);
      assert.match(f.footer, /\[o\/<CR>\] once +\[a\] always +\[r\] reject +\[q\] hide/);
      assert.ok(!f.text.includes('[o/<CR>]'), 'the keys are not a buffer line one has to scroll to');
      assert.ok(f.row >= 0 && f.row + f.height <= 24 - 1, `fits the rows above the command line: row ${f.row} height ${f.height}`);
      assert.ok(f.col >= 0 && f.col + f.width <= 80, `fits the columns: col ${f.col} width ${f.width}`);
      const wo = await e.t.lua<{ wrap: boolean; linebreak: boolean; focusable: boolean }>(
        'local w = ... return { wrap = vim.wo[w].wrap, linebreak = vim.wo[w].linebreak, focusable = vim.api.nvim_win_get_config(w).focusable }',
        [f.win],
      );
      assert.deepEqual(wo, { wrap: true, linebreak: true, focusable: true });
      assert.ok(f.lines.length > f.height, 'the body is longer than the float');

      await e.t.cmd('CabooseApproval');
      const top = () => e.t.lua<number>("return vim.fn.line('w0')");
      assert.equal(await top(), 1);
      await e.t.nvim.input('<C-d>');
      await e.t.waitFor(async () => (await top()) > 1, 'scrolled down');
      await e.t.nvim.input('<C-u>');
      await e.t.waitFor(async () => (await top()) === 1, 'scrolled back up');
      await e.t.nvim.input('o');
      await chatHas('created');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'big.txt'), 'utf8'), content);
    });
  });
});
