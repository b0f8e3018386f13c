/**
 * Issue 21 end to end: choosing the model mid-chat, switching between two providers, a reasoning stream
 * shown as a folded thinking block, and an error inside a 200 stream shown once and not retried.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { forEachNvim, REPO_ROOT } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { startFakeOpenAI } from '../support/fake-openai';

type State = { state: string };
const fixture = (name: string): string => readFileSync(path.join(REPO_ROOT, 'test', 'fixtures', 'streams', name), 'utf8');

forEachNvim((bin) => {
  describe(`models and real streams (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const waitChat = (re: RegExp, what = String(re)) => e.t.waitFor(async () => re.test(await chat()), what);
    const waitState = (s: string) => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === s, `state ${s}`);
    // The whole status line (a narrow chat window leaves the model out of what it shows).
    const winbar = () => e.t.lua<string>("return require('caboose.chat').status_line(1000) or ''");
    const waitWinbar = async (re: RegExp) => {
      await e.t.waitFor(async () => re.test(await winbar()), `winbar ${re}`).catch(async (err: unknown) => {
        throw new Error(`${String(err)}; winbar: ${await winbar()}; notifications: ${JSON.stringify(await e.t.notifications())}; chat: ${await chat()}`);
      });
    };
    // vim.ui.select answered by the test: the item whose label is `label` (records what was offered).
    const answerSelect = (label: string) =>
      e.t.lua(`
        local want = ...
        _G.offered = nil
        vim.ui.select = function(items, opts, on_choice)
          _G.offered = vim.tbl_map(function(i) return opts.format_item(i) end, items)
          for _, i in ipairs(items) do
            if i.label == want then return on_choice(i) end
          end
          on_choice(nil)
        end`, [label]);

    it('the picker mid-chat changes the next request’s model and the winbar', async () => {
      await e.start({
        initLua: `require('caboose').setup({ mode = 'chug', provider = 'fake', providers = { fake = { base_url = '${e.fake.url}', api_key = 'k', model = 'model-a', models = { ['model-b'] = { context_window = 64000, temperature = 0.3 } }, max_retries = 0 } } })`,
      });
      e.fake.script({ text: 'first answer' }, { text: 'second answer' });
      await e.t.cmd('Caboose one');
      await waitChat(/first answer/);
      await waitState('idle');
      assert.equal(e.fake.chatRequests[0].body?.model, 'model-a');
      await waitWinbar(/fake\/model-a/);
      await answerSelect('fake/model-b');
      await e.t.lua("require('caboose').pick_model()");
      await waitWinbar(/fake\/model-b/);
      const offered = await e.t.lua<string[]>('return _G.offered');
      assert.ok(offered.some((l) => /fake\/model-b\s+64k ctx/.test(l)), `context window shown: ${offered.join(' | ')}`);
      assert.ok(offered.some((l) => /fake-model/.test(l)), 'the server’s /models are listed too');
      await e.t.cmd('Caboose two');
      await waitChat(/second answer/);
      const second = e.fake.chatRequests[1].body;
      assert.equal(second?.model, 'model-b', 'the next request uses the chosen model');
      assert.equal(second?.temperature, 0.3, 'its per-model option goes with it');
      assert.equal(e.fake.chatRequests[0].body?.temperature, undefined, 'and only to it');
    });

    it('two providers: switching changes the base URL and the key of the next request', async () => {
      const other = await startFakeOpenAI({ models: ['b-model'] });
      try {
        await e.start({
          initLua: `require('caboose').setup({ mode = 'chug', provider = 'a', providers = {
            a = { base_url = '${e.fake.url}', api_key = 'key-of-a', model = 'a-model', max_retries = 0 },
            b = { base_url = '${other.url}', api_key_env = 'B_KEY', model = 'b-model', max_retries = 0 },
          } })`,
          env: { B_KEY: 'key-of-b' },
        });
        e.fake.script({ text: 'from a' });
        other.script({ text: 'from b' });
        await e.t.cmd('Caboose hello a');
        await waitChat(/from a/);
        await waitState('idle');
        assert.equal(e.fake.chatRequests[0].headers.authorization, 'Bearer key-of-a');
        // The other provider's key (not chosen yet) does not reach the shell's environment either.
        const env = await e.t.lua<{ ok: boolean; data: { output: string } }>("return require('caboose').tool_call('bash', { command = 'env' })");
        assert.equal(env.ok, true);
        assert.doesNotMatch(env.data.output, /key-of-b|B_KEY/);
        const completions = await e.t.lua<string[]>("return vim.fn.getcompletion('CabooseModel ', 'cmdline')");
        assert.ok(completions.includes('b/b-model') && completions.includes('check'), completions.join(' '));
        await e.t.cmd('CabooseModel b/b-model');
        await waitWinbar(/b\/b-model/);
        await e.t.cmd('Caboose hello b');
        await waitChat(/from b/);
        assert.equal(e.fake.chatRequests.length, 1, 'nothing more went to a');
        assert.equal(other.chatRequests.length, 1);
        assert.equal(other.chatRequests[0].headers.authorization, 'Bearer key-of-b');
        assert.equal(other.chatRequests[0].body?.model, 'b-model');
        // The conversation goes on at b: the first exchange is in its request.
        assert.match(JSON.stringify(other.chatRequests[0].body?.messages), /hello a.*from a.*hello b/s);
      } finally {
        await other.close();
      }
    });

    it('a reasoning stream shows a folded thinking block (za opens it) and a clean reply', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      e.fake.script({ raw: fixture('openrouter/claude-reasoning.sse') });
      await e.t.cmd('Caboose hi');
      await waitChat(/2 \+ 2 = 4/);
      await waitState('idle');
      const lines = await e.t.chatLines();
      const row = lines.findIndex((l) => l.startsWith('💭 thinking'));
      assert.ok(row >= 0, lines.join('\n'));
      assert.match(lines[row], /thinking \(1 line, za\)/);
      assert.match(lines[row + 1], /This is a simple arithmetic question\. 2\+2 equals 4\./);
      const reply = lines.slice(row + 2).join('\n');
      assert.match(reply, /2 \+ 2 = 4/);
      assert.doesNotMatch(reply, /arithmetic/, 'the reasoning is not in the reply');
      const win = await e.t.lua<number>("return vim.fn.win_findbuf(require('caboose.chat').buf())[1]");
      const closed = () => e.t.lua<number>('local w, r = ... return vim.api.nvim_win_call(w, function() return vim.fn.foldclosed(r) end)', [win, row + 2]);
      assert.notEqual(await closed(), -1, 'collapsed by default');
      const shown = await e.t.lua<string>('local w, r = ... return vim.api.nvim_win_call(w, function() return vim.fn.foldtextresult(r) end)', [win, row + 1]);
      assert.match(shown, /💭 thinking \(1 line, za\)/);
      await e.t.lua('local w, r = ... vim.api.nvim_set_current_win(w) vim.api.nvim_win_set_cursor(0, { r, 0 })', [win, row + 1]);
      await e.t.nvim.input('za');
      await e.t.waitFor(async () => (await closed()) === -1, 'za opened the thinking block');
      // Nothing of the reasoning goes back to the server.
      e.fake.script({ text: 'ok' });
      await e.t.cmd('Caboose again');
      await waitChat(/again[\s\S]*ok/);
      assert.doesNotMatch(JSON.stringify(e.fake.chatRequests[1].body?.messages), /arithmetic/);
      // Reopened, the session shows the thinking block folded again.
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => !/2 \+ 2 = 4/.test(await chat()), 'a new chat');
      await e.t.lua('vim.ui.select = function(items, opts, cb) cb(items[1], 1) end');
      await e.t.cmd('CabooseSessions');
      await waitChat(/💭 thinking \(1 line, za\)\n {2}┆ This is a simple arithmetic question\. 2\+2 equals 4\.\n\n2 \+ 2 = 4/).catch(async (err: unknown) => {
        throw new Error(`${String(err)}\n${await chat()}`);
      });
      const lines2 = await e.t.chatLines();
      const row2 = lines2.findIndex((l) => l.startsWith('💭 thinking'));
      const win2 = await e.t.lua<number>("return vim.fn.win_findbuf(require('caboose.chat').buf())[1]");
      assert.equal(await e.t.lua<number>('local w, r = ... return vim.api.nvim_win_call(w, function() return vim.fn.foldclosed(r) end)', [win2, row2 + 2]), row2 + 1, 'folded with its line');
    });

    it('usage details from a real stream reach the winbar: cached prompt tokens; zero placeholders are not shown', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      e.fake.script({ raw: fixture('copilot/reasoning-text.sse') }, { raw: fixture('deepseek/reasoning.sse') });
      await e.t.cmd('Caboose hi');
      await waitChat(/Yes\./);
      await waitWinbar(/↑2\.0k \(1\.8k cached\) ↓30 Σ/);
      await e.t.cmd('Caboose again');
      await waitWinbar(/↓219 \(205 thinking\)/);
      assert.doesNotMatch(await winbar(), /cached/, 'DeepSeek’s cached_tokens: 0 is a placeholder');
    });

    it('a thinking block is collapsed while it streams; za on its line shows it, and it then stays open', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      e.fake.script({ raw: [chunk({ reasoning_content: 'step one\nstep two' }), chunk({ reasoning_content: '\nstep three' }), chunk({ content: 'Answer.' }), chunk({}, 'stop') + 'data: [DONE]\n\n'], gate });
      await e.t.cmd('Caboose think');
      await waitChat(/💭 thinking… \(2 lines, za\)/);
      assert.doesNotMatch(await chat(), /step one/, 'collapsed while it streams');
      const row = (await e.t.chatLines()).findIndex((l) => l.startsWith('💭 thinking'));
      const win = await e.t.lua<number>("return vim.fn.win_findbuf(require('caboose.chat').buf())[1]");
      await e.t.lua('local w, r = ... vim.api.nvim_set_current_win(w) vim.api.nvim_win_set_cursor(0, { r, 0 })', [win, row + 1]);
      await e.t.nvim.input('za');
      await waitChat(/step one\n {2}┆ step two/);
      release();
      await waitChat(/Answer\./);
      await waitState('idle');
      const lines = await e.t.chatLines();
      assert.match(lines[row], /💭 thinking \(3 lines, za\)/);
      assert.match(lines[row + 3], /step three/);
      assert.equal(await e.t.lua<number>('local w, r = ... return vim.api.nvim_win_call(w, function() return vim.fn.foldclosed(r) end)', [win, row + 2]), -1, 'opened by the user: stays open');
    });

    it('chat.show_thinking = false leaves the reasoning out of the chat', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, chat = { show_thinking = false } })" });
      e.fake.script({ raw: fixture('llamacpp/reasoning.sse') });
      await e.t.cmd('Caboose hi');
      await waitChat(/It is 4\./);
      assert.doesNotMatch(await chat(), /thinking|Thinking about/);
    });

    it('the session stores which model wrote each reply; :checkhealth checks every provider; :CabooseModel check', async () => {
      const other = await startFakeOpenAI({ models: ['b-model'] });
      try {
        await e.start({
          initLua: `require('caboose').setup({ mode = 'chug', provider = 'a', providers = {
            a = { base_url = '${e.fake.url}', api_key = 'key-of-a', model = 'fake-model', max_retries = 0 },
            b = { base_url = '${other.url}', api_key = 'key-of-b', model = 'b-model', max_retries = 0 },
            gone = { base_url = 'http://127.0.0.1:9/v1', model = 'x' },
          } })`,
        });
        e.fake.script({ text: 'reply by a' });
        other.script({ text: 'reply by b' });
        await e.t.cmd('Caboose one');
        await waitChat(/reply by a/);
        await waitState('idle');
        await e.t.cmd('CabooseModel b/b-model');
        await waitWinbar(/b\/b-model/);
        await e.t.cmd('Caboose two');
        await waitChat(/reply by b/);
        await waitState('idle');
        const Database = (await import('better-sqlite3')).default;
        const db = new Database(path.join(e.t.dataDir, 'caboose.sqlite'), { readonly: true });
        try {
          const rows = db.prepare("SELECT message_json FROM session_messages WHERE role = 'assistant' ORDER BY id").all() as { message_json: string }[];
          assert.deepEqual(
            rows.map((r) => JSON.parse(r.message_json) as { content: string; caboose?: { model?: string } }).map((m) => [m.content, m.caboose?.model]),
            [['reply by a', 'fake-model'], ['reply by b', 'b-model']],
          );
        } finally {
          db.close();
        }
        await e.t.cmd('checkhealth caboose');
        const health = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
        assert.match(health, /OK.*a \(http:\/\/127\.0\.0\.1:\d+\/v1, model fake-model\): reachable, key present/);
        assert.match(health, /OK.*b \(.*model b-model\): reachable/);
        assert.match(health, /ERROR.*gone .*not reachable/);
        assert.doesNotMatch(health, /key-of-a|key-of-b/);
        await e.t.cmd('bwipeout');
        e.fake.script({ toolCalls: [{ name: 'ping', arguments: { n: 1 } }] });
        other.script({ text: 'no tools here' });
        await e.t.cmd('CabooseModel check');
        const results = await e.t.waitFor(() => e.t.lua<{ provider: string; ok: boolean; tool_calls: boolean }[] | null>("return require('caboose.model').last_check"), 'check results');
        const by = new Map(results.map((r) => [r.provider, r]));
        assert.deepEqual([by.get('a')?.ok, by.get('a')?.tool_calls], [true, true]);
        assert.deepEqual([by.get('b')?.ok, by.get('b')?.tool_calls], [true, false]);
        assert.equal(by.get('gone')?.ok, false);
        const shown = (await e.t.notifications()).map((n) => n.msg).join('\n');
        assert.match(shown, /✓ a\/fake-model: streamed a tool call/);
      } finally {
        await other.close();
      }
    });

    it('setup() validates providers: an unknown default, a bad key', async () => {
      await e.start();
      const err = (o: string) => e.t.lua<string>(`local ok, err = pcall(require('caboose').setup, ${o}) return ok and '' or err`);
      assert.match(await err("{ provider = 'nope', providers = { a = {} } }"), /`provider` should be one of the configured providers \(a\)/);
      assert.match(await err("{ providers = { a = { base_urll = 'x' } } }"), /`providers\.a\.base_urll` should be one of base_url/);
      assert.match(await err("{ provider = 'a' }"), /`provider` should be a table/);
      assert.equal(await err("{ provider = 'a', providers = { a = { model = 'm', models = { x = { temperature = 0.1 } } } } }"), '');
      assert.equal(await err("{ provider = 'a', providers = { a = { model = 'm', media = { 'image' }, vision = true } } }"), '', 'a named provider takes media, like the single one');
      assert.match(await err("{ providers = { a = { media = { 'video' } } } }"), /`providers\.a\.media` should be a list of 'image' and\/or 'audio'/);
    });

    it('an error inside a 200 stream is shown once and not retried', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug' })" });
      e.fake.script({ raw: fixture('openrouter/recorded-error-in-stream.sse') });
      e.fake.setDefaultReply({ text: 'A RETRY HAPPENED' });
      await e.t.cmd('Caboose hi');
      await waitChat(/Token limit reached/);
      await waitState('idle');
      await new Promise((r) => setTimeout(r, 300));
      const text = await chat();
      assert.equal(text.match(/Token limit reached/g)?.length, 1, text);
      assert.doesNotMatch(text, /retrying|partial reply is kept|A RETRY HAPPENED/);
      assert.equal(e.fake.chatRequests.length, 1, 'not retried');
      assert.doesNotMatch(await winbar(), /retrying/);
    });
  });
});
