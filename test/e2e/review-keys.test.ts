/**
 * The inline review's keys never shadow what Neovim users rely on: no review key is `nowait` (a key that starts a
 * longer mapping — Neovim 0.11+'s grn/gra/grr/gri, the user's own — leaves those reachable), the default reject
 * key is not `gr`, a key the review buffer already maps (an ftplugin, the user's FileType autocommand) stays
 * theirs and is said once, and the user's own buffer maps are exactly as they were when the review ends.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { filetypeLines, forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const sha = (b: string) => createHash('sha256').update(b).digest('hex');
const ORIG = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'].join('\n') + '\n';
const EDITS = [
  { oldText: 'two', newText: 'TWO' },
  { oldText: 'five', newText: 'FIVE' },
];
const setup = (keys = '') => `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }${keys} })`;
/** The user's config: a global map and, for text files, a buffer-local one, both starting with `gr`. */
const USER_MAPS = `
vim.g.hits = {}
local function hit(k) return function() local h = vim.g.hits; h[k] = (h[k] or 0) + 1; vim.g.hits = h end end
vim.keymap.set('n', 'gry', hit('gry'), { desc = 'mine: global gry' })
vim.api.nvim_create_autocmd('FileType', { pattern = 'text', callback = function(ev)
  vim.keymap.set('n', 'grz', hit('grz'), { buffer = ev.buf, desc = 'mine: local grz' })
end })`;

type ReviewState = { id: string; path: string; buf: number | null; win: number | null; decisions: Record<string, { state: string }> } | null;
type Map = Record<string, unknown> | null;

forEachNvim((bin) => {
  describe(`review keys leave Neovim's and the user's keys alone (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const file = () => path.join(e.t.cwd, 'a.txt');
    const review = () => e.t.lua<ReviewState>("return require('caboose.ui.review').state()");
    const shown = () => e.t.waitFor(async () => ((await review())?.buf ? review() : null), 'the review') as Promise<NonNullable<ReviewState>>;
    const hits = () => e.t.lua<Record<string, number>>('return vim.g.hits');
    const chatHas = (text: string) => e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(text), text);
    const proposeEdit = (done: string, text = ORIG) =>
      e.fake.script({ toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(text), edits: EDITS } }] }, { text: done });
    const grMaps = () =>
      e.t.lua<unknown[]>(
        "local out = {} for _, k in ipairs({ 'grn', 'gra', 'grr', 'gri', 'grt' }) do local m = vim.fn.maparg(k, 'n', false, true) m.callback = nil table.insert(out, m) end return out",
      );
    /** The review buffer's own Normal-mode maps. */
    const reviewMaps = (buf: number) => e.t.lua<{ lhs: string; nowait: number; desc?: string }[]>(
        "return vim.tbl_map(function(m) return { lhs = m.lhs, nowait = m.nowait, desc = m.desc } end, vim.api.nvim_buf_get_keymap(..., 'n'))",
        [buf],
      );

    it('keys that start like a review key stay reachable in the review: the user\'s gry and buffer-local grz, Neovim\'s grn; no review key is nowait', async () => {
      await e.start({ initLua: USER_MAPS + '\n' + setup() });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      const grBefore = await grMaps();
      proposeEdit('done');
      await e.t.cmd('Caboose change');
      const r = await shown();
      await e.t.lua('vim.api.nvim_set_current_win(...)', [r.win]);
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_buf()'), r.buf, 'in the review buffer');
      const maps = await reviewMaps(r.buf!);
      const ours = maps.filter((m) => (m.desc ?? '').startsWith('Caboose review'));
      assert.ok(ours.length >= 7, `the review keys are set: ${JSON.stringify(ours.map((m) => m.lhs))}`);
      assert.deepEqual(ours.filter((m) => m.nowait === 1).map((m) => m.lhs), [], 'no review key is nowait');
      for (const lhs of ['grn', 'gra', 'grr', 'gri', 'grt', 'gry', 'grz'])
        assert.deepEqual(ours.filter((m) => lhs.startsWith(m.lhs)).map((m) => m.lhs), [], `no review key starts ${lhs}`);
      // Neovim's own gr* maps (0.11+: grn, gra, grr, gri, grt) are what they were before the review.
      assert.deepEqual(await grMaps(), grBefore, "Neovim's gr* maps are untouched during the review");
      if (await e.t.lua<number>("return vim.fn.has('nvim-0.11')")) {
        // 0.11+: Neovim's grn is there and typing it in the review runs it (rename, stubbed: no server here).
        assert.ok(grBefore.slice(0, 4).every((m) => m && Object.keys(m as object).length > 0), `grn, gra, grr, gri: ${JSON.stringify(grBefore)}`);
        await e.t.lua("vim.lsp.buf.rename = function() local h = vim.g.hits; h.grn = (h.grn or 0) + 1; vim.g.hits = h end");
        await e.t.nvim.input('grn');
        await e.t.waitFor(async () => (await hits()).grn === 1, "Neovim's grn ran in the review buffer");
      }
      await e.t.nvim.input('gry');
      await e.t.waitFor(async () => (await hits()).gry === 1, 'the global gry ran in the review buffer');
      await e.t.nvim.input('grz');
      await e.t.waitFor(async () => (await hits()).grz === 1, 'the FileType buffer-local grz ran in the review buffer');
      assert.equal(await e.t.lua('return vim.fn.mode()'), 'n', 'no reject prompt opened');
      assert.deepEqual(Object.values((await review())!.decisions).filter((d) => d.state !== 'pending'), [], 'nothing decided by them');
      // The review keys still work.
      await e.t.nvim.input('ga');
      await e.t.waitFor(async () => Object.values((await review())?.decisions ?? {}).some((d) => d.state === 'accepted'), 'ga accepts');
      await e.t.nvim.input('gX');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'gX asks a reason');
      await e.t.nvim.input('no<CR>');
      await chatHas('done');
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG.replace('two', 'TWO'));
    });

    it('reject = "gr" configured: not nowait, so the user\'s gry still runs and gr alone rejects after timeoutlen', async () => {
      await e.start({ initLua: USER_MAPS + '\n' + setup(", review = { keys = { reject = 'gr', quit = false } }") + '\nvim.o.timeoutlen = 200' });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      proposeEdit('gr done');
      await e.t.cmd('Caboose change');
      const r = await shown();
      await e.t.lua('vim.api.nvim_set_current_win(...)', [r.win]);
      const lhs = (await reviewMaps(r.buf!)).filter((m) => (m.desc ?? '').startsWith('Caboose review')).map((m) => m.lhs);
      assert.ok(lhs.includes('gr') && !lhs.includes('q'), `gr set, quit disabled by false: ${JSON.stringify(lhs)}`);
      await e.t.nvim.input('gry');
      await e.t.waitFor(async () => (await hits()).gry === 1, 'gry ran, not the review\'s gr');
      assert.equal(await e.t.lua('return vim.fn.mode()'), 'n');
      await e.t.nvim.input('gr');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'gr alone: the reason prompt after timeoutlen');
      await e.t.nvim.input('<Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'n', 'cancelled');
      assert.doesNotMatch(await e.t.lua<string>('return vim.wo[...].winbar', [r.win]), /false|nil/, 'a disabled key is not shown');
      await e.t.nvim.input('gR');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'reject all asks');
      await e.t.nvim.input('x<CR>');
      await chatHas('gr done');
    });

    it('a review key the review buffer maps already (a FileType map) stays theirs; said once; g? and the winbar say so', async () => {
      const init = `
vim.g.hits = {}
vim.api.nvim_create_autocmd('FileType', { pattern = 'markdown', callback = function(ev)
  vim.keymap.set('n', 'ga', function() local h = vim.g.hits; h.ga = (h.ga or 0) + 1; vim.g.hits = h end, { buffer = ev.buf, desc = 'mine: align' })
end })
${setup()}
vim.o.columns = 200`;
      await e.start({ initLua: init });
      fs.writeFileSync(path.join(e.t.cwd, 'a.md'), ORIG);
      fs.writeFileSync(path.join(e.t.cwd, 'b.md'), ORIG);
      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.md', expectedSha256: sha(ORIG), edits: EDITS } }] },
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'b.md', expectedSha256: sha(ORIG), edits: EDITS } }] },
        { text: 'both done' },
      );
      await e.t.cmd('Caboose change');
      const r = await shown();
      await e.t.cmd('CabooseApproval');
      const ga = await e.t.lua<Map>("local m = vim.fn.maparg('ga', 'n', false, true) m.callback = nil return m");
      assert.equal(ga?.desc, 'mine: align', 'their ga is kept in the review buffer');
      const warn = (await e.t.notifications()).filter((n) => n.msg.includes('Caboose review') && n.msg.includes('review.keys.accept'));
      assert.equal(warn.length, 1, `told once: ${JSON.stringify(await e.t.notifications())}`);
      assert.match(warn[0].msg, /ga/);
      assert.doesNotMatch(await e.t.lua<string>('return vim.wo[...].winbar', [r.win]), /ga accept/, 'the winbar does not offer ga');
      await e.t.nvim.input('g?');
      const keys = (await e.t.waitFor(() => filetypeLines(e.t, 'caboose_keys'), 'the keys float')).join('\n');
      assert.match(keys, /^ ga +NOT SET/m);
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await e.t.lua('return vim.bo.filetype')) !== 'caboose_keys', 'keys float closed');
      await e.t.nvim.input('ga');
      await e.t.waitFor(async () => (await hits()).ga === 1, 'their ga ran');
      await e.t.nvim.input('gA');
      const r2 = await e.t.waitFor(async () => ((await review())?.path === 'b.md' && (await review())?.buf ? review() : null), 'the second review');
      assert.ok(r2);
      assert.equal((await e.t.notifications()).filter((n) => n.msg.includes('review.keys.accept')).length, 1, 'not said again');
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('gA');
      await chatHas('both done');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'a.md'), 'utf8'), ORIG.replace('two', 'TWO').replace('five', 'FIVE'), 'gA accepted all');
    });

    it("the user's buffer-local maps on review keys are exactly as before after quit, accept all and reject all", async () => {
      await e.start({ initLua: setup() });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      const fbuf = await e.t.lua<number>('return vim.api.nvim_get_current_buf()');
      const KEYS = [']c', '[c', 'ga', 'gX', 'gA', 'gR', 'q', 'g?'];
      await e.t.lua(
        `for _, k in ipairs(...) do vim.keymap.set('n', k, '<Cmd>let g:mine = "' .. vim.fn.escape(k, '"\\\\') .. '"<CR>', { buffer = true, silent = true, desc = 'mine ' .. k }) end`,
        [KEYS],
      );
      const snapshot = () => e.t.lua<Map[]>(`local out = {} for i, k in ipairs(...) do out[i] = vim.api.nvim_buf_call(${fbuf}, function() return vim.fn.maparg(k, 'n', false, true) end) end return out`, [KEYS]);
      const before = await snapshot();
      assert.ok(before.every((m) => m && m.buffer === 1), 'mine are buffer-local');
      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(ORIG), edits: EDITS } }] },
        { text: 'accepted all' },
      );
      await e.t.cmd('Caboose change');
      let r = await shown();
      await e.t.cmd('CabooseApproval');
      assert.deepEqual(await snapshot(), before, 'during the review');
      await e.t.nvim.input(']c');
      await e.t.waitFor(async () => (await e.t.lua<number>("return vim.fn.line('.')")) === 5, 'the review\'s ]c');
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => !(await review())?.buf, 'q: left pending');
      assert.deepEqual(await snapshot(), before, 'after q');
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_buf()'), fbuf);
      await e.t.nvim.input('ga');
      await e.t.waitFor(async () => (await e.t.lua('return vim.g.mine')) === 'ga', 'my ga works in my buffer');
      await e.t.cmd('CabooseApproval');
      r = await shown();
      await e.t.nvim.input('gA');
      await chatHas('accepted all');
      assert.deepEqual(await snapshot(), before, 'after accept all');
      const now = fs.readFileSync(file(), 'utf8');
      assert.equal(now, ORIG.replace('two', 'TWO').replace('five', 'FIVE'));

      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(now), edits: [{ oldText: 'seven', newText: 'SEVEN' }] } }] },
        { text: 'rejected all' },
      );
      await e.t.cmd('Caboose again');
      r = await shown();
      assert.ok(r.buf);
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('gR');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'reject all asks');
      await e.t.nvim.input('no<CR>');
      await chatHas('rejected all');
      assert.deepEqual(await snapshot(), before, 'after reject all');
      await e.t.lua('vim.api.nvim_set_current_buf(...)', [fbuf]);
      await e.t.nvim.input('gX');
      await e.t.waitFor(async () => (await e.t.lua('return vim.g.mine')) === 'gX', 'my gX works');
    });
  });
});
