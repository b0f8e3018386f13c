/** Live buffers in real headless Neovim: undo, views, marks, file formats, hooks, tabs, the agent path. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { firstToolResult } from '../support/chat-requests';
import { bufferOf, toolCall } from '../support/buffers';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);
const noProblems = async (t: TestNvim) => {
  const msgs = await t.lua<string>("return vim.fn.execute('messages')");
  assert.doesNotMatch(msgs, /W1[1236]|E37|E13|E\d+:|WARNING/, msgs);
  assert.equal(await t.lua('return vim.v.errmsg'), '');
};
/** sha256 of the bytes the current buffer writes, by letting Neovim write them elsewhere (no autocmds). */
const writtenSha = async (t: TestNvim, name = 'out.bin') => {
  const p = path.join(t.cwd, '..', `${path.basename(t.cwd)}-${name}`);
  await t.lua(`vim.cmd('noautocmd keepalt silent write! ' .. vim.fn.fnameescape(...))`, [p]);
  const bytes = fs.readFileSync(p);
  fs.rmSync(p);
  return sha(bytes);
};

/** `:write` that fails instead of hanging when Neovim asks a question ("changed since reading it"). */
const writeWithoutPrompt = async (t: TestNvim) => {
  const done = t.nvim.command('write').then(() => 'written', (e: unknown) => `error: ${String(e)}`);
  for (let i = 0; i < 100; i++) {
    const m = (await t.nvim.mode) as { mode: string; blocking: boolean };
    if (m.blocking || m.mode.startsWith('r')) {
      await t.nvim.input('n<CR>');
      await done;
      assert.fail(`:write asked a question (mode ${m.mode})`);
    }
    const r = await Promise.race([done, new Promise((res) => setTimeout(() => res(null), 10))]);
    if (r === 'written') return;
    if (typeof r === 'string') assert.fail(r);
  }
  assert.fail(':write did not finish');
};

forEachNvim((bin) => {
  describe(`live buffers in Neovim ${bin.version}`, () => {
    let t: TestNvim;
    const F = () => path.join(t.cwd, 'f.txt');
    before(async () => {
      t = await startNvim({ nvim: bin, initLua: "require('caboose').setup({})" });
    });
    after(async () => {
      await t.close();
    });
    const reset = async (content: string) => {
      await t.cmd('silent! tabonly | silent! only | silent! %bwipeout!');
      for (const n of fs.readdirSync(t.cwd)) fs.rmSync(path.join(t.cwd, n), { recursive: true, force: true });
      fs.writeFileSync(F(), content);
      await t.cmd('messages clear');
      await t.lua("vim.v.errmsg = ''");
    };
    const read = async () => {
      const r = await toolCall(t, 'read_file', { path: 'f.txt' });
      assert.ok(r.ok, JSON.stringify(r));
      return r.data!.sha256 as string;
    };

    it('one undo step reverts exactly the agent change, even on top of unsaved user edits', async () => {
      await reset(lines(50).join('\n') + '\n');
      await t.cmd('edit f.txt');
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'user edit'})");
      const before = await t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)');
      const r = await toolCall(t, 'edit_file', {
        path: 'f.txt',
        expectedSha256: await read(),
        edits: [
          { oldText: 'line 10\n', newText: 'ten\n' },
          { oldText: 'line 40\nline 41\n', newText: 'forty\nforty-one\nforty-one and a half\n' },
        ],
      });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.data!.savedToDisk, false);
      await t.cmd('undo');
      assert.deepEqual(await t.lua('return vim.api.nvim_buf_get_lines(0, 0, -1, false)'), before, 'only the agent change is undone');
      await t.cmd('undo');
      assert.equal(await t.lua('return vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]'), 'line 1', 'the user edit is its own step');
      await noProblems(t);
    });

    it('keeps the cursor, marks, folds and extmarks outside the changed hunks', async () => {
      await reset(lines(100).join('\n') + '\n');
      await t.cmd('edit f.txt');
      await t.lua(`
        vim.api.nvim_win_set_cursor(0, {80, 3})
        vim.api.nvim_buf_set_mark(0, 'a', 90, 2, {})
        _G.ns = vim.api.nvim_create_namespace('caboose-test')
        _G.mark = vim.api.nvim_buf_set_extmark(0, _G.ns, 69, 1, {})
        _G.same_line = vim.api.nvim_buf_set_extmark(0, _G.ns, 9, 0, {})
        vim.wo.foldmethod = 'manual'
        vim.cmd('60,65fold')`);
      const r = await toolCall(t, 'edit_file', {
        path: 'f.txt',
        expectedSha256: await read(),
        edits: [
          { oldText: 'line 10\n', newText: 'line 10 changed at the end\n' },
          { oldText: 'line 5\n', newText: 'line 5\ninserted a\ninserted b\n' },
        ],
      });
      assert.ok(r.ok, JSON.stringify(r));
      const s = await t.lua<{ cursor: number[]; mark: number[]; ext: number[]; same: number[]; fold: number; modified: boolean }>(`
        return {
          cursor = vim.api.nvim_win_get_cursor(0),
          mark = vim.api.nvim_buf_get_mark(0, 'a'),
          ext = vim.api.nvim_buf_get_extmark_by_id(0, _G.ns, _G.mark, {}),
          same = vim.api.nvim_buf_get_extmark_by_id(0, _G.ns, _G.same_line, {}),
          fold = vim.fn.foldclosed(62),
          modified = vim.bo.modified,
        }`);
      // Two lines were inserted above: everything below follows its text.
      assert.deepEqual(s.cursor, [82, 3]);
      assert.deepEqual(s.mark, [92, 2]);
      assert.deepEqual(s.ext, [71, 1]);
      assert.deepEqual(s.same, [11, 0], 'an extmark at the start of a line changed only at its end stays');
      assert.equal(s.fold, 62, 'the fold moved with its lines');
      assert.equal(s.modified, false);
      assert.equal(fs.readFileSync(F(), 'utf8').split('\n')[11], 'line 10 changed at the end');
      await noProblems(t);
    });

    it('no W11 later: checktime and :w after an agent write to a clean buffer are silent', async () => {
      await reset('a\nb\n');
      await t.cmd('edit f.txt');
      await t.lua("vim.o.autoread = false; _G.fcs = {}; vim.api.nvim_create_autocmd('FileChangedShell', { callback = function() table.insert(_G.fcs, vim.v.fcs_reason); vim.v.fcs_choice = '' end })");
      const r = await toolCall(t, 'write_file', { path: 'f.txt', content: 'a\nB\n', expectedSha256: await read() });
      assert.ok(r.ok);
      await t.cmd('checktime');
      assert.deepEqual(await t.lua('return _G.fcs'), [], 'Neovim stored the new file time');
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'A'})");
      await t.cmd('write');
      assert.equal(fs.readFileSync(F(), 'utf8'), 'A\nB\n');
      await t.lua("vim.o.autoread = true; vim.api.nvim_clear_autocmds({ event = 'FileChangedShell' })");
      await noProblems(t);
    });

    for (const [what, content] of [
      ['longer', 'a\nmuch longer line\nc\n'],
      ['shorter', 'a\n'],
      ['same size', 'A\nb\n'],
    ] as const) {
      it(`an agent write that makes the file ${what}: a later :w writes without asking`, async () => {
        await reset('a\nb\n');
        await t.cmd('edit f.txt');
        const r = await toolCall(t, 'write_file', { path: 'f.txt', content, expectedSha256: await read() });
        assert.ok(r.ok, JSON.stringify(r));
        assert.equal(r.data!.savedToDisk, true);
        assert.deepEqual(await bufferOf(t, F()), { lines: content.split('\n').slice(0, -1), modified: false });
        await t.cmd('checktime');
        await t.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, {'user line'})");
        await writeWithoutPrompt(t);
        assert.equal(fs.readFileSync(F(), 'utf8'), `${content}user line\n`);
        await noProblems(t);
      });
    }

    it('a clean-buffer write records the file as the buffer\'s own without comparing or touching it: its time stays the host\'s, a later :checktime and :w are silent', async () => {
      await reset('a\nb\n');
      await t.cmd('edit f.txt');
      const expected = await read();
      // One Lua chunk: nothing else runs in Neovim between the call's return and the stat.
      const r = await t.lua<{ ok: boolean; mtime: number }>(
        "local r = require('caboose').tool_call('write_file', { path = 'f.txt', content = 'A\\nb\\n', expectedSha256 = ... }); local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(0)); return { ok = r.ok, mtime = st.mtime.sec * 1e3 + st.mtime.nsec / 1e6 }",
        [expected],
      );
      assert.ok(r.ok);
      await new Promise((res) => setTimeout(res, 50));
      const later = await t.lua<number>('local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(0)); return st.mtime.sec * 1e3 + st.mtime.nsec / 1e6');
      assert.equal(later, r.mtime, 'the file keeps the time of the agent\'s write (Neovim did not touch it)');
      await t.lua("vim.o.autoread = false; _G.fcs = {}; vim.api.nvim_create_autocmd('FileChangedShell', { callback = function() table.insert(_G.fcs, vim.v.fcs_reason); vim.v.fcs_choice = '' end })");
      await t.cmd('checktime');
      assert.deepEqual(await t.lua('return _G.fcs'), [], 'Neovim stored the new file time');
      await t.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, {'user line'})");
      await writeWithoutPrompt(t);
      assert.equal(fs.readFileSync(F(), 'utf8'), 'A\nb\nuser line\n');
      await t.lua("vim.o.autoread = true; vim.api.nvim_clear_autocmds({ event = 'FileChangedShell' })");
      await noProblems(t);
    });

    for (const [what, setup, undo] of [
      ['a BufWriteCmd of the user\'s (another pattern)', "vim.api.nvim_create_autocmd('BufWriteCmd', { group = vim.api.nvim_create_augroup('user_bwc', {}), pattern = '*.never', callback = function() _G.bwc = true end })", "vim.api.nvim_del_augroup_by_name('user_bwc')"],
      ['a BufWriteCmd of the user\'s for this file', "vim.api.nvim_create_autocmd('BufWriteCmd', { group = vim.api.nvim_create_augroup('user_bwc', {}), pattern = '*.TXT', callback = function() _G.bwc = true end })", "vim.api.nvim_del_augroup_by_name('user_bwc')"],
      ["'eventignore' set", "vim.o.eventignore = 'CursorHold'", "vim.o.eventignore = ''"],
      ["no 'filetype'", "vim.bo.filetype = ''", ''],
      ["'readonly' set by the user (:view)", 'vim.bo.readonly = true', 'vim.bo.readonly = false'],
    ] as const) {
      it(`a clean-buffer write with ${what}: :checktime and :w stay silent, no autocommand of the user's runs`, async () => {
        await reset('a\nb\n');
        await t.cmd('edit f.txt');
        await t.lua(`_G.bwc = false; _G.fired = {}; vim.api.nvim_create_autocmd({ 'BufWritePre', 'BufWritePost' }, { group = vim.api.nvim_create_augroup('watch', {}), callback = function(ev) table.insert(_G.fired, ev.event) end }); ${setup}`);
        const r = await toolCall(t, 'write_file', { path: 'f.txt', content: 'a\nmuch longer B\n', expectedSha256: await read() });
        assert.ok(r.ok, JSON.stringify(r));
        assert.deepEqual(await bufferOf(t, F()), { lines: ['a', 'much longer B'], modified: false });
        assert.equal(await t.lua('return vim.bo.readonly'), what.includes('readonly'), "'readonly' kept");
        await t.lua('vim.o.autoread = false');
        await t.cmd('checktime');
        assert.deepEqual(await t.lua('return _G.fired'), [], 'no BufWritePre/Post');
        assert.equal(await t.lua('return _G.bwc'), false);
        await t.lua(`vim.o.autoread = true; vim.api.nvim_del_augroup_by_name('watch'); ${undo}`);
        await t.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, {'user line'})");
        await writeWithoutPrompt(t);
        assert.equal(fs.readFileSync(F(), 'utf8'), 'a\nmuch longer B\nuser line\n');
        await noProblems(t);
      });
    }

    it('record_written leaves a file that is no longer the one the host wrote (another inode, size or mtime) to :checktime', async () => {
      await reset('a\nb\n');
      await t.cmd('edit f.txt');
      const r = await t.lua<boolean[]>(`
        local ft = require('caboose.buffers.filetime')
        local b = vim.api.nvim_get_current_buf()
        local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(b))
        local exact = { ino = st.ino, size = st.size, mtime_sec = st.mtime.sec, mtime_nsec = st.mtime.nsec }
        local out = {}
        for _, k in ipairs({ 'ino', 'size', 'mtime_nsec' }) do
          local e = vim.deepcopy(exact)
          e[k] = e[k] + 1
          out[#out + 1] = ft.record_written(b, e)
        end
        out[#out + 1] = ft.record_written(b, exact)
        return out`);
      assert.deepEqual(r, [false, false, false, true]);
      await noProblems(t);
    });

    it('a user edit right after a clean-buffer write: the later compare is skipped and :checktime stays silent', async () => {
      await reset('a\nb\n');
      await t.cmd('edit f.txt');
      const expected = await read();
      const r = await t.lua<{ ok: boolean; mtime: number }>(
        "local r = require('caboose').tool_call('write_file', { path = 'f.txt', content = 'a\\nB\\n', expectedSha256 = ... }); vim.api.nvim_buf_set_lines(0, 0, 1, false, {'typed'}); local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(0)); return { ok = r.ok, mtime = st.mtime.sec * 1e3 + st.mtime.nsec / 1e6 }",
        [expected],
      );
      assert.ok(r.ok);
      const later = await t.lua<number>('local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(0)); return st.mtime.sec * 1e3 + st.mtime.nsec / 1e6');
      assert.equal(later, r.mtime, 'the file was left alone');
      await t.cmd('checktime');
      assert.deepEqual(await bufferOf(t, F()), { lines: ['typed', 'B'], modified: true });
      assert.equal(fs.readFileSync(F(), 'utf8'), 'a\nB\n');
      await noProblems(t);
      await t.cmd('set nomodified');
    });

    it("an unsaved buffer with 'fileencoding=latin1': read, sha256 of the latin1 bytes, edit into the buffer", async () => {
      await reset('');
      fs.writeFileSync(F(), Buffer.from('café\n', 'latin1'));
      await t.cmd('edit ++enc=latin1 f.txt');
      assert.equal(await t.lua('return vim.bo.fileencoding'), 'latin1');
      await t.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, {'crème'})");
      const r = await toolCall(t, 'read_file', { path: 'f.txt' });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.data!.content, 'café\ncrème\n');
      assert.equal(r.data!.unsavedBuffer, true);
      assert.equal(r.data!.sha256, sha(Buffer.from('café\ncrème\n', 'latin1')));
      assert.equal(r.data!.sha256, await writtenSha(t, 'latin1.bin'));
      assert.equal(r.data!.diskSha256, sha(Buffer.from('café\n', 'latin1')));
      const w = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: r.data!.sha256, edits: [{ oldText: 'crème', newText: 'brûlée' }] });
      assert.ok(w.ok, JSON.stringify(w));
      assert.equal(w.data!.savedToDisk, false);
      assert.deepEqual(await bufferOf(t, F()), { lines: ['café', 'brûlée'], modified: true });
      assert.equal(w.data!.sha256, await writtenSha(t, 'latin1b.bin'));
      assert.deepEqual(fs.readFileSync(F()), Buffer.from('café\n', 'latin1'), 'the disk is untouched');
      const g = await toolCall(t, 'grep', { pattern: 'brûlée' });
      assert.equal((g.data!.matches as unknown[]).length, 1, JSON.stringify(g));
      await noProblems(t);
    });

    it("a 'fileformat=dos' buffer (and BOM, noeol) round-trips with matching sha256", async () => {
      await reset('one\r\ntwo\r\nthree\r\n');
      await t.cmd('edit f.txt');
      assert.equal(await t.lua('return vim.bo.fileformat'), 'dos');
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'ONE'})");
      const s = await read();
      assert.equal(s, await writtenSha(t), 'read_file hashes the bytes :w would write');
      assert.equal(s, sha('ONE\r\ntwo\r\nthree\r\n'));
      const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: s, edits: [{ oldText: 'two\n', newText: 'TWO\nand more\n' }] });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.data!.sha256, await writtenSha(t));
      assert.equal(r.data!.sha256, sha('ONE\r\nTWO\r\nand more\r\nthree\r\n'));
      // BOM and no final EOL.
      await t.lua("vim.bo.fileformat = 'unix'; vim.bo.bomb = true; vim.bo.fixeol = false; vim.bo.eol = false");
      const s2 = await read();
      assert.equal(s2, await writtenSha(t));
      const r2 = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: s2, edits: [{ oldText: 'three', newText: '3' }] });
      assert.ok(r2.ok, JSON.stringify(r2));
      assert.equal(r2.data!.sha256, await writtenSha(t));
      assert.equal(fs.readFileSync(F(), 'utf8'), 'one\r\ntwo\r\nthree\r\n', 'the disk never saw the unsaved buffer');
      await noProblems(t);
    });

    it("a clean 'fileformat=dos' buffer: disk gets CRLF bytes, the buffer stays unmodified", async () => {
      await reset('one\r\ntwo\r\n');
      await t.cmd('edit f.txt');
      const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: await read(), edits: [{ oldText: 'two', newText: 'TWO' }] });
      assert.ok(r.ok);
      assert.equal(fs.readFileSync(F(), 'utf8'), 'one\r\nTWO\r\n');
      assert.deepEqual(await bufferOf(t, F()), { lines: ['one', 'TWO'], modified: false });
      assert.equal(await writtenSha(t), r.data!.sha256);
    });

    it('a format-on-save BufWritePre autocmd does not alter the agent bytes', async () => {
      await reset('keep   spacing\n');
      await t.cmd('edit f.txt');
      await t.lua(`vim.api.nvim_create_autocmd('BufWritePre', { group = vim.api.nvim_create_augroup('fmt', {}), callback = function(ev)
        vim.api.nvim_buf_set_lines(ev.buf, 0, -1, false, { 'FORMATTED' })
      end })`);
      const r = await toolCall(t, 'write_file', { path: 'f.txt', content: 'agent   bytes\n', expectedSha256: await read() });
      assert.ok(r.ok);
      assert.equal(fs.readFileSync(F(), 'utf8'), 'agent   bytes\n');
      assert.deepEqual(await bufferOf(t, F()), { lines: ['agent   bytes'], modified: false });
      await t.lua("vim.api.nvim_del_augroup_by_name('fmt')");
    });

    it('a clean buffer in another tab, and a hidden one, are updated; their views kept', async () => {
      await reset(lines(30).join('\n') + '\n');
      fs.writeFileSync(path.join(t.cwd, 'h.txt'), 'hidden\n');
      await t.cmd('edit f.txt');
      await t.lua('vim.api.nvim_win_set_cursor(0, {25, 2})');
      await t.cmd('set hidden | edit h.txt | edit # | tabnew | edit other.txt');
      // f.txt shows in tab 1 (not current), h.txt is hidden.
      const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: await read(), edits: [{ oldText: 'line 3\n', newText: 'three\n' }] });
      assert.ok(r.ok);
      const h = await toolCall(t, 'write_file', {
        path: 'h.txt',
        content: 'changed\n',
        expectedSha256: sha('hidden\n'),
      });
      assert.ok(h.ok);
      assert.deepEqual((await bufferOf(t, F()))!.lines.slice(0, 4), ['line 1', 'line 2', 'three', 'line 4']);
      assert.equal((await bufferOf(t, F()))!.modified, false);
      assert.deepEqual(await bufferOf(t, path.join(t.cwd, 'h.txt')), { lines: ['changed'], modified: false });
      await t.cmd('tabprevious');
      assert.deepEqual(await t.lua('return vim.api.nvim_win_get_cursor(0)'), [25, 2]);
      await noProblems(t);
    });

    it('restore_file reloads a clean buffer waiting at the path; move renames so :w works', async () => {
      await reset('restored text\n');
      const d = await toolCall(t, 'delete_file', { path: 'f.txt', expectedSha256: sha('restored text\n') });
      assert.ok(d.ok);
      await t.cmd('edit f.txt'); // a new, empty buffer
      const r = await toolCall(t, 'restore_file', { trashId: d.data!.trashId });
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(await bufferOf(t, F()), { lines: ['restored text'], modified: false });
      const m = await toolCall(t, 'move_file', { from: 'f.txt', to: 'sub/g.txt', expectedSha256: sha('restored text\n') });
      assert.ok(m.ok, JSON.stringify(m));
      const g = path.join(t.cwd, 'sub', 'g.txt');
      assert.equal(await t.lua('return vim.api.nvim_buf_get_name(0)'), g);
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'saved by user'})");
      await t.cmd('write');
      assert.equal(fs.readFileSync(g, 'utf8'), 'saved by user\n');
      await noProblems(t);
    });

    it("unsaved_buffers = 'refuse' refuses writes to unsaved buffers", async () => {
      const r2 = await startNvim({ nvim: bin, initLua: "require('caboose').setup({ unsaved_buffers = 'refuse' })" });
      try {
        fs.writeFileSync(path.join(r2.cwd, 'f.txt'), 'x\n');
        await r2.cmd('edit f.txt');
        await r2.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'y'})");
        const w = await toolCall(r2, 'write_file', { path: 'f.txt', content: 'z\n', expectedSha256: sha('y\n') });
        assert.equal(w.ok, false);
        assert.equal(w.error!.kind, 'unsaved_buffer');
        assert.deepEqual(await bufferOf(r2, path.join(r2.cwd, 'f.txt')), { lines: ['y'], modified: true });
        assert.equal(fs.readFileSync(path.join(r2.cwd, 'f.txt'), 'utf8'), 'x\n');
      } finally {
        await r2.close();
      }
    });

    it("a read-only file (Neovim's 'readonly') is refused; allow_readonly_writes = true lets the agent change it", async () => {
      await reset('ro\n');
      fs.chmodSync(F(), 0o444);
      await t.cmd('edit f.txt');
      assert.equal(await t.lua('return vim.bo.readonly'), true);
      const args = { path: 'f.txt', content: 'new\n', expectedSha256: sha('ro\n') };
      const w = await toolCall(t, 'write_file', args);
      assert.equal(w.ok, false);
      assert.equal(w.error!.kind, 'permission_denied', JSON.stringify(w));
      assert.deepEqual(await bufferOf(t, F()), { lines: ['ro'], modified: false });
      assert.equal(fs.readFileSync(F(), 'utf8'), 'ro\n');
      const r2 = await startNvim({ nvim: bin, initLua: "require('caboose').setup({ allow_readonly_writes = true })" });
      try {
        const g = path.join(r2.cwd, 'f.txt');
        fs.writeFileSync(g, 'ro\n');
        fs.chmodSync(g, 0o444);
        await r2.cmd('edit f.txt');
        const ok = await toolCall(r2, 'write_file', args);
        assert.ok(ok.ok, JSON.stringify(ok));
        assert.deepEqual(await bufferOf(r2, g), { lines: ['new'], modified: false });
        assert.equal(fs.readFileSync(g, 'utf8'), 'new\n');
        assert.equal(fs.statSync(g).mode & 0o777, 0o444);
      } finally {
        await r2.close();
      }
    });
  });

  describe(`the agent edits an unsaved buffer, Neovim ${bin.version}`, () => {
    let fake: FakeOpenAI;
    let t: TestNvim;
    before(async () => {
      fake = await startFakeOpenAI();
      t = await startNvim({ nvim: bin, env: { OPENAI_BASE_URL: fake.url }, initLua: "require('caboose').setup({ mode = 'chug' })" });
    });
    after(async () => {
      await t.close();
      await fake.close();
    });

    it('read_file sees the buffer and edit_file lands in it; the disk keeps the saved text', async () => {
      const f = path.join(t.cwd, 'a.txt');
      fs.writeFileSync(f, 'one\ntwo\n');
      await t.cmd('edit a.txt');
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'ONE (unsaved)'})");
      fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
        (req) => {
          const read = firstToolResult(req);
          return { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: read.data!.sha256 as string, edits: [{ oldText: 'two', newText: 'TWO' }] } }] };
        },
        { text: 'Edited.' },
      );
      const n = fake.chatRequests.length;
      await t.cmd('Caboose change two');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('Edited.'), 'final answer');
      const reqs = fake.chatRequests.slice(n);
      const read = firstToolResult(reqs[1]);
      assert.equal(read.data!.content, 'ONE (unsaved)\ntwo\n');
      assert.equal(read.data!.unsavedBuffer, true);
      const edit = firstToolResult(reqs[2]);
      assert.equal(edit.ok, true, JSON.stringify(edit));
      assert.equal(edit.data!.savedToDisk, false);
      assert.deepEqual(await bufferOf(t, f), { lines: ['ONE (unsaved)', 'TWO'], modified: true });
      assert.equal(fs.readFileSync(f, 'utf8'), 'one\ntwo\n');
    });
  });
});
