import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { firstToolResult } from '../support/chat-requests';

const SEED_TOOLS = [
  'read_file', 'write_file', 'edit_file', 'glob', 'grep', 'bash', 'list_directory', 'fetch', 'web_search',
  'todo_write', 'todo_read', 'explore', 'agent', 'ask_user', 'search_files', 'create_file', 'delete_file',
  'restore_file', 'move_file', 'apply_patch',
  // issue 10: reads back outputs and conversation moved out of the prompt
  'recall',
  // issue 12: the editor's diagnostics
  'diagnostics',
];

forEachNvim((bin) => {
  describe(`tool set, ask_user and todos (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    const start = (extra = '') =>
      e.start({
        initLua: `require('caboose').setup({ mode = 'create' ${extra} })
          _G.ui_calls = {}
          vim.ui.input = function(opts, cb) table.insert(_G.ui_calls, { kind = 'input', prompt = opts.prompt }) cb('blue') end
          vim.ui.select = function(items, opts, cb) table.insert(_G.ui_calls, { kind = 'select', prompt = opts.prompt, items = items }) cb(items[2], 2) end`,
      });

    it('offers every seed tool except the overlapping twin; web_search only when configured; hidden tools still answer', async () => {
      await start();
      fs.writeFileSync(path.join(e.t.cwd, 'f.txt'), 'needle\n');
      e.fake.script({ toolCalls: [{ name: 'search_files', arguments: { mode: 'text', query: 'needle' } }] }, { text: 'found' });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose find needle');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('found'), 'answer');
      const offered = (e.fake.chatRequests[n].body?.tools ?? []).map((x) => x.function.name).sort();
      const expected = SEED_TOOLS.filter((x) => !['search_files', 'web_search'].includes(x)).sort();
      assert.deepEqual(offered, expected);
      for (const tool of e.fake.chatRequests[n].body?.tools ?? []) {
        assert.equal(tool.type, 'function');
        assert.equal((tool.function.parameters as { type: string }).type, 'object', `${tool.function.name} has a JSON schema`);
      }
      const res = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(res.ok, true, 'search_files is callable by name');
      assert.match(JSON.stringify(res.data), /f\.txt/);
    });

    it('web_search is offered when a SearXNG URL is configured', async () => {
      await start(", web_search = { searxng_url = 'http://127.0.0.1:9' }");
      e.fake.script({ text: 'hi' });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose hi');
      await e.fake.waitForRequest(n + 1);
      const offered = (e.fake.chatRequests[n].body?.tools ?? []).map((x) => x.function.name);
      assert.ok(offered.includes('web_search'));
    });

    it('ask_user asks with vim.ui.input / vim.ui.select and returns the answer to the model', async () => {
      await start();
      e.fake.script(
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'Favourite colour?' } }] },
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which file?', choices: ['a.ts', 'b.ts', 'c.ts'] } }] },
        { text: 'thanks' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose ask me');
      await e.t.cmd('CabooseChat'); // the question opens in the chat
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('thanks'), 'answer');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[n + 1]).data, { answer: 'blue' });
      assert.equal(firstToolResult(e.fake.chatRequests[n + 2]).data!.answer, 'b.ts');
      const calls = await e.t.lua<{ kind: string; prompt: string; items?: string[] }[]>('return _G.ui_calls');
      assert.equal(calls[0].kind, 'input');
      assert.match(calls[0].prompt, /Favourite colour\?/);
      assert.equal(calls[1].kind, 'select');
      assert.deepEqual(calls[1].items, ['a.ts', 'b.ts', 'c.ts', 'Other answer…'], 'the choices, then a free answer');
    });

    it('ask_user never takes the keys the user is typing: it waits for the chat or :CabooseApproval', async () => {
      await start();
      await e.t.cmd('edit notes.txt');
      await e.t.nvim.input('i');
      await e.t.waitFor(async () => (await e.t.lua('return vim.fn.mode()')) === 'i', 'insert mode');
      e.fake.script({ toolCalls: [{ name: 'ask_user', arguments: { question: 'Favourite colour?' } }] }, { text: 'thanks' });
      await e.t.lua("require('caboose').send('ask me')");
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => n.msg.startsWith('(caboose) the agent asks: Favour') && n.msg.endsWith('(answer in the chat, or :CabooseApproval)')), 'told');
      await e.t.nvim.input('typing on');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(await e.t.lua('return _G.ui_calls'), [], 'not asked while typing');
      assert.deepEqual(await e.t.lua('return vim.api.nvim_buf_get_lines(0, 0, -1, false)'), ['typing on'], 'the keys went to the buffer');
      await e.t.nvim.input('<Esc>');
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(await e.t.lua('return _G.ui_calls'), [], 'not asked in the user\'s buffer after Insert mode either');
      await e.t.cmd('CabooseApproval');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('thanks'), 'answered on :CabooseApproval');
      const calls = await e.t.lua<{ kind: string; prompt: string }[]>('return _G.ui_calls');
      assert.equal(calls.length, 1);
      assert.match(calls[0].prompt, /Favourite colour\?/);
    });

    it('ask_user with choices: "Other answer…" asks for a free-text answer in the same prompt', async () => {
      await start();
      // The user picks the last item, then types an answer of their own.
      await e.t.lua(`
        vim.ui.select = function(items, opts, cb) table.insert(_G.ui_calls, { kind = 'select', prompt = opts.prompt, items = items }) cb(items[#items], #items) end
        vim.ui.input = function(opts, cb) table.insert(_G.ui_calls, { kind = 'input', prompt = opts.prompt }) cb('d.ts, actually') end`);
      e.fake.script(
        { toolCalls: [{ name: 'ask_user', arguments: { question: 'Which file?', choices: ['a.ts', 'b.ts'] } }] },
        { text: 'noted' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose ask me');
      await e.t.cmd('CabooseChat'); // the question opens in the chat
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('noted'), 'answer');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[n + 1]).data, { answer: 'd.ts, actually' });
      const calls = await e.t.lua<{ kind: string; prompt: string; items?: string[] }[]>('return _G.ui_calls');
      assert.deepEqual(calls, [
        { kind: 'select', prompt: 'Which file?', items: ['a.ts', 'b.ts', 'Other answer…'] },
        { kind: 'input', prompt: 'Which file? ' },
      ]);
    });

    it('ask_user: dismissing the choices answers nothing (cancelled)', async () => {
      await start();
      await e.t.lua("vim.ui.select = function(items, opts, cb) table.insert(_G.ui_calls, { kind = 'select' }) cb(nil, nil) end");
      e.fake.script({ toolCalls: [{ name: 'ask_user', arguments: { question: 'Which?', choices: ['a', 'b'] } }] }, { text: 'assumed a' });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose ask');
      await e.t.cmd('CabooseChat');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('assumed a'), 'answer');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[n + 1]).data, { answer: null, cancelled: true });
      assert.deepEqual(await e.t.lua('return _G.ui_calls'), [{ kind: 'select' }], 'no free-text prompt after a dismissal');
    });

    it('todo_write shows the task list in the chat; todo_read returns it', async () => {
      await start();
      e.fake.script(
        { toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'write tests', status: 'in_progress' }, { content: 'ship', status: 'pending' }] } }] },
        { toolCalls: [{ name: 'todo_read', arguments: {} }] },
        { text: 'planned' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose plan it');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('planned'), 'answer');
      const chat = (await e.t.chatLines()).join('\n');
      assert.match(chat, /- \[~\] write tests\n- \[ \] ship/);
      const read = firstToolResult(e.fake.chatRequests[n + 2]);
      assert.match(JSON.stringify(read.data), /write tests/);
    });

    it('bash `seq 1 100000`: the model gets one cap and one notice, and the last line (issue 17, defect 3)', async () => {
      await start(", mode = 'chug'");
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'seq 1 100000' } }] }, { text: 'counted' });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose count');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('counted'), 'answer');
      const output = String(firstToolResult(e.fake.chatRequests[n + 1]).data?.output);
      assert.equal(output.match(/\[output truncated/g)?.length, 1, 'one notice');
      assert.ok(output.endsWith('\n99999\n100000\n'), output.slice(-60));
      assert.ok(output.startsWith('1\n2\n3\n'));
    });

    it('after bash changes files, clean buffers show the new text; unsaved ones are left alone, no prompts', async () => {
      await start(", mode = 'chug'");
      fs.writeFileSync(path.join(e.t.cwd, 'clean.txt'), 'one\n');
      fs.writeFileSync(path.join(e.t.cwd, 'dirty.txt'), 'uno\n');
      await e.t.cmd('edit dirty.txt');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'user typing'})");
      await e.t.cmd('edit clean.txt');
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo two >> clean.txt; echo dos >> dirty.txt' } }] }, { text: 'ran' });
      await e.t.cmd('Caboose run it');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('ran'), 'answer');
      const lines = (name: string) => e.t.lua<string[]>(`return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)`, [name]);
      await e.t.waitFor(async () => (await lines('clean.txt')).join('|') === 'one|two', 'clean buffer re-read');
      assert.deepEqual(await lines('dirty.txt'), ['user typing']);
      assert.equal((((await e.t.nvim.mode) as { blocking: boolean }).blocking), false);
      assert.doesNotMatch(await e.t.lua<string>("return vim.fn.execute('messages')"), /W1[12]|E\d+:/);
    });
  });
});
