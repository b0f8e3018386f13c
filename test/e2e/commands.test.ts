import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { lastToolResults } from '../support/chat-requests';

const STUB_UI = `
  _G.ui_calls = {}
  vim.ui.select = function(items, opts, cb)
    table.insert(_G.ui_calls, { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) })
    cb(items[1], 1)
  end
  vim.ui.input = function(opts, cb) table.insert(_G.ui_calls, { prompt = opts.prompt }) cb('typed prompt') end`;

forEachNvim((bin) => {
  describe(`user commands (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const start = () => e.start({ initLua: `require('caboose').setup({ mode = 'chug' })${STUB_UI}` });
    const lastUser = (i: number) => e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content as string;

    it(':[range]Caboose sends the selected lines with file and line numbers', async () => {
      await start();
      fs.writeFileSync(path.join(e.t.cwd, 'm.lua'), 'local a = 1\nlocal b = 2\nlocal c = 3\n');
      await e.t.cmd('edit m.lua');
      e.fake.script({ text: 'explained' });
      await e.t.cmd('2,3Caboose explain this');
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.match(msg, /^explain this/);
      assert.match(msg, /Selection from m\.lua \(lines 2-3, lua\)/);
      assert.match(msg, /```lua\nlocal b = 2\nlocal c = 3\n```/);
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('explained'), 'answer');
    });

    it(':Caboose without a prompt asks with vim.ui.input; :CabooseChat opens the chat', async () => {
      await start();
      e.fake.script({ text: 'answered' });
      await e.t.cmd('Caboose');
      await e.fake.waitForRequest(1);
      assert.equal(lastUser(0), 'typed prompt');
      await e.t.cmd('only');
      assert.equal(await e.t.lua("return #vim.fn.win_findbuf(require('caboose.chat').buf())"), 0);
      await e.t.cmd('CabooseChat');
      assert.equal(await e.t.lua("return #vim.fn.win_findbuf(require('caboose.chat').buf())"), 1);
    });

    it(':CabooseNew starts a new conversation in a new chat buffer', async () => {
      await start();
      e.fake.script({ text: 'one' }, { text: 'two' });
      await e.t.cmd('Caboose first');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('one'), 'first');
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
      const s1 = await e.t.lua<string>("return require('caboose').state().session");
      const b1 = await e.t.lua<string>("return vim.api.nvim_buf_get_name(require('caboose.chat').buf())");
      await e.t.cmd('CabooseMode plan');
      await e.t.cmd('CabooseNew');
      await e.t.cmd('Caboose second');
      await e.fake.waitForRequest(2);
      const users = e.fake.chatRequests[1].body!.messages!.filter((m) => m.role === 'user').map((m) => m.content);
      assert.deepEqual(users, ['second'], 'the new conversation does not carry the old one');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('two'), 'second');
      const s2 = await e.t.lua<string>("return require('caboose').state().session");
      const b2 = await e.t.lua<string>("return vim.api.nvim_buf_get_name(require('caboose.chat').buf())");
      assert.notEqual(s2, s1);
      assert.equal(await e.t.lua("return require('caboose').state().mode"), 'plan', 'the new conversation keeps the mode');
      assert.match(String(e.fake.chatRequests[1].body!.messages![0].content), /plan mode/, 'and the host uses it');
      assert.notEqual(b2, b1);
      assert.doesNotMatch((await e.t.chatLines()).join('\n'), /first/);
    });

    it(':CabooseNew after :cd works in the new directory', async () => {
      await start();
      fs.mkdirSync(path.join(e.t.cwd, 'sub'));
      fs.writeFileSync(path.join(e.t.cwd, 'sub', 'inner.txt'), 'inside\n');
      e.fake.script({ text: 'one' }, { toolCalls: [{ name: 'read_file', arguments: { path: 'inner.txt' } }] }, { text: 'read it' });
      await e.t.cmd('Caboose first');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('one'), 'first');
      await e.t.cmd('cd sub');
      await e.t.cmd('CabooseNew');
      await e.t.cmd('Caboose read inner.txt');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('read it'), 'answer');
      const res = lastToolResults(e.fake.chatRequests[2]);
      assert.equal([...res.values()][0].ok, true, JSON.stringify([...res.values()]));
    });

    it(':CabooseRestore puts back a file the agent deleted, and never overwrites', async () => {
      await start();
      fs.writeFileSync(path.join(e.t.cwd, 'gone.txt'), 'precious\n');
      const expectedSha256 = createHash('sha256').update('precious\n').digest('hex');
      e.fake.script({ toolCalls: [{ name: 'delete_file', arguments: { path: 'gone.txt', expectedSha256 } }] }, { text: 'deleted it' });
      await e.t.cmd('Caboose delete gone.txt');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('deleted it'), 'answer');
      assert.equal(fs.existsSync(path.join(e.t.cwd, 'gone.txt')), false);
      // The chat line says what happened (not a diff count of +0 −0) and how to undo it.
      assert.match((await e.t.chatLines()).join('\n'), /✓ delete_file gone\.txt deleted \(1 line\) · :CabooseRestore brings it back/);
      await e.t.cmd('CabooseRestore');
      const restored = path.join(e.t.cwd, 'gone.txt');
      await e.t.waitFor(async () => fs.existsSync(restored), 'the restored file');
      assert.equal(fs.readFileSync(restored, 'utf8'), 'precious\n');
      const calls = await e.t.lua<{ prompt: string; items: string[] }[]>('return _G.ui_calls');
      // When, in local time like :CabooseCheckpoints (not the stored UTC ISO string).
      const local = await e.t.lua<string>("return os.date('%Y-%m-%d %H:')");
      assert.match(calls.at(-1)!.items[0], new RegExp(`^gone\\.txt {2}\\(deleted ${local}\\d\\d\\)$`));
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => /restored gone\.txt/.test(n.msg)), 'restored notice');
    });

    it(':CabooseRestore with an empty trash says so', async () => {
      await start();
      await e.t.cmd('CabooseRestore');
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => /trash is empty/.test(n.msg)), 'trash is empty notice');
    });

    it(':CabooseMode without argument shows the mode and the standing grants; a bad mode is an error', async () => {
      await start();
      await e.t.cmd('CabooseMode');
      await e.t.cmd('CabooseMode yolo');
      const notes = await e.t.notifications();
      assert.ok(notes.some((n) => n.msg === '(caboose) mode: chug; no tool is always allowed'), JSON.stringify(notes));
      assert.ok(notes.some((n) => /unknown mode yolo/.test(n.msg) && n.level === 4));
    });
  });
});
