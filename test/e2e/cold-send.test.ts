import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

forEachNvim((bin) => {
  describe(`send() on a cold start (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const lastUser = (i: number) => String(e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);

    it("starts the host's job in the call and opens the chat after it returns; #buffer is the buffer of the call", async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(path.join(e.t.cwd, 'a.lua'), 'local a = 1\n');
      await e.t.cmd('edit a.lua');
      e.fake.script({ text: 'cold reply' });
      // One Lua chunk: send(), what is there when it returns, then another buffer in the window.
      const at = await e.t.lua<{ sent: boolean; running: boolean; wins: number; chat_loaded: boolean }>(`
        local sent = require('caboose').send('what is in #buffer')
        local r = {
          sent = sent,
          running = require('caboose.rpc').is_running(),
          wins = #vim.api.nvim_tabpage_list_wins(0),
          chat_loaded = package.loaded['caboose.chat'] ~= nil,
        }
        vim.cmd('enew')
        return r`);
      // The host's process starts first (it is the path to the first token); the chat (its modules,
      // buffers and windows) and the message's expansion come in later turns of the main loop.
      assert.deepEqual(at, { sent: true, running: true, wins: 1, chat_loaded: false });
      await e.fake.waitForRequest(1);
      // #buffer is the buffer current when send() was called, not the one current when it was expanded.
      assert.match(lastUser(0), /^what is in #buffer/);
      assert.match(lastUser(0), /File a\.lua \(1 line, lua, sha256 [0-9a-f]{64}\):\n```lua\nlocal a = 1\n```/);
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('cold reply'), 'the reply in the chat');
      assert.equal(await e.t.lua<number>('return #vim.api.nvim_tabpage_list_wins(0)'), 3, 'the transcript and the message area opened');
      assert.equal(await e.t.lua<string>('return vim.fn.bufname()'), '', 'focus stays where it was');
    });

    it('with the host started ahead (as while :Caboose is typed), the first send() also opens the chat after it returns', async () => {
      await e.start({ initLua: SETUP });
      await e.t.lua("require('caboose').prestart()");
      assert.equal(await e.t.lua<boolean>("return require('caboose.rpc').is_running()"), true);
      e.fake.script({ text: 'prestarted reply' });
      const at = await e.t.lua<{ wins: number; chat_loaded: boolean }>(`
        require('caboose').send('hello')
        return { wins = #vim.api.nvim_tabpage_list_wins(0), chat_loaded = package.loaded['caboose.chat'] ~= nil }`);
      assert.deepEqual(at, { wins: 1, chat_loaded: false });
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('prestarted reply'), 'the reply in the chat');
      assert.equal(await e.t.lua<number>('return #vim.api.nvim_tabpage_list_wins(0)'), 3);
    });

    it('a warm send() opens the chat in the call', async () => {
      await e.start({ initLua: SETUP });
      e.fake.script({ text: 'first' }, { text: 'second' });
      await e.t.lua("require('caboose').send('one')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('first'), 'the first reply');
      await e.t.cmd('only');
      const wins = await e.t.lua<number>("require('caboose').send('two') return #vim.api.nvim_tabpage_list_wins(0)");
      assert.equal(wins, 3);
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('second'), 'the second reply');
    });
  });

  describe(`pieces of work in later turns (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('runs one piece a turn, in the order queued, whatever chain queued it; a failing piece does not stop the rest', async () => {
      await e.start({ initLua: SETUP });
      // Two chains queue at once (as the chat's opening and its markdown loading do): what the first piece
      // schedules (a typed key, an RPC request would be served there) runs before the second piece.
      await e.t.lua(`
        local S = require('caboose.state')
        _G.turn_order = {}
        S.next_turn(function()
          table.insert(_G.turn_order, 'a')
          vim.schedule(function() table.insert(_G.turn_order, 'between') end)
        end)
        S.next_turn(function() table.insert(_G.turn_order, 'b') end)
        S.next_turn(function() table.insert(_G.turn_order, 'fails'); error('piece failed') end)
        S.next_turn(function() table.insert(_G.turn_order, 'c') end)`);
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return _G.turn_order')).length === 5, 'every piece run');
      assert.deepEqual(await e.t.lua<string[]>('return _G.turn_order'), ['a', 'between', 'b', 'fails', 'c']);
    });

    it("prestart() (a :Caboose command being typed) also loads the chat's markdown queries, with no chat built; the chat then opens highlighted", async () => {
      await e.start({ initLua: SETUP });
      await e.t.lua(`
        _G.asked = {}
        local get = vim.treesitter.query.get
        vim.treesitter.query.get = function(l, n)
          table.insert(_G.asked, l .. ' ' .. n)
          return get(l, n)
        end
        require('caboose').prestart()`);
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return _G.asked')).includes('markdown_inline injections'), 'the queries loaded ahead');
      assert.deepEqual(await e.t.lua<string[]>('return _G.asked'), ['markdown highlights', 'markdown_inline highlights', 'markdown injections', 'markdown_inline injections']);
      const chatBufs = await e.t.lua<number>('local n = 0; for _, b in ipairs(vim.api.nvim_list_bufs()) do if vim.b[b].caboose_chat or vim.b[b].caboose_input then n = n + 1 end end; return n');
      assert.equal(chatBufs, 0, 'no chat built');
      e.fake.script({ text: 'after prestart' });
      await e.t.lua("require('caboose').send('hello')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('after prestart'), 'the reply in the chat');
      await e.t.waitFor(
        () => e.t.lua<boolean>("local b = require('caboose.chat').buf(); return vim.bo[b].filetype == 'markdown' and vim.treesitter.highlighter.active[b] ~= nil"),
        'the transcript highlighted',
      );
    });
  });

  describe(`the chat's markdown loading (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('runs the FileType autocommands without loading the regex syntax; both buffers end with treesitter highlighting', async () => {
      await e.start({ initLua: SETUP });
      await e.t.lua(`
        _G.syntax_events, _G.filetype_events = {}, {}
        vim.api.nvim_create_autocmd('Syntax', { callback = function(a) table.insert(_G.syntax_events, a.match) end })
        vim.api.nvim_create_autocmd('FileType', { pattern = 'markdown', callback = function(a) table.insert(_G.filetype_events, a.buf) end })
        require('caboose').open_chat()`);
      const state = () =>
        e.t.lua<{ ft: string[]; syntax: string[]; current: boolean[]; ts: boolean[] }>(`
          local bufs = { require('caboose.chat').buf(), require('caboose.chat').input_buf() }
          local r = { ft = {}, syntax = {}, current = {}, ts = {} }
          for _, b in ipairs(bufs) do
            table.insert(r.ft, vim.bo[b].filetype)
            table.insert(r.syntax, vim.bo[b].syntax)
            table.insert(r.current, vim.b[b].current_syntax ~= nil)
            table.insert(r.ts, vim.treesitter.highlighter.active[b] ~= nil)
          end
          return r`);
      await e.t.waitFor(async () => (await state()).ts.every(Boolean), 'treesitter highlighting in both buffers');
      assert.deepEqual(await state(), { ft: ['markdown', 'markdown'], syntax: ['', ''], current: [false, false], ts: [true, true] });
      assert.equal((await e.t.lua<number[]>('return _G.filetype_events')).length, 2, "the user's FileType autocommand ran for both");
      assert.deepEqual((await e.t.lua<string[]>('return _G.syntax_events')).filter((m) => m !== ''), [], 'no regex syntax was loaded');
    });

    it('keeps the highlight queries it loaded: the highlighter does not compile them again', async () => {
      await e.start({ initLua: SETUP });
      await e.t.lua("require('caboose').open_chat()");
      await e.t.waitFor(() => e.t.lua<boolean>("return vim.treesitter.highlighter.active[require('caboose.chat').buf()] ~= nil"), 'highlighting');
      // A query compiled again is a new object: the same one after a full collection means it was kept.
      const same = await e.t.lua<boolean>(`
        local q = vim.treesitter.query.get('markdown', 'highlights')
        local qi = vim.treesitter.query.get('markdown_inline', 'highlights')
        collectgarbage('collect')
        collectgarbage('collect')
        return q == vim.treesitter.query.get('markdown', 'highlights') and qi == vim.treesitter.query.get('markdown_inline', 'highlights')`);
      assert.equal(same, true);
    });
  });
});
