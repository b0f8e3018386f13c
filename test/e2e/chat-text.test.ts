/** Issue 17, defects 1 and 2: any tool result, error or notice text renders (newlines, CR, control
 * characters, very long lines) and a tool line never keeps spinning; notices never cut a streamed reply. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

type State = { state: string };
const SETUP = (extra = '') => `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } ${extra} })`;

forEachNvim((bin) => {
  describe(`chat text (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const waitState = (s: string) => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === s, `state ${s}`);
    const logErrors = () => (fs.existsSync(e.t.logFile) ? fs.readFileSync(e.t.logFile, 'utf8') : '');
    const messages = () => e.t.lua<string>("return vim.fn.execute('messages')");

    it('a failed apply_patch (context not in the file) ends its line with ✗ and its error, in chug mode', async () => {
      await e.start({ initLua: SETUP() });
      fs.writeFileSync(path.join(e.t.cwd, 'f.txt'), 'alpha\nbeta\n');
      e.fake.script(
        { toolCalls: [{ name: 'apply_patch', arguments: { patch: '*** Begin Patch\n*** Update File: f.txt\n@@\n not here\n-beta\n+BETA\n*** End Patch\n' } }] },
        { text: 'after the patch' },
      );
      await e.t.cmd('Caboose patch it');
      await e.t.waitFor(async () => /after the patch/.test(await chat()), 'the reply after the failed patch');
      await waitState('idle');
      const lines = await e.t.chatLines();
      const line = lines.find((l) => l.includes('apply_patch'));
      assert.ok(line, 'the tool line is there');
      assert.match(line!, /^✗ apply_patch f\.txt \S/, 'the line ends with ✗ and the error');
      assert.ok(!lines.some((l) => l.startsWith('◌')), 'no line keeps spinning');
      assert.doesNotMatch(await messages(), /error handling|contains newlines/);
      assert.doesNotMatch(logErrors(), /error handling/);
    });

    it('results with newlines, CR, control characters and very long lines render on every tool', async () => {
      await e.start({ initLua: SETUP() });
      await e.t.cmd('CabooseChat');
      const long = 'x'.repeat(20000);
      const nasty = [`line one\nline two\r\nthree\rfour`, `bell\x07 esc\x1b[31m nul\x00 del\x7f tab\t end`, long];
      const tools = await e.t.lua<string[]>("return vim.tbl_keys(require('caboose.rpc').methods)").then(() =>
        ['read_file', 'write_file', 'edit_file', 'apply_patch', 'delete_file', 'move_file', 'restore_file', 'create_file', 'list_directory', 'glob', 'grep', 'search_files', 'bash', 'fetch', 'web_search', 'ask_user', 'todo_write', 'todo_read', 'diagnostics', 'recall', 'agent', 'explore', 'srv__tool'],
      );
      const failures = await e.t.lua<string[]>(
        `local chat = require('caboose.chat')
         local tools, nasty = ...
         local failed = {}
         for i, name in ipairs(tools) do
           for j, text in ipairs(nasty) do
             local id = name .. '_' .. j
             local ok, err = pcall(chat.tool_call, { id = id, name = name, summary = name .. ' ' .. text })
             if not ok then table.insert(failed, 'call ' .. id .. ': ' .. tostring(err)) end
             ok, err = pcall(chat.tool_progress, { id = id, summary = text })
             if not ok then table.insert(failed, 'progress ' .. id .. ': ' .. tostring(err)) end
             ok, err = pcall(chat.tool_result, { id = id, name = name, ok = j ~= 1, status = j == 1 and 'error' or 'ok', summary = text, details = { text, 'second ' .. text } })
             if not ok then table.insert(failed, 'result ' .. id .. ': ' .. tostring(err)) end
           end
         end
         for _, text in ipairs(nasty) do
           local ok, err = pcall(chat.notice, text)
           if not ok then table.insert(failed, 'notice: ' .. tostring(err)) end
           ok, err = pcall(chat.error, text)
           if not ok then table.insert(failed, 'error: ' .. tostring(err)) end
         end
         return failed`,
        [tools, nasty],
      );
      assert.deepEqual(failures, []);
      const lines = await e.t.chatLines();
      assert.ok(!lines.some((l) => l.startsWith('◌')), 'no line keeps spinning');
      for (const name of tools) {
        for (const [j, icon] of [[1, '✗'], [2, '✓'], [3, '✓']] as const) {
          const row = lines.filter((l) => l.startsWith(`${icon} ${name} `));
          assert.ok(row.length >= 1, `${name} #${j} has its ${icon} line`);
        }
      }
      // Nothing raw reaches the screen: no control characters, no line longer than a readable cap.
      // eslint-disable-next-line no-control-regex
      assert.ok(!lines.some((l) => /[\x00-\x08\x0b-\x1f\x7f]/.test(l)), 'control characters are shown as text');
      assert.ok(lines.every((l) => l.length < 2000), 'very long lines are cut, saying so');
      assert.ok(lines.some((l) => /more characters/.test(l)), 'a cut line says what was left out');
    });

    it('a reopened session shows the same readable lines (no error, no spinner)', async () => {
      await e.start({ initLua: SETUP() });
      const failures = await e.t.lua<string>(
        `local ok, err = pcall(require('caboose.chat').load, {
           { t = 'user', text = 'hi\\r\\nthere' },
           { t = 'tool', status = 'error', text = 'apply_patch f.txt', summary = 'patch_failed: a\\nb\\rc', details = { 'x\\0y\\r', string.rep('z', 9000) } },
           { t = 'notice', text = 'n\\r\\x1b[1m' },
           { t = 'error', text = 'e\\r\\nf' },
         })
         return ok and '' or tostring(err)`,
      );
      assert.equal(failures, '');
      const lines = await e.t.chatLines();
      assert.ok(lines.some((l) => /^✗ apply_patch f\.txt patch_failed: a/.test(l)));
      assert.ok(lines.includes('  ┆ x^@y'), 'NUL shown as ^@, the CR ending a line (CRLF output) dropped');
      // eslint-disable-next-line no-control-regex
      assert.ok(!lines.some((l) => /[\x00-\x08\x0b-\x1f\x7f]/.test(l)));
      assert.ok(lines.every((l) => l.length < 2000));
    });

    it('a notice while a reply streams never cuts into the reply: it goes after it', async () => {
      await e.start({ initLua: SETUP(', max_queue = 1') });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      e.fake.script({ text: 'the reply is for scrolling.', chunks: ['the reply is for scrollin', 'g.'], gate }, { text: 'second' });
      await e.t.cmd('Caboose m1');
      await e.t.waitFor(async () => /for scrollin/.test(await chat()), 'the first chunk');
      await e.t.cmd('Caboose m2');
      await e.t.waitFor(async () => (await e.t.lua<unknown[]>("return require('caboose.chat').queue()")).length === 1, 'queued');
      await e.t.cmd('Caboose m3');
      await e.t.waitFor(async () => /already queued/.test(await chat()) || /already queued/.test(JSON.stringify(await e.t.notifications())), 'the queue-full notice');
      release();
      await e.t.waitFor(async () => /second/.test(await chat()), 'the second reply');
      await waitState('idle');
      const text = await chat();
      assert.match(text, /the reply is for scrolling\./, 'the reply is in one piece');
      assert.match(text, /scrolling\.\n\n> [^\n]*already queued[^\n]*\n\n## You\n\nm2/, 'the notice comes after the reply it would have cut');
    });
  });
});
