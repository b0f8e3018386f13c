/**
 * Attacks on the clean-buffer write's no-op `:write` (lua/caboose/buffers/filetime.lua `record_written`):
 * the user's own write hooks (a format-on-save BufWritePre that changes the buffer, as conform.nvim's; a
 * BufWritePost that writes a file of its own), 'backup', 'writebackup', 'patchmode', 'undofile', a
 * FileChangedShell handler with 'autoread', an acwrite buffer with its own BufWriteCmd, a buffer opened
 * through a symlink. The agent's edit must land exactly, none of the user's hooks may run (nothing changed
 * or written behind the user's back), and the buffer ends unmodified, with the file time Neovim stored
 * being the agent's write (a later :checktime and :w are silent).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { bufferOf, toolCall } from '../support/buffers';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const body = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

/** The user's hooks: a formatter on BufWritePre that upper-cases the buffer, a BufWritePost that writes a file, counters. */
const HOOKS = `
_G.fired = {}
-- Which way the buffer recorded the file (the precondition: the no-op :write ran and answered true).
local ft = require('caboose.buffers.filetime')
_G.recorded = {}
if not _G.real_record_written then _G.real_record_written = ft.record_written end
ft.record_written = function(...) local ok = _G.real_record_written(...); table.insert(_G.recorded, ok); return ok end
local g = vim.api.nvim_create_augroup('user_hooks', {})
for _, ev in ipairs({ 'BufWritePre', 'BufWritePost', 'FileWritePre', 'FileWritePost', 'FileChangedShell', 'FileChangedShellPost', 'FileChangedRO', 'BufReadPre', 'BufReadPost', 'FileReadPost', 'BufModifiedSet' }) do
  vim.api.nvim_create_autocmd(ev, { group = g, callback = function(a)
    table.insert(_G.fired, a.event)
    if a.event == 'FileChangedShell' then vim.v.fcs_choice = '' end
  end })
end
vim.api.nvim_create_autocmd('BufWritePre', { group = g, callback = function(a)
  local l = vim.api.nvim_buf_get_lines(a.buf, 0, -1, false)
  for i, s in ipairs(l) do l[i] = s:upper() end
  vim.api.nvim_buf_set_lines(a.buf, 0, -1, false, l)
end })
vim.api.nvim_create_autocmd('BufWritePost', { group = g, callback = function(a)
  local f = io.open(vim.fn.fnamemodify(a.file, ':p') .. '.post', 'a'); f:write('post\\n'); f:close()
end })
`;

forEachNvim((bin) => {
  describe(`the clean-buffer write's no-op :write against the user's hooks and options in Neovim ${bin.version}`, () => {
    let t: TestNvim;
    const F = () => path.join(t.cwd, 'f.txt');
    before(async () => {
      t = await startNvim({ nvim: bin, initLua: "require('caboose').setup({})" });
    });
    after(async () => {
      await t.close();
    });
    const reset = async () => {
      await t.cmd('silent! tabonly | silent! only | silent! %bwipeout!');
      await t.lua("pcall(vim.api.nvim_del_augroup_by_name, 'user_hooks'); vim.o.autoread = true");
      for (const n of fs.readdirSync(t.cwd)) fs.rmSync(path.join(t.cwd, n), { recursive: true, force: true });
      fs.writeFileSync(F(), body);
      await t.cmd('messages clear');
      await t.lua("vim.v.errmsg = ''");
    };
    const read = async (p = 'f.txt') => {
      const r = await toolCall(t, 'read_file', { path: p });
      assert.ok(r.ok, JSON.stringify(r));
      return r.data!.sha256 as string;
    };
    const mtimeOf = (p: string) => {
      const st = fs.statSync(p, { bigint: true });
      return `${st.ino}:${st.size}:${st.mtimeNs}`;
    };
    const noProblems = async () => {
      const msgs = await t.lua<string>("return vim.fn.execute('messages')");
      assert.doesNotMatch(msgs, /W1[1236]|E37|E13|E\d+:|WARNING/, msgs);
      assert.equal(await t.lua('return vim.v.errmsg'), '');
    };

    it("format-on-save BufWritePre, a BufWritePost that writes, 'backup', 'writebackup', 'patchmode', 'undofile', 'autoread' with a FileChangedShell handler: the edit lands exactly, no hook runs, no file is made, the buffer is clean and :checktime silent", async () => {
      await reset();
      const bdir = path.join(t.cwd, 'backups');
      const udir = path.join(t.cwd, 'undo');
      fs.mkdirSync(bdir);
      fs.mkdirSync(udir);
      await t.cmd('edit f.txt');
      await t.lua(
        `local bdir, udir = ...
        vim.o.backup = true; vim.o.writebackup = true; vim.o.backupdir = bdir .. '//,.'; vim.o.patchmode = '.orig'
        vim.o.undodir = udir; vim.bo.undofile = true; vim.o.autoread = true
        ${HOOKS}`,
        [bdir, udir],
      );
      const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: await read(), edits: [{ oldText: 'line 7\n', newText: 'the agent was here\n' }] });
      assert.ok(r.ok, JSON.stringify(r));
      const expected = body.replace('line 7\n', 'the agent was here\n');
      assert.equal(fs.readFileSync(F(), 'utf8'), expected, 'the file holds exactly the agent\'s edit (no formatter ran on it)');
      assert.equal(r.data!.sha256, sha(expected));
      assert.deepEqual(await bufferOf(t, F()), { lines: expected.split('\n').slice(0, -1), modified: false });
      assert.deepEqual(await t.lua('return _G.recorded'), [true], 'precondition: the no-op :write recorded the file');
      const stamp = mtimeOf(F());
      // Let any scheduled work run, then check: no hook ran, nothing else was written.
      await new Promise((res) => setTimeout(res, 100));
      await t.cmd('checktime');
      await new Promise((res) => setTimeout(res, 50));
      await t.lua('return 1');
      assert.deepEqual(await t.lua('return _G.fired'), [], 'none of the user\'s hooks ran (no write, read or changed-file event)');
      assert.equal(mtimeOf(F()), stamp, 'the file is as the agent\'s write left it');
      assert.deepEqual(fs.readdirSync(t.cwd).sort(), ['backups', 'f.txt', 'undo'], 'no backup, patchmode, .post or swap-like file made beside it');
      assert.deepEqual(fs.readdirSync(bdir), [], 'no backup made');
      assert.deepEqual(fs.readdirSync(udir), [], 'no undo file written');
      assert.deepEqual(await bufferOf(t, F()), { lines: expected.split('\n').slice(0, -1), modified: false });
      await noProblems();
      // The user's own :w then runs their hooks once each, without asking ("changed since reading it").
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'user line'})");
      await t.cmd('write');
      const fired = await t.lua<string[]>('return _G.fired');
      assert.equal(fired.filter((e) => e === 'BufWritePre').length, 1, JSON.stringify(fired));
      assert.equal(fired.filter((e) => e === 'BufWritePost').length, 1, JSON.stringify(fired));
      assert.ok(!fired.includes('FileChangedShell') && !fired.includes('FileChangedRO'), JSON.stringify(fired));
      assert.equal(fs.readFileSync(F(), 'utf8'), expected.replace('line 1\n', 'user line\n').toUpperCase(), 'the user\'s formatter ran on the user\'s write');
      assert.equal(fs.readFileSync(F() + '.post', 'utf8'), 'post\n');
      await noProblems();
      await t.lua("vim.o.backup = false; vim.o.patchmode = ''; vim.bo.undofile = false; vim.o.backupdir = '.,~/.local/state/nvim/backup//'");
    });

    it("an acwrite buffer with the user's own BufWriteCmd (not a file buffer to caboose): the file is edited, the buffer is neither changed nor written, the user's BufWriteCmd does not run", async () => {
      await reset();
      await t.cmd('edit f.txt');
      await t.lua(`
        ${HOOKS}
        vim.bo.buftype = 'acwrite'
        _G.bwc = 0
        vim.api.nvim_create_autocmd('BufWriteCmd', { group = 'user_hooks', buffer = 0, callback = function() _G.bwc = _G.bwc + 1; vim.bo.modified = false end })`);
      const before = await t.lua<number>('return vim.b.changedtick');
      const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: await read(), edits: [{ oldText: 'line 3\n', newText: 'three\n' }] });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(fs.readFileSync(F(), 'utf8'), body.replace('line 3\n', 'three\n'));
      await new Promise((res) => setTimeout(res, 50));
      assert.deepEqual(await bufferOf(t, F()), { lines: body.split('\n').slice(0, -1), modified: false }, 'the acwrite buffer is its plugin\'s: left as it was');
      assert.equal(await t.lua('return vim.b.changedtick'), before);
      assert.equal(await t.lua('return _G.bwc'), 0, 'the user\'s BufWriteCmd was not run');
      assert.deepEqual(await t.lua<string[]>('return _G.fired'), [], 'no hook ran');
      assert.deepEqual(fs.readdirSync(t.cwd), ['f.txt']);
      await noProblems();
    });

    const FOREIGN = "local f = assert(io.open(vim.api.nvim_buf_get_name(b), 'w')); f:write('FOREIGN\\nwriter\\n'); f:close()";
    // In place, as many bytes, atime and mtime put back to the nanosecond (only the ctime tells).
    const SAME_SIZE = `vim.fn.system({ 'python3', '-c', 'import os,sys; p=sys.argv[1]; st=os.stat(p); fd=os.open(p, os.O_RDWR); os.pwrite(fd, b"FOREIGN", 0); os.close(fd); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))', vim.api.nvim_buf_get_name(b) })`;
    const havePython = spawnSync('python3', ['-c', 'import os'], { stdio: 'ignore' }).status === 0;
    for (const [path_, fn, setup, writer] of [
      ['the no-op :write', 'record_written', '', FOREIGN],
      ['the no-op :write, the other writer in place with the same size and its mtime put back', 'record_written', '', SAME_SIZE],
      ["the compare kept for the user's FileChangedShell", 'sync_file_time', "vim.api.nvim_create_autocmd('BufWriteCmd', { group = 'race', pattern = '*.txt', callback = function() end }); vim.api.nvim_create_autocmd('FileChangedShell', { group = 'race', callback = function() table.insert(_G.fcs, vim.v.fcs_reason); vim.v.fcs_choice = '' end })", FOREIGN],
      ['the quick time store', 'store_file_info', "vim.api.nvim_create_autocmd('BufWriteCmd', { group = 'race', pattern = '*.txt', callback = function() end })", FOREIGN],
    ] as const) {
      const w = writer;
      it(`another writer lands between the agent's write and Neovim recording it (${path_}): its bytes are never taken as read, the user's :w asks instead of overwriting them`, { skip: w === SAME_SIZE && !havePython ? 'skipped: python3 not found on PATH (the writer)' : false }, async () => {
        await reset();
        await t.cmd('edit f.txt');
        await t.lua(`_G.fcs = {}; vim.api.nvim_create_augroup('race', {}); ${setup}`);
        // The other writer: lands once, right before Neovim records the file the host wrote.
        await t.lua(
          `local ft = require('caboose.buffers.filetime')
          local orig = ft.${fn}
          _G.raced = false
          ft.${fn} = function(b, ...)
            ft.${fn} = orig
            ${w}
            _G.raced = true
            return orig(b, ...)
          end`,
        );
        const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: await read(), edits: [{ oldText: 'line 2\n', newText: 'two, longer\n' }] });
        assert.ok(r.ok, JSON.stringify(r));
        assert.equal(await t.lua('return _G.raced'), true, 'precondition: the other writer landed in the window');
        await new Promise((res) => setTimeout(res, 100));
        await t.lua("vim.o.autoread = false; vim.api.nvim_del_augroup_by_name('race')");
        await t.cmd('silent! checktime');
        await t.lua("vim.o.autoread = true; vim.api.nvim_buf_set_lines(0, -1, -1, false, {'user line'})");
        // The user's :w: Neovim must ask ("changed since reading it"), not overwrite the other writer's bytes.
        const done = t.nvim.command('write').then(() => 'written', (e: unknown) => `error: ${String(e)}`);
        const outcome = await Promise.race([done, new Promise<string>((res) => setTimeout(() => res('asked'), 1500))]);
        if (outcome === 'asked') {
          await t.nvim.input('n<CR>');
          await done;
        }
        assert.notEqual(outcome, 'written', ':w overwrote the other writer\'s bytes without asking');
        assert.ok(fs.readFileSync(F(), 'utf8').startsWith('FOREIGN'), 'the other writer\'s bytes stay');
        await t.cmd('silent! edit!');
        await t.cmd('messages clear');
        await t.lua("vim.v.errmsg = ''");
      });
    }

    it('a buffer opened through a symlink: the agent edits the real file, the link stays a link, the buffer follows, clean, :checktime and :w silent', async () => {
      await reset();
      fs.symlinkSync('f.txt', path.join(t.cwd, 'link.txt'));
      const L = path.join(t.cwd, 'link.txt');
      await t.cmd('edit link.txt');
      await t.lua(HOOKS);
      const r = await toolCall(t, 'edit_file', { path: 'f.txt', expectedSha256: await read(), edits: [{ oldText: 'line 9\n', newText: 'nine\n' }] });
      assert.ok(r.ok, JSON.stringify(r));
      const expected = body.replace('line 9\n', 'nine\n');
      assert.ok(fs.lstatSync(L).isSymbolicLink(), 'the link is still a link');
      assert.deepEqual(await t.lua('return _G.recorded'), [true], 'precondition: the no-op :write recorded the file');
      assert.equal(fs.readFileSync(F(), 'utf8'), expected);
      await t.cmd('checktime');
      const buf = await t.lua<{ lines: string[]; modified: boolean; name: string }>(
        'return { lines = vim.api.nvim_buf_get_lines(0, 0, -1, false), modified = vim.bo.modified, name = vim.api.nvim_buf_get_name(0) }',
      );
      assert.deepEqual({ lines: buf.lines, modified: buf.modified }, { lines: expected.split('\n').slice(0, -1), modified: false }, 'the buffer shows the agent\'s edit, clean');
      const fired = await t.lua<string[]>('return _G.fired');
      assert.ok(!fired.includes('BufWritePre') && !fired.includes('BufWritePost') && !fired.includes('FileChangedShell'), JSON.stringify(fired));
      await t.lua("vim.api.nvim_del_augroup_by_name('user_hooks')");
      await t.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, {'user line'})");
      await t.cmd('write');
      assert.ok(fs.lstatSync(L).isSymbolicLink(), 'the user\'s :w kept the link');
      assert.equal(fs.readFileSync(F(), 'utf8'), expected + 'user line\n');
      await noProblems();
    });
  });
});
