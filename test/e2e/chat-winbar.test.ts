/** Issue 17, defect 12: the chat winbar keeps mode, state, model and queue count; the title is cut first. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const SETUP = (cols: number, lines: number) =>
  `vim.o.columns = ${cols} vim.o.lines = ${lines} require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;
const TITLE_WORDS = 'please explain in detail how the session recorder stores long conversations and their usage';

forEachNvim((bin) => {
  describe(`chat winbar (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    /** The winbar as drawn: evaluated at the transcript window's width. */
    const drawn = () =>
      e.t.lua<string>(`local win = vim.fn.win_findbuf(require('caboose.chat').buf())[1]
        return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = vim.api.nvim_win_get_width(win) }).str`);

    for (const [cols, lines] of [[160, 45], [80, 24]] as const) {
      it(`at ${cols}x${lines} a long title never pushes out the mode, state, model or queue count`, async () => {
        await e.start({ initLua: SETUP(cols, lines) });
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        e.fake.script({ text: 'streaming words here', chunks: ['streaming ', 'words here'], gate }, { text: 'second' });
        await e.t.cmd(`Caboose ${TITLE_WORDS}`);
        await e.t.waitFor(async () => (await e.t.chatLines()).some((l) => l.includes('streaming')), 'the first chunk');
        await e.t.cmd('Caboose and a queued one');
        await e.t.waitFor(async () => (await e.t.lua<unknown[]>("return require('caboose.chat').queue()")).length === 1, 'queued');
        const bar = await e.t.waitFor(async () => {
          const b = await drawn();
          return /please/.test(b) || cols === 80 ? b : null;
        }, 'the title in the winbar');
        const width = await e.t.lua<number>("return vim.api.nvim_win_get_width(vim.fn.win_findbuf(require('caboose.chat').buf())[1])");
        assert.ok((await e.t.lua<number>('return vim.api.nvim_strwidth(...)', [bar])) <= width, `fits ${width}: ${bar}`);
        assert.match(bar, /^ {2}chug {2}│ streaming │ (1 queued|⧗1) │ gpt-4o-mini( │|$)/, `mode, state, queue count and model first: ${bar}`);
        if (cols === 160) {
          assert.match(bar, /│ 1 queued │/, 'the queue count in full at 160 columns');
          assert.match(bar, /│ please explain[^│]*…$/, `the title comes last, cut: ${bar}`);
        }
        release();
        await e.t.waitFor(async () => (await e.t.chatLines()).includes('second'), 'the second reply');
      });
    }
  });
});

forEachNvim((bin) => {
  describe(`queued messages in view (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    it('a chat window following a long reply shows the queued messages under it (on the screen)', async () => {
      await e.start({ initLua: SETUP(80, 24) });
      await e.t.nvim.uiAttach(80, 24, { ext_linegrid: true });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const many = Array.from({ length: 60 }, (_, i) => `streamed line ${i}\n`);
      e.fake.script({ text: many.join('') + 'end', chunks: [...many, 'end'], gate, gateAfterChunks: 50 }, { text: 'second' });
      await e.t.cmd('Caboose first');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('streamed line 49'), 'the reply streams');
      await e.t.cmd('Caboose queued while streaming');
      const screen = () =>
        e.t.lua<string>(`vim.cmd('redraw')
          local out = {}
          for r = 1, vim.o.lines do
            local l = {}
            for c = 1, vim.o.columns do l[#l + 1] = vim.fn.screenstring(r, c) end
            out[#out + 1] = table.concat(l)
          end
          return table.concat(out, '\\n')`);
      await e.t.waitFor(async () => /⧗ queued 1: queued while streaming/.test(await screen()), 'the queued message on the screen').catch(async (err) => {
        throw new Error(`${err}\n${await screen()}`);
      });
      assert.match(await screen(), /streamed line 49/, 'with the reply\'s last line');
      release();
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('second'), 'the queued message\'s reply');
    });
  });
});
