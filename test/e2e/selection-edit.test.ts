import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const SETUP = `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, edit = { keymap = '<F3>' } })`;
const TEXT = ['local a = 1', 'local b = 2', 'local c = 3', 'return a + b + c'];

type ReviewState = { id: string; buf?: number; win?: number } | null;

forEachNvim((bin) => {
  describe(`:CabooseEdit (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const review = () => e.t.lua<ReviewState>("return require('caboose.ui.review').state()");
    const waitReview = () => e.t.waitFor(review, 'the review') as Promise<NonNullable<ReviewState>>;
    const lines = () => e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(vim.g.src, 0, -1, false)');
    const waitLines = (want: string[]) => e.t.waitFor(async () => JSON.stringify(await lines()) === JSON.stringify(want), `buffer ${JSON.stringify(want)}`);
    const replace = (replacement: string, opts: { gate?: Promise<void> } = {}) =>
      e.fake.script({ toolCalls: [{ name: 'replace_selection', arguments: { replacement } }], ...opts });
    const setup = async (kind: 'named' | 'unsaved' | 'unnamed') => {
      await e.start({ initLua: SETUP });
      if (kind === 'unnamed') {
        await e.t.cmd('enew');
        await e.t.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, ...)', [TEXT]);
        await e.t.cmd('setfiletype lua');
      } else {
        fs.writeFileSync(path.join(e.t.cwd, 'm.lua'), TEXT.join('\n') + '\n');
        await e.t.cmd('edit m.lua');
        if (kind === 'unsaved') await e.t.lua("vim.api.nvim_buf_set_lines(0, 3, 4, false, { 'return a + b + c -- unsaved' })");
      }
      await e.t.lua('vim.g.src = vim.api.nvim_get_current_buf()');
    };

    it('named file: the selection, its context and the instruction reach the model; accepted → on disk and in the buffer, one u undoes it', async () => {
      await setup('named');
      const n = e.fake.chatRequests.length;
      replace('local b = 20\nlocal c = 30');
      await e.t.cmd("2,3CabooseEdit multiply by ten");
      const r = await waitReview();
      const req = e.fake.chatRequests[n];
      const user = String((req.body!.messages as { role: string; content: string }[]).find((m) => m.role === 'user')!.content);
      assert.match(user, /Instruction: multiply by ten/);
      assert.match(user, /m\.lua, lines 2-3, filetype lua/);
      assert.match(user, /local b = 2\nlocal c = 3/);
      assert.match(user, /Lines just above it[\s\S]*local a = 1/);
      assert.match(user, /Lines just below it[\s\S]*return a \+ b \+ c/);
      assert.deepEqual((req.body!.tools as { function: { name: string } }[]).map((t) => t.function.name), ['replace_selection']);
      assert.equal(r.win, await e.t.lua('return vim.api.nvim_get_current_win()'), 'reviewed in the source window');
      assert.deepEqual(await e.t.lua('return vim.api.nvim_buf_get_lines(..., 0, -1, false)', [r.buf]), ['local a = 1', 'local b = 20', 'local c = 30', 'return a + b + c']);
      const words = await e.t.lua<number>("return #vim.tbl_filter(function(m) return m[4].hl_group == 'CabooseReviewText' end, vim.api.nvim_buf_get_extmarks(..., require('caboose.ui.review').ns, 0, -1, { details = true }))", [r.buf]);
      assert.equal(words, 2, 'the changed words are marked');
      await e.t.nvim.input('gA');
      const want = ['local a = 1', 'local b = 20', 'local c = 30', 'return a + b + c'];
      await e.t.waitFor(async () => fs.readFileSync(path.join(e.t.cwd, 'm.lua'), 'utf8') === want.join('\n') + '\n', 'written to disk');
      await waitLines(want);
      assert.equal(await e.t.lua('return vim.bo[vim.g.src].modified'), false);
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_buf() == vim.g.src'), true, 'the window shows the file again');
      await e.t.nvim.input('u');
      await waitLines(TEXT);
    });

    it(':q on the review window leaves the edit pending; :CabooseApproval brings it back and it can be accepted', async () => {
      await setup('named');
      await e.t.cmd('vsplit');
      replace('local b = 20');
      await e.t.cmd('2CabooseEdit twenty');
      const r = await waitReview();
      assert.equal(r.win, await e.t.lua('return vim.api.nvim_get_current_win()'));
      await e.t.cmd('q');
      await e.t.waitFor(async () => (await review())?.buf == null, 'the review is hidden');
      assert.ok(await review(), 'still pending');
      await e.t.cmd('CabooseApproval');
      const again = await e.t.waitFor(async () => ((await review())?.buf ? review() : null), 'shown again');
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), again!.win);
      await e.t.nvim.input('ga');
      await waitLines(['local a = 1', 'local b = 20', 'local c = 3', 'return a + b + c']);
      assert.equal(await review(), null);
    });

    it('unsaved buffer: accepted → the buffer only; unnamed buffer: reject leaves it, accept edits it', async () => {
      await setup('unsaved');
      replace('local b = 22');
      await e.t.cmd('2CabooseEdit twenty-two');
      await waitReview();
      await e.t.nvim.input('ga');
      await waitLines(['local a = 1', 'local b = 22', 'local c = 3', 'return a + b + c -- unsaved']);
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'm.lua'), 'utf8'), TEXT.join('\n') + '\n', 'the disk is untouched');
      assert.equal(await e.t.lua('return vim.bo[vim.g.src].modified'), true);
    });

    it('unnamed buffer: reject leaves it as it was, accept edits it in one undo step', async () => {
      await setup('unnamed');
      replace('local a = 100');
      await e.t.cmd('1CabooseEdit hundred');
      await waitReview();
      await e.t.nvim.input('gR');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'reason prompt');
      await e.t.nvim.input('<CR>');
      await e.t.waitFor(async () => (await review()) === null, 'review closed');
      assert.deepEqual(await lines(), TEXT);
      replace('local a = 100');
      await e.t.cmd('1CabooseEdit hundred');
      await waitReview();
      await e.t.nvim.input('ga');
      await waitLines(['local a = 100', ...TEXT.slice(1)]);
      await e.t.nvim.input('u');
      await waitLines(TEXT);
    });

    it('the range is tracked while the request runs (lines inserted above); an edited range is refused as stale; :CabooseStop cancels', async () => {
      await setup('named');
      let release!: () => void;
      replace('local c = 33', { gate: new Promise<void>((r) => (release = r)) });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('3CabooseEdit thirty-three');
      await e.fake.waitForRequest(n + 1);
      const progress = await e.t.lua<string>("local m = vim.api.nvim_buf_get_extmarks(vim.g.src, require('caboose.edit').ns, 0, -1, { details = true }) for _, x in ipairs(m) do if x[4].virt_text then return x[2] .. ':' .. x[4].virt_text[1][1] end end return ''");
      assert.match(progress, /^2:.*Caboose: thirty-three/, 'a progress indicator at the range');
      await e.t.lua("vim.api.nvim_buf_set_lines(vim.g.src, 0, 0, false, { '-- inserted', '-- above' })");
      release();
      await waitReview();
      await e.t.nvim.input('ga');
      await waitLines(['-- inserted', '-- above', 'local a = 1', 'local b = 2', 'local c = 33', 'return a + b + c']);

      // The range itself edited while the request runs: refused.
      let release2!: () => void;
      replace('local a = 0', { gate: new Promise<void>((r) => (release2 = r)) });
      const m = e.fake.chatRequests.length;
      await e.t.cmd('3CabooseEdit zero');
      await e.fake.waitForRequest(m + 1);
      await e.t.lua("vim.api.nvim_buf_set_lines(vim.g.src, 2, 3, false, { 'local a = 5' })");
      release2();
      await e.t.waitFor(async () => (await e.t.notifications()).some((x) => /changed while the request ran.*stale/.test(x.msg)), 'stale notice');
      assert.equal(await review(), null);
      assert.equal((await lines())[2], 'local a = 5');

      // :CabooseStop while it runs: no review, the buffer as it was, the progress gone.
      e.fake.script({ hang: true });
      const k = e.fake.chatRequests.length;
      await e.t.cmd('4CabooseEdit never');
      await e.fake.waitForRequest(k + 1);
      await e.t.cmd('CabooseStop');
      assert.equal(await e.t.lua("return #vim.api.nvim_buf_get_extmarks(vim.g.src, require('caboose.edit').ns, 0, -1, {})"), 0);
      assert.equal(await e.t.lua("return require('caboose.edit').running()"), 0);
      assert.equal((await lines())[3], 'local b = 2');
    });

    it('without an instruction it asks with vim.ui.input; <Plug>(CabooseEdit) from Visual mode', async () => {
      await setup('named');
      await e.t.lua("vim.ui.input = function(opts, cb) _G.asked = opts.prompt cb('double it') end");
      replace('local a = 2');
      await e.t.nvim.input('ggV<F3>');
      await waitReview();
      assert.equal(await e.t.lua('return _G.asked'), 'Caboose edit: ');
      await e.t.nvim.input('ga');
      await waitLines(['local a = 2', ...TEXT.slice(1)]);
    });
  });
});
