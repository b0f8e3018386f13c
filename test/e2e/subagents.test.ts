import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';
import { lastToolResults } from '../support/chat-requests';
import type { FakeRequest } from '../support/fake-openai';

const SETUP = (approval: string) => `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = ${approval} })`;
const ALPHA = 'Write alpha.txt saying alpha';
const BETA = 'Write beta.txt saying beta';

type Pending = { id: string; tool: string; label?: string }[];

forEachNvim((bin) => {
  describe(`subagents (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chatHas = (text: string) => e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(text), text);
    const pending = () => e.t.lua<Pending>("return require('caboose.ui.approval').pending()");
    const firstUser = (r: FakeRequest) => String(r.body?.messages?.find((m) => m.role === 'user')?.content);
    const exists = (f: string) => fs.existsSync(path.join(e.t.cwd, f));

    /** The model sends two `agent` calls in one reply; each child creates its own file, then answers. */
    const scriptTwoWriters = () => {
      const child = { prompt_tokens: 500, completion_tokens: 50 };
      e.fake.scriptFor(ALPHA, { toolCalls: [{ name: 'create_file', arguments: { path: 'alpha.txt', content: 'alpha\n' } }], usage: child }, { text: 'alpha.txt written', usage: child });
      e.fake.scriptFor(BETA, { toolCalls: [{ name: 'create_file', arguments: { path: 'beta.txt', content: 'beta\n' } }], usage: child }, { text: 'beta.txt written', usage: child });
      e.fake.script(
        {
          toolCalls: [{ id: 'agent_a', name: 'agent', arguments: { task: ALPHA } }, { id: 'agent_b', name: 'agent', arguments: { task: BETA } }],
          usage: { prompt_tokens: 1000, completion_tokens: 10 },
        },
        { text: 'Both files are written.', usage: { prompt_tokens: 3000, completion_tokens: 100 } },
      );
    };
    /** Both children ask at once: two requests in the approval queue, each labelled with its subagent. */
    const waitTwoPending = async () => {
      const p = await e.t.waitFor(async () => {
        const q = await pending();
        return q.length === 2 ? q : null;
      }, 'two approvals pending at once');
      assert.deepEqual(p.map((r) => r.tool), ['create_file', 'create_file']);
      assert.deepEqual(p.map((r) => r.label).sort(), [`agent #1: ${ALPHA}`, `agent #2: ${BETA}`]);
      return p;
    };

    it('two writing subagents in parallel: both ask, the float shows them one after the other, both files are written', async () => {
      await e.start({ initLua: SETUP("{ style = 'float', grace_ms = 0 }") });
      scriptTwoWriters();
      await e.t.lua("_G.states = {}; vim.api.nvim_create_autocmd('User', { pattern = 'CabooseStateChanged', callback = function(ev) table.insert(_G.states, ev.data.state) end })");
      await e.t.cmd('Caboose make the two files');
      const [first, second] = await waitTwoPending();
      // Each child's line shows its current step while it waits.
      await chatHas('[#1] step 1: create_file alpha.txt');
      await chatHas('[#2] step 1: create_file beta.txt');
      assert.equal(exists('alpha.txt') || exists('beta.txt'), false, 'nothing is written before the approvals');
      // The main agent is running its agent calls, but what the user sees is that approvals wait.
      assert.equal((await e.t.lua<{ state: string }>("return require('caboose').state()")).state, 'pending_approval');
      assert.equal((await e.t.lua<string[]>('return _G.states')).at(-1), 'pending_approval', 'CabooseStateChanged says so');
      assert.match((await e.t.lua<string>("return require('caboose.chat').status_text()")) ?? '', /│ (pending )?approval/); // "approval" where the winbar is narrow

      const f1 = await waitApprovalFloat(e.t, 'create_file');
      const who = (label: string | undefined) => label!.split(':')[0];
      assert.ok(f1.title.startsWith(` ${who(first.label)} · Caboose: approve create_file?`), `the float names the subagent: ${f1.title}`);
      assert.equal(f1.lines[0], `asked by ${first.label}`);
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('o');
      // The second request replaces the first in the same float.
      const f2 = await e.t.waitFor(async () => {
        const f = await approvalFloat(e.t);
        return f && f.title.includes(who(second.label)) ? f : null;
      }, 'the second request in the float');
      assert.equal(f2.lines[0], `asked by ${second.label}`);
      assert.ok(f2.focused, 'the cursor is still in the float');
      assert.equal((await pending()).length, 1);
      await e.t.nvim.input('o');

      await chatHas('Both files are written.');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'alpha.txt'), 'utf8'), 'alpha\n');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'beta.txt'), 'utf8'), 'beta\n');
      assert.deepEqual(await pending(), []);
      assert.equal(await approvalFloat(e.t), null, 'the float is closed');
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle after the turn');
      const states = await e.t.lua<string[]>('return _G.states');
      assert.deepEqual(states.slice(states.indexOf('pending_approval')), ['pending_approval', 'executing_tools', 'streaming', 'idle'], states.join(' → '));
      // The parent model got both answers, in call order.
      const parentLast = e.fake.chatRequests.filter((r) => firstUser(r).includes('make the two files')).at(-1)!;
      const results = lastToolResults(parentLast);
      assert.deepEqual([...results.keys()], ['agent_a', 'agent_b']);
      assert.deepEqual([...results.values()].map((r) => r.data?.answer), ['alpha.txt written', 'beta.txt written']);
      // Each subagent's line: its tool calls, and folded details with its steps and answer.
      const chat = (await e.t.chatLines()).join('\n');
      assert.match(chat, new RegExp(`✓ agent ${ALPHA} 1 tool call\\n  ┆ task: ${ALPHA}\\n  ┆ step 1: ✓ create_file alpha\\.txt \\+1 −0\\n  ┆ answer:\\n  ┆   alpha\\.txt written`));
      assert.match(chat, new RegExp(`✓ agent ${BETA} 1 tool call\\n  ┆ task: ${BETA}\\n  ┆ step 1: ✓ create_file beta\\.txt \\+1 −0`));
      // The winbar: ↑ ↓ of the main agent's last request, Σ of the session with the subagents' requests.
      await e.t.cmd('set columns=200 | doautocmd VimResized');
      await e.t.waitFor(async () => /↑3\.0k ↓100 Σ6\.3k/.test((await e.t.lua<string>("return require('caboose.chat').status_text()")) ?? ''), 'usage with the subagents');
      // Each child's line was rewritten in place: no running line is left behind.
      assert.doesNotMatch(chat, /◌/);
      assert.equal(chat.split('\n').filter((l) => l.startsWith('✓ agent ')).length, 2);
    });

    it('a stop while both children wait for approval cancels both and withdraws both requests (inline review)', async () => {
      await e.start({ initLua: SETUP("{ style = 'inline' }") });
      scriptTwoWriters();
      await e.t.cmd('Caboose make the two files');
      const [first] = await waitTwoPending();
      // The inline review of the first request says which subagent asks.
      const winbar = await e.t.waitFor(async () => {
        const s = await e.t.lua<{ win: number } | null>("return require('caboose.ui.review').state()");
        return s ? e.t.lua<string>('return vim.wo[...].winbar', [s.win]) : null;
      }, 'the inline review');
      // The window is narrow (the chat is open): the subagent goes by its name.
      assert.ok(winbar.includes(first.label!.split(':')[0] + '%* │'), `the review winbar names the subagent: ${winbar}`);
      // However narrow the window, the bar fits it (never cut from the left by Neovim, '<'); keys outlast the name.
      for (const width of [60, 45, 40, 39, 34, 26, 20, 14]) {
        const shown = await e.t.lua<{ width: number; str: string; win: number }>(`local s = require('caboose.ui.review').state()
          vim.api.nvim_win_set_width(s.win, ${width})
          vim.api.nvim_exec_autocmds('WinResized', {})
          vim.wait(200, function() return false end)
          local w = vim.api.nvim_win_get_width(s.win)
          local r = vim.api.nvim_eval_statusline(vim.wo[s.win].winbar, { winid = s.win, use_winbar = true, maxwidth = 1000 })
          return { width = r.width, str = r.str, win = w }`);
        assert.ok(shown.width <= shown.win, `${shown.win} columns: ${JSON.stringify(shown.str)} is ${shown.width} wide`);
        assert.match(shown.str, /ga/, `${shown.win} columns: the accept key is shown: ${JSON.stringify(shown.str)}`);
        if (shown.win >= 40) assert.ok(shown.str.includes(first.label!.split(':')[0]), `${shown.win} columns: ${JSON.stringify(shown.str)}`);
      }
      const requestsBefore = e.fake.chatRequests.length;

      await e.t.cmd('CabooseStop');
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
      await e.t.waitFor(async () => (await pending()).length === 0, 'both requests withdrawn');
      assert.equal(await e.t.lua("return require('caboose.ui.review').state()"), null, 'the review is closed');
      await e.t.waitFor(async () => {
        const lines = await e.t.chatLines();
        return lines.filter((l) => /^⊘ agent Write (alpha|beta)\.txt/.test(l)).length === 2;
      }, 'both subagent lines cancelled');
      // Nothing was written and no model call followed the stop.
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(exists('alpha.txt') || exists('beta.txt'), false);
      assert.equal(e.fake.chatRequests.length, requestsBefore);
    });
  });
});
