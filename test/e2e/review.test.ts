import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { filetypeLines, forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { firstToolResult } from '../support/chat-requests';

const SETUP = `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })`;
const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
const ORIG = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'].join('\n') + '\n';
const THREE = [
  { oldText: 'two', newText: 'TWO' },
  { oldText: 'five', newText: 'FIVE' },
  { oldText: 'nine', newText: 'NINE' },
];

type ReviewState = { id: string; path: string; file: number; files: number; buf: number; win: number; decisions: Record<string, { state: string; reason?: string }> } | null;
type Mark = [number, number, number, { line_hl_group?: string; hl_group?: string; virt_lines?: [string, string][][]; virt_text?: [string, string][] }];

forEachNvim((bin) => {
  describe(`inline review of file changes (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const file = () => path.join(e.t.cwd, 'a.txt');
    const review = () => e.t.lua<ReviewState>("return require('caboose.ui.review').state()");
    const waitReview = () => e.t.waitFor(review, 'the review') as Promise<NonNullable<ReviewState>>;
    const chatHas = (text: string) => e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(text), text);
    const bufLines = (name: string) => e.t.lua<string[]>(`return vim.api.nvim_buf_get_lines(vim.fn.bufnr('${name}'), 0, -1, false)`);
    const marks = (buf: number) => e.t.lua<Mark[]>("return vim.api.nvim_buf_get_extmarks(..., require('caboose.ui.review').ns, 0, -1, { details = true })", [buf]);
    /** The model reads a.txt (buffer-aware sha256), then proposes three edits; its next request is answered with `done`. */
    const scriptEdit = (done: string, edits = THREE) =>
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
        (req) => ({ toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: firstToolResult(req).data!.sha256 as string, edits } }] }),
        { text: done },
      );

    it('a 3-hunk edit_file in the file window: hunks 1 and 3 accepted, 2 rejected with a reason; one u restores the original', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      const fileWin = await e.t.lua<number>('return vim.api.nvim_get_current_win()');
      scriptEdit('reviewed');
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose change three lines');
      const r = await waitReview();
      assert.equal(r.path, 'a.txt');
      assert.equal(r.win, fileWin, "the review is in the file's own window");
      assert.equal(await e.t.lua('return vim.api.nvim_win_get_buf(...)', [fileWin]), r.buf);
      assert.deepEqual(await e.t.lua('return vim.api.nvim_buf_get_lines(..., 0, -1, false)', [r.buf]), ORIG.replace('two', 'TWO').replace('five', 'FIVE').replace('nine', 'NINE').trimEnd().split('\n'), 'the new text is shown');
      assert.equal(await e.t.lua("return vim.bo[...].filetype", [r.buf]), 'text', "the file's filetype (its highlighting)");
      // The file's buffer is untouched while the review is open.
      assert.deepEqual(await bufLines('a.txt'), ORIG.trimEnd().split('\n'));
      assert.equal(await e.t.lua("return vim.bo[vim.fn.bufnr('a.txt')].modified"), false);
      assert.equal(await e.t.lua("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last"), 0);
      // Decorations: added lines, removed lines as virtual lines above them, changed words, hunk labels.
      const m = await marks(r.buf);
      assert.deepEqual(m.filter((x) => x[3].hl_group === 'CabooseReviewAdd').map((x) => x[1]), [1, 4, 8]);
      const virt = m.filter((x) => x[3].virt_lines).map((x) => [x[1], x[3].virt_lines![0][0][0], x[3].virt_lines![0][0][1]]);
      assert.deepEqual(virt, [[1, 'two', 'CabooseReviewDelete'], [4, 'five', 'CabooseReviewDelete'], [8, 'nine', 'CabooseReviewDelete']]);
      assert.equal(m.filter((x) => x[3].hl_group === 'CabooseReviewText').length, 0, 'a whole-line change has no word marks');
      assert.equal(m.filter((x) => x[3].virt_text?.[0][0].includes('hunk')).length, 3);
      // The file's window is narrow (the chat is open): the keys come first, in their short form.
      assert.match(await e.t.lua<string>('return vim.wo[...].winbar', [fileWin]), /^ %#CabooseNotice#ga accept · gX reject · g\? keys%\* │ Rev/);

      await e.t.lua('vim.api.nvim_set_current_win(...)', [fileWin]);
      const row = () => e.t.lua<number>("return vim.fn.line('.')");
      assert.equal(await row(), 2, 'the cursor is on hunk 1');
      await e.t.nvim.input(']c');
      await e.t.waitFor(async () => (await row()) === 5, ']c goes to hunk 2');
      await e.t.nvim.input('[c');
      await e.t.waitFor(async () => (await row()) === 2, '[c goes back');
      await e.t.nvim.input('ga');
      await e.t.waitFor(async () => (await row()) === 5, 'accepting moves to the next hunk');
      await e.t.nvim.input('gX');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'the reason prompt');
      await e.t.nvim.input('keep five lowercase<CR>');
      await e.t.waitFor(async () => (await row()) === 9, 'on to hunk 3');
      const mid = await marks(r.buf);
      assert.ok(mid.some((x) => x[3].virt_text?.[0][0].includes('✗ rejected: keep five lowercase')));
      assert.ok(mid.some((x) => x[3].virt_text?.[0][0].includes('✓ accepted')));
      await e.t.nvim.input('ga');
      await chatHas('reviewed');

      const want = ORIG.replace('two', 'TWO').replace('nine', 'NINE');
      assert.equal(fs.readFileSync(file(), 'utf8'), want, 'exactly hunks 1 and 3 are on disk');
      assert.deepEqual(await bufLines('a.txt'), want.trimEnd().split('\n'), 'and in the buffer');
      assert.equal(await e.t.lua("return vim.bo[vim.fn.bufnr('a.txt')].modified"), false);
      assert.equal(await e.t.lua('return vim.api.nvim_win_get_buf(...) == vim.fn.bufnr("a.txt")', [fileWin]), true, 'the window shows the file again');
      assert.equal(await e.t.lua('return vim.api.nvim_buf_is_valid(...)', [r.buf]), false, 'the review buffer and its marks are gone');
      assert.equal(await e.t.lua<string>('return vim.wo[...].winbar', [fileWin]), '');
      assert.equal(await review(), null);

      const result = firstToolResult(e.fake.chatRequests[n + 2]);
      assert.equal(result.ok, true);
      const data = result.data as { sha256: string; review: { rejected: { hunk: number; reason: string; removed: string }[]; applied: { hunks: number[] }[] } };
      assert.equal(data.sha256, sha(want));
      assert.deepEqual(data.review.applied[0].hunks, [1, 3]);
      assert.deepEqual(data.review.rejected.map((x) => [x.hunk, x.removed, x.reason]), [[2, 'five', 'keep five lowercase']]);

      await e.t.lua('vim.api.nvim_set_current_win(...)', [fileWin]);
      await e.t.nvim.input('u');
      await e.t.waitFor(async () => (await bufLines('a.txt')).join('\n') === ORIG.trimEnd(), 'one u restores the original');
    });

    it('an unsaved buffer: accepting changes the buffer only', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'ONE (unsaved)' })");
      scriptEdit('buffer only');
      await e.t.cmd('Caboose change');
      const r = await waitReview();
      await e.t.lua('vim.api.nvim_set_current_win(...)', [r.win]);
      await e.t.nvim.input('gA');
      await chatHas('buffer only');
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG, 'the disk is untouched');
      assert.deepEqual(await bufLines('a.txt'), ['ONE (unsaved)', 'TWO', 'three', 'four', 'FIVE', 'six', 'seven', 'eight', 'NINE']);
      assert.equal(await e.t.lua("return vim.bo[vim.fn.bufnr('a.txt')].modified"), true);
    });

    it('the buffer changed during the review: accepting is refused as stale_file and the text stays', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      scriptEdit('saw it was stale');
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose change');
      const r = await waitReview();
      await e.t.lua("vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.txt'), 0, 0, false, { 'typed meanwhile' })");
      await e.t.lua('vim.api.nvim_set_current_win(...)', [r.win]);
      await e.t.nvim.input('ga');
      await e.t.nvim.input('gA');
      await chatHas('saw it was stale');
      const result = firstToolResult(e.fake.chatRequests[n + 2]);
      assert.equal(result.ok, false);
      assert.equal(result.error!.kind, 'stale_file');
      assert.deepEqual((await bufLines('a.txt')).slice(0, 3), ['typed meanwhile', 'one', 'two']);
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG);
    });

    it('a file that is not loaded opens in a split for review; q leaves it pending, :CabooseApproval comes back; gR rejects all', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(ORIG), edits: THREE } }] },
        { text: 'left alone' },
      );
      const wins = () => e.t.lua<number>('return #vim.api.nvim_tabpage_list_wins(0)');
      await e.t.lua("require('caboose').open_chat()");
      const before = await wins();
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose change');
      const r = await waitReview();
      assert.equal(await wins(), before + 1, 'a split for the review');
      assert.notEqual(await e.t.lua('return vim.api.nvim_get_current_win()'), r.win, 'without taking the cursor');
      await e.t.cmd('CabooseApproval');
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), r.win);
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await wins()) === before, 'q closes the split');
      assert.equal(((await review()) as NonNullable<ReviewState>).id, r.id, 'still pending');
      await e.t.cmd('CabooseApproval');
      const again = await e.t.waitFor(async () => ((await review())?.buf ? review() : null), 'shown again');
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), again!.win);
      await e.t.nvim.input('gR');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'the reason prompt');
      await e.t.nvim.input('not now<CR>');
      await chatHas('left alone');
      assert.equal(await wins(), before);
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG);
      const result = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(result.error!.kind, 'rejected_by_user');
      assert.match(result.error!.message, /not now/);
    });
    it(':q, :close and :bwipe on the review window leave it pending like q; :CabooseApproval brings it back with its decisions', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      scriptEdit('after the :q');
      await e.t.lua("require('caboose').open_chat()");
      const wins = () => e.t.lua<number>('return #vim.api.nvim_tabpage_list_wins(0)');
      const before = await wins();
      await e.t.cmd('Caboose change three lines');
      const r = await waitReview();
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('ga'); // hunk 1 accepted before leaving
      await e.t.waitFor(async () => Object.keys((await review())!.decisions).length === 1, 'hunk 1 decided');
      for (const close of ['q', 'close', 'bwipe!']) {
        await e.t.cmd(close);
        await e.t.waitFor(async () => (await wins()) === before, `:${close} closes the split`);
        const left = (await review())!;
        assert.equal(left.id, r.id, `still pending after :${close}`);
        assert.ok(left.buf == null, 'no dead buffer kept');
        assert.equal(await e.t.lua("return require('caboose').state().state"), 'pending_approval');
        await e.t.cmd('CabooseApproval');
        const again = await e.t.waitFor(async () => ((await review())?.buf ? review() : null), `shown again after :${close}`);
        assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), again!.win);
        assert.equal(await e.t.lua('return vim.api.nvim_buf_get_name(0)'), 'caboose://review/a.txt');
        assert.deepEqual(Object.values(again!.decisions), [{ state: 'accepted' }], 'with the decisions taken');
        assert.ok((await marks(again!.buf)).some((x) => x[3].virt_text?.[0][0].includes('✓ accepted')), 'and its hunks');
      }
      await e.t.nvim.input('gA');
      await chatHas('after the :q');
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG.replace('two', 'TWO').replace('five', 'FIVE').replace('nine', 'NINE'));
    });

    it(':q on a review in the only window beside the chat closes the review, not Neovim; it stays pending', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      await e.t.lua("require('caboose').open_chat()");
      scriptEdit('after quitting the review');
      await e.t.cmd('Caboose change three lines');
      const r = await waitReview();
      await e.t.lua('vim.api.nvim_set_current_win(...)', [r.win]);
      await e.t.cmd('q');
      await e.t.waitFor(async () => !(await e.t.lua<boolean>('return vim.api.nvim_win_is_valid(...)', [r.win])), 'the review window closed');
      assert.equal(e.t.proc.exitCode, null, 'Neovim is still running');
      assert.equal((await review())!.id, r.id, 'still pending');
      // (The request reaches Lua before the state event that follows it.)
      await e.t.waitFor(async () => (await e.t.lua("return require('caboose').state().state")) === 'pending_approval', 'pending_approval');
      await e.t.cmd('CabooseApproval');
      await e.t.waitFor(async () => ((await review())?.buf ? true : null), 'shown again');
      await e.t.nvim.input('gA');
      await chatHas('after quitting the review');
    });

    it('accepting a review jumped to with gA (chat.keys.approval) from the transcript puts the cursor back in the transcript', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      fs.writeFileSync(path.join(e.t.cwd, 'other.txt'), 'other\n');
      await e.t.cmd('edit other.txt');
      scriptEdit('back in the chat');
      await e.t.cmd('Caboose change three lines');
      const r = await waitReview();
      const transcript = await e.t.lua<number>("return vim.fn.bufwinid(require('caboose.chat').buf())");
      await e.t.lua('vim.api.nvim_set_current_win(...)', [transcript]);
      await e.t.nvim.input('gA');
      await e.t.waitFor(async () => (await e.t.lua('return vim.api.nvim_get_current_win()')) === r.win, 'in the review');
      await e.t.nvim.input('gA');
      await chatHas('back in the chat');
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), transcript, 'the cursor is back in the transcript');
    });

    it('the winbar shows the keys first when the window is narrow; g? lists the review keys', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(path.join(e.t.cwd, 'README-with-a-long-name.md'), ORIG);
      const bar = () =>
        e.t.lua<string>(`local s = require('caboose.ui.review').state()
          return vim.api.nvim_eval_statusline(vim.wo[s.win].winbar, { winid = s.win, use_winbar = true, maxwidth = vim.api.nvim_win_get_width(s.win) }).str`);
      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'README-with-a-long-name.md', expectedSha256: sha(ORIG), edits: [THREE[0]] } }] },
        { text: 'narrow done' },
      );
      await e.t.cmd('set columns=80 lines=24');
      await e.t.cmd('Caboose change');
      await waitReview();
      const narrow = await bar();
      for (const key of ['ga accept', 'gX reject', 'g? keys']) assert.ok(narrow.includes(key), `${key} in ${JSON.stringify(narrow)}`);
      await e.t.cmd('set columns=160 | doautocmd VimResized');
      await e.t.waitFor(async () => /\]c\/\[c hunk · ga accept · gX reject · gA\/gR all · q later · g\? keys/.test(await bar()), `every key at 160 columns: ${await bar()}`);
      assert.match(await bar(), /│ Review edit_file …[-a-z]*name\.md$/, 'the path is what gets cut');

      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('g?');
      const keys = await e.t.waitFor(() => filetypeLines(e.t, 'caboose_keys'), 'the keys float');
      const text = keys.join('\n');
      for (const k of [']c', '[c', 'ga', 'gX', 'gA', 'gR', 'q', 'g?']) assert.match(text, new RegExp(`^ ${k.replace(/[[\]?]/g, '\\$&')} `, 'm'), `${k} listed`);
      assert.match(text, /accept the hunk/);
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await filetypeLines(e.t, 'caboose_keys')) === null || (await e.t.lua('return vim.bo.filetype')) !== 'caboose_keys', 'keys float closed');
      assert.equal(await e.t.lua('return vim.api.nvim_buf_get_name(0)'), 'caboose://review/README-with-a-long-name.md', 'back in the review');
    });

    it('a change to line 1 shows its removed line above it (as filler at the top of the window)', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      await e.t.cmd('edit a.txt');
      scriptEdit('top done', [{ oldText: 'one\n', newText: 'ONE\n' }]);
      await e.t.cmd('Caboose change the top');
      const r = await waitReview();
      const view = await e.t.lua<{ topline: number; topfill: number }>('return vim.api.nvim_win_call(..., vim.fn.winsaveview)', [r.win]);
      assert.deepEqual({ topline: view.topline, topfill: view.topfill }, { topline: 1, topfill: 1 }, 'the removed "one" is visible above "ONE"');
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('gA');
      await chatHas('top done');
    });

    it('a created file reads "Review create_file docs/new.md" (the operation is not said twice)', async () => {
      await e.start({ initLua: SETUP });
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'docs/new.md', content: 'new\n' } }] }, { text: 'created' });
      await e.t.cmd('set columns=200');
      await e.t.cmd('Caboose create');
      const r = await waitReview();
      const bar = await e.t.lua<string>('return vim.wo[...].winbar', [r.win]);
      assert.match(bar, /Review create_file%\* docs\/new\.md │ 1 hunk/);
      assert.doesNotMatch(bar, /create_file.*create docs/);
    });

    it("approval.style = 'float': the float lists the hunks and t turns one off before approving", async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = 'float' } })` });
      fs.writeFileSync(file(), ORIG);
      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: sha(ORIG), edits: THREE } }] },
        { text: 'float done' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose change');
      const floatLines = () =>
        e.t.lua<string[] | null>(`for _, w in ipairs(vim.api.nvim_list_wins()) do
          local b = vim.api.nvim_win_get_buf(w)
          if vim.bo[b].filetype == 'caboose_approval' then return vim.api.nvim_buf_get_lines(b, 0, -1, false) end
        end return nil`);
      await e.t.waitFor(floatLines, 'the float');
      assert.equal(await review(), null, 'no inline review');
      await e.t.cmd('CabooseApproval');
      const lines = (await floatLines())!;
      const h2 = lines.findIndex((l) => l.startsWith('@@ hunk 2/3'));
      assert.ok(h2 > 0, lines.join('\n'));
      assert.deepEqual(lines.slice(h2 + 1, h2 + 3), ['-five', '+FIVE']);
      // t away from any hunk says where to go (and turns nothing off).
      await e.t.lua('vim.api.nvim_win_set_cursor(0, { 1, 0 })');
      await e.t.nvim.input('t');
      await e.t.waitFor(async () => (await e.t.notifications()).some((x) => /t turns off the hunk under the cursor/.test(x.msg)), 'the hint');
      assert.ok(!(await floatLines())!.some((l) => l.includes('✗ skipped')));
      await e.t.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', [h2 + 2]);
      await e.t.nvim.input('t');
      await e.t.waitFor(async () => (await floatLines())![h2].includes('✗ skipped'), 'hunk 2 off');
      // On an 80-column screen the footer still shows every key, in a shorter form (never cut).
      await e.t.cmd('set columns=80 | doautocmd VimResized');
      const fit = await e.t.waitFor(async () => {
        const f = await e.t.lua<{ footer: string; width: number }>(`local c = vim.api.nvim_win_get_config(0)
          local text = type(c.footer) == 'table' and table.concat(vim.tbl_map(function(x) return x[1] end, c.footer)) or c.footer
          return { footer = text, width = c.width }`);
        return f.width <= 76 ? f : null;
      }, 'the float at 80 columns');
      assert.ok(Buffer.from(fit.footer).toString().length <= fit.width, `${JSON.stringify(fit.footer)} fits ${fit.width} columns`);
      for (const k of ['[t] hunk', '[o', '[a] always', '[r] reject', '[q] hide']) assert.ok(fit.footer.includes(k), `${k} in ${fit.footer}`);
      await e.t.nvim.input('o');
      await chatHas('float done');
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG.replace('two', 'TWO').replace('nine', 'NINE'));
      const result = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.deepEqual((result.data as { review: { rejected: { hunk: number }[] } }).review.rejected.map((x) => x.hunk), [2]);
    });
    it('a multi-file apply_patch is reviewed file by file; only the accepted files are committed', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(file(), ORIG);
      fs.writeFileSync(path.join(e.t.cwd, 'b.txt'), 'bee\n');
      const patch = ['*** Begin Patch', '*** Update File: a.txt', '@@', '-two', '+TWO', '*** Update File: b.txt', '@@', '-bee', '+BEE', '*** End Patch'].join('\n');
      e.fake.script({ toolCalls: [{ name: 'apply_patch', arguments: { patch, expectedSha256ByPath: { 'a.txt': sha(ORIG), 'b.txt': sha('bee\n') } } }] }, { text: 'patched' });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose patch both');
      const first = await waitReview();
      assert.deepEqual([first.path, first.file, first.files], ['a.txt', 1, 2]);
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('gA');
      const second = await e.t.waitFor(async () => ((await review())?.path === 'b.txt' ? review() : null), 'the second file');
      assert.equal(second!.file, 2);
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG, 'nothing is written before the last file is decided');
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('gR');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'the reason prompt');
      await e.t.nvim.input('leave b<CR>');
      await chatHas('patched');
      assert.equal(fs.readFileSync(file(), 'utf8'), ORIG.replace('two', 'TWO'));
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'b.txt'), 'utf8'), 'bee\n');
      const result = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(result.ok, true);
      assert.deepEqual((result.data as { review: { rejected: { path: string; reason: string }[] } }).review.rejected.map((r) => [r.path, r.reason]), [['b.txt', 'leave b']]);
    });
  });
});
