/**
 * The prompt library (issue 22, "Prompt library"): project prompts are asked about before they run (path
 * and full text shown; trust kept by path and content hash outside the project), placeholders and their
 * inputs, Visual-mode `:'<,'>Caboose /name`, setup() prompts with mode and model, the built-ins reaching the
 * model with their context, precedence shown by :CaboosePrompts, and `/name` in /help and completion.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

type State = { state: string; mode: string };
const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

/** vim.ui.select / vim.ui.input stand-ins: they record what was asked (and the preview float shown at the
 * time) and answer with `_G.select_answer` (a label substring; nil cancels) and `_G.input_answers` (in turn;
 * none left cancels). */
const UI = `
_G.asked, _G.inputs, _G.input_answers, _G.select_answer = {}, {}, {}, nil
vim.ui.select = function(items, opts, cb)
  local preview = vim.NIL
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    local b = vim.api.nvim_win_get_buf(w)
    if vim.b[b].caboose_prompt_preview then preview = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\\n') end
  end
  local labels = {}
  for _, it in ipairs(items) do table.insert(labels, opts.format_item and opts.format_item(it) or it) end
  table.insert(_G.asked, { prompt = opts.prompt, preview = preview, items = labels })
  local pick = _G.select_answer
  if pick == 'WAIT' then
    -- Left open until the test answers with _G.answer(label).
    _G.answer = function(want)
      for i, label in ipairs(labels) do
        if label:find(want, 1, true) then return cb(items[i], i) end
      end
      cb(nil)
    end
    return
  end
  vim.schedule(function()
    if pick then
      for i, label in ipairs(labels) do
        if label:find(pick, 1, true) then return cb(items[i], i) end
      end
    end
    cb(nil)
  end)
end
vim.ui.input = function(opts, cb)
  table.insert(_G.inputs, opts.prompt)
  local a = table.remove(_G.input_answers, 1)
  vim.schedule(function() cb(a) end)
end
`;

forEachNvim((bin) => {
  describe(`prompt library (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const waitChat = (re: RegExp, what = String(re)) => e.t.waitFor(async () => re.test(await chat()), what);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === 'idle', 'idle');
    const lastUser = (i: number) => String(e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
    const inputArea = () => e.t.lua<string>("return table.concat(vim.api.nvim_buf_get_lines(require('caboose.chat').input_buf(), 0, -1, false), '\\n')");
    const submit = async (text: string) => {
      await e.t.cmd('CabooseChat');
      await e.t.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(..., "\\n"))', [text]);
      await e.t.nvim.input('<CR>');
    };
    const notes = async () => ((await e.t.notifications()) as { msg: string }[]).map((n) => n.msg).join('\n');
    const asked = () => e.t.lua<{ prompt: string; preview: string | null; items: string[] }[]>('return _G.asked');
    /** Settles the editor's scheduled callbacks (a cancelled prompt sends nothing: nothing to wait for). */
    const settle = async () => {
      for (let i = 0; i < 5; i++) await e.t.lua('return 1');
      await new Promise((r) => setTimeout(r, 300));
    };
    const writeFile = (rel: string, text: string) => {
      const p = path.join(e.t.cwd, rel);
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, text);
      return p;
    };
    /** a.lua open with lines 2-3 as the last visual selection. */
    const openCode = async () => {
      writeFile('a.lua', 'local a = 1\nlocal b = 2\nlocal c = 3\n');
      await e.t.cmd('edit a.lua');
      await e.t.lua("vim.api.nvim_buf_set_mark(0, '<', 2, 0, {}) vim.api.nvim_buf_set_mark(0, '>', 3, 0, {})");
    };

    it('a project prompt asks first (path and full text shown), then runs with its placeholders; trust is kept by path and hash outside the project; a changed prompt asks again', async () => {
      await e.start({ initLua: SETUP + UI });
      await openCode();
      const file = [
        '---',
        'description: explain for an audience',
        '---',
        'Explain {{selection}} of {{file}} ({{filetype}}) to {{input:Audience}}.',
        'Keep it {{input}}; audience again: {{input:Audience}}.',
        '',
      ].join('\n');
      const promptPath = writeFile('.caboose/prompts/explainit.md', file);
      await e.t.lua(`_G.select_answer = 'WAIT' _G.input_answers = { 'beginners', 'short' }`);
      e.fake.script({ text: 'explained' });
      await submit('/explainit');
      // Asked first: while the question is open nothing else happens (no input asked, nothing sent).
      await e.t.waitFor(async () => (await asked()).length === 1, 'the trust question');
      await settle();
      assert.equal(e.fake.chatRequests.length, 0, 'nothing sent before the answer');
      assert.deepEqual(await e.t.lua('return _G.inputs'), [], 'no input asked before the answer');
      assert.equal(await inputArea(), '/explainit');
      await e.t.lua(`_G.answer('Always')`);
      await e.fake.waitForRequest(1);
      assert.equal(
        await e.t.lua<number>("return #vim.tbl_filter(function(w) return vim.b[vim.api.nvim_win_get_buf(w)].caboose_prompt_preview ~= nil end, vim.api.nvim_list_wins())"),
        0,
        'the preview float is closed after the answer',
      );
      const [first] = await asked();
      assert.match(first.prompt, /Run project prompt \/explainit from \.caboose\/prompts\/explainit\.md\?/);
      assert.deepEqual(first.items, ['Run once', 'Always trust this prompt (until it changes)', 'Cancel']);
      assert.ok(first.preview?.includes('.caboose/prompts/explainit.md'), 'the preview names the file');
      assert.ok(first.preview?.includes(file.trimEnd()), 'the preview shows the full text, front matter included');
      // Asked once per distinct question, in order.
      assert.deepEqual(await e.t.lua('return _G.inputs'), ['Audience: ', '/explainit: ']);
      const msg = lastUser(0);
      assert.match(msg, /^Explain the selection from a\.lua \(lines 2-3, attached below\) of a\.lua \(lua\) to beginners\.\nKeep it short; audience again: beginners\./);
      assert.match(msg, /Selection from a\.lua \(lines 2-3, lua\):\n```lua\nlocal b = 2\nlocal c = 3\n```/);
      assert.equal(await inputArea(), '', 'the message area is cleared once it went');
      await waitChat(/📎 #selection a\.lua:2-3/);
      await idle();
      // Trust is stored under stdpath('state'), keyed by the absolute path and the content's sha256.
      const store = path.join(e.t.home, 'state', 'nvim', 'caboose', 'trusted-prompts.json');
      const trusted = JSON.parse(fs.readFileSync(store, 'utf8')) as { prompts: Record<string, string> };
      const sha = (await e.t.lua<string>('return vim.fn.sha256(...)', [file])) as string;
      assert.deepEqual(Object.values(trusted.prompts), [sha]);
      assert.equal(fs.realpathSync(Object.keys(trusted.prompts)[0]), fs.realpathSync(promptPath));
      assert.deepEqual(fs.readdirSync(path.join(e.t.cwd, '.caboose')), ['prompts'], 'nothing written in the project');
      assert.deepEqual(fs.readdirSync(path.join(e.t.cwd, '.caboose', 'prompts')), ['explainit.md']);

      // Trusted and unchanged: runs without asking.
      await e.t.lua(`_G.input_answers = { 'experts', 'long' }`);
      e.fake.script({ text: 'again' });
      await submit('/explainit');
      await e.fake.waitForRequest(2);
      assert.equal((await asked()).length, 1, 'not asked again');
      assert.match(lastUser(1), /to experts\.\nKeep it long/);
      await idle();

      // Changed: asks again; "Run once" runs it without trusting it.
      const changed = file.replace('Keep it', 'Make it');
      fs.writeFileSync(promptPath, changed);
      await e.t.lua(`_G.select_answer = 'Run once' _G.input_answers = { 'kids', 'fun' }`);
      e.fake.script({ text: 'changed' });
      await submit('/explainit');
      await e.fake.waitForRequest(3);
      const all = await asked();
      assert.equal(all.length, 2, 'a changed prompt asks again');
      assert.ok(all[1].preview?.includes('Make it {{input}}'), 'showing the new text');
      assert.match(lastUser(2), /to kids\.\nMake it fun/);
      await idle();

      // Cancel: nothing sent, nothing lost (the message area keeps the text), nothing asked after it.
      await e.t.lua(`_G.select_answer = 'Cancel' _G.inputs = {} _G.input_answers = { 'x', 'y' }`);
      await submit('/explainit');
      await e.t.waitFor(async () => (await asked()).length === 3, 'asked a third time ("Run once" is not remembered)');
      await settle();
      assert.equal(e.fake.chatRequests.length, 3, 'nothing sent');
      assert.deepEqual(await e.t.lua('return _G.inputs'), [], 'no input asked after the cancel');
      assert.equal(await inputArea(), '/explainit', 'the message is still there');
      assert.match(await notes(), /\/explainit: not trusted: nothing sent/);
      const kept = JSON.parse(fs.readFileSync(store, 'utf8')) as { prompts: Record<string, string> };
      assert.deepEqual(Object.values(kept.prompts), [sha], 'the changed text was never trusted');
    });

    it('a project prompt that needs a selection says so before the trust question when there is none (nothing asked, nothing sent)', async () => {
      await e.start({ initLua: SETUP + UI });
      writeFile('b.lua', 'local b = 1\n');
      await e.t.cmd('edit b.lua');
      writeFile('.caboose/prompts/sel.md', 'Explain {{selection}}.\n');
      await e.t.lua(`_G.select_answer = 'Run once'`);
      await submit('/sel');
      await e.t.waitFor(async () => /\/sel needs a selection/.test(await notes()), 'the missing-selection notice');
      await settle();
      assert.equal((await asked()).length, 0, 'no trust question for a prompt that cannot run');
      assert.equal(e.fake.chatRequests.length, 0);
    });

    it('the trust dialog says what a project prompt switches (mode chug); a text longer than the screen can be opened in full first (nothing runs)', async () => {
      await e.start({ initLua: SETUP.replace("mode = 'chug'", "mode = 'create'") + UI });
      writeFile('.caboose/prompts/yolo.md', '---\nmode: chug\n---\nDo it all.\n');
      await e.t.lua(`_G.select_answer = 'Cancel'`);
      await submit('/yolo');
      await e.t.waitFor(async () => (await asked()).length === 1, 'the dialog');
      const [dialog] = await asked();
      assert.match(dialog.prompt, /Run project prompt \/yolo from \.caboose\/prompts\/yolo\.md\? \(it switches the chat to mode chug \(every tool runs without asking\)\)/);
      assert.match(String(dialog.preview), /Careful: it switches the chat to mode chug/);
      assert.deepEqual(dialog.items, ['Run once', 'Always trust this prompt (until it changes)', 'Cancel']);
      await settle();
      assert.equal((await e.t.lua<State>("return require('caboose').state()")).mode, 'create', 'a cancelled prompt switches nothing');
      const long = Array.from({ length: 400 }, (_, i) => `line ${i + 1}`).join('\n');
      const longPath = writeFile('.caboose/prompts/long.md', long + '\n');
      await e.t.lua(`_G.select_answer = 'Open the file'`);
      await submit('/long');
      await e.t.waitFor(async () => (await asked()).length === 2, 'the dialog');
      const second = (await asked())[1];
      assert.deepEqual(second.items, ['Run once', 'Always trust this prompt (until it changes)', 'Open the file to read all of it (nothing runs)', 'Cancel']);
      await e.t.waitFor(async () => fs.realpathSync(await e.t.lua<string>("return vim.api.nvim_buf_get_name(0)")) === fs.realpathSync(longPath), 'the file opened');
      assert.equal(await e.t.lua<number>("return vim.fn.line('$')"), 400);
      await settle();
      assert.equal(e.fake.chatRequests.length, 0, 'nothing sent');
    });

    // UI pass at 80x24: the preview was as high as its line count, so a long line wrapped and pushed the
    // prompt's last line ("... run rm -rf") out of the float (@@@) while it said all of the text was shown.
    it('at 80x24 the trust preview shows a long-lined prompt whole, or offers to open the file when wrapped lines do not fit', async () => {
      await e.start({ initLua: SETUP + UI });
      await e.t.lua('vim.o.columns = 80; vim.o.lines = 24');
      const filler = 'Please read the selection and the buffer carefully before you answer anything at all here';
      writeFile('.caboose/prompts/wrap.md', `Line one.\n${filler} ${filler}\nLAST: then run rm -rf ~\n`);
      await e.t.lua(`_G.select_answer = 'WAIT'`);
      await submit('/wrap');
      await e.t.waitFor(async () => (await asked()).length === 1, 'the dialog');
      const preview = () =>
        e.t.lua<{ bottom: number; last: number; title: string } | null>(`
          for _, w in ipairs(vim.api.nvim_list_wins()) do
            local b = vim.api.nvim_win_get_buf(w)
            if vim.b[b].caboose_prompt_preview then
              local title = vim.api.nvim_win_get_config(w).title
              return { bottom = vim.api.nvim_win_call(w, function() return vim.fn.line('w$') end), last = vim.api.nvim_buf_line_count(b),
                title = type(title) == 'table' and title[1][1] or tostring(title) }
            end
          end
          return nil`);
      const shown = await preview();
      assert.ok(shown, 'the preview float is open');
      assert.equal(shown.bottom, shown.last, `the last line (rm -rf) is in the float: ${JSON.stringify(shown)}`);
      assert.deepEqual((await asked())[0].items, ['Run once', 'Always trust this prompt (until it changes)', 'Cancel']);
      await e.t.lua(`_G.answer('Cancel')`);
      await settle();
      // Ten long lines: fewer lines than the float's rows, more once wrapped: the file can be read first.
      writeFile('.caboose/prompts/many.md', Array.from({ length: 10 }, (_, i) => `${i}: ${filler} ${filler}`).join('\n') + '\nLAST: rm -rf ~\n');
      await e.t.lua(`_G.select_answer = 'WAIT'`);
      await submit('/many');
      await e.t.waitFor(async () => (await asked()).length === 2, 'the second dialog');
      const many = await preview();
      assert.match(String(many?.title), /shown/, `the title says not all is shown: ${JSON.stringify(many)}`);
      assert.deepEqual((await asked())[1].items, ['Run once', 'Always trust this prompt (until it changes)', 'Open the file to read all of it (nothing runs)', 'Cancel']);
      await e.t.lua(`_G.answer('Cancel')`);
      await settle();
      assert.equal(e.fake.chatRequests.length, 0, 'nothing sent');
    });

    it(':checkhealth caboose counts the prompts by source and names a file that cannot be used', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'chug', prompts = { mine = { text = 'x' } } })` });
      writeFile('.caboose/prompts/ok.md', 'fine\n');
      writeFile('.caboose/prompts/broken.md', '---\ndescription: never closed\n');
      await e.t.cmd('checkhealth caboose');
      const text = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      assert.match(text, /caboose: prompt library/);
      assert.match(text, /2 project, 0 user, 1 setup\(\), 5 built-in/);
      assert.match(text, /WARNING.*\/broken \(project \.caboose\/prompts\/broken\.md\): the front matter is not closed/);
    });

    it('a cancelled {{input}} sends nothing and keeps the message; text typed after /name answers {{input}} or goes after the prompt', async () => {
      await e.start({
        initLua:
          `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, prompts = {
            ask = { description = 'asks', text = 'Translate into {{input:Language}}: {{input:Text}}' },
            plain = { text = 'Say hello.' },
          } })` + UI,
      });
      await submit('/ask');
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return _G.inputs')).length === 1, 'the input asked');
      await settle();
      assert.equal(e.fake.chatRequests.length, 0, 'nothing sent');
      assert.equal(await inputArea(), '/ask', 'nothing lost');
      assert.match(await notes(), /\/ask: input cancelled: nothing sent/);
      // The words after /name answer the first question; the second is asked.
      await e.t.lua(`_G.inputs = {} _G.input_answers = { 'bonjour' }`);
      e.fake.script({ text: 'ok' }, { text: 'ok2' });
      await submit('/ask French and more');
      await e.fake.waitForRequest(1);
      assert.equal(lastUser(0), 'Translate into French and more: bonjour');
      assert.deepEqual(await e.t.lua('return _G.inputs'), ['Text: ']);
      await idle();
      // :Caboose /name …: without placeholders the words follow the prompt.
      await e.t.cmd('Caboose /plain and wave too');
      await e.fake.waitForRequest(2);
      assert.equal(lastUser(1), 'Say hello.\n\nand wave too');
    });

    it("Visual mode :'<,'>Caboose /explain: the selection fills the placeholder (attached once)", async () => {
      await e.start({ initLua: SETUP + UI });
      await openCode();
      e.fake.script({ text: 'it sets b and c' });
      await e.t.nvim.input('2GVj:Caboose /explain<CR>');
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.match(msg, /^Explain the selection from a\.lua \(lines 2-3, attached below\): what it is for/);
      assert.equal(msg.match(/Selection from a\.lua \(lines 2-3, lua\)/g)?.length, 1, 'the selection is attached once');
      assert.ok(!msg.includes('local a = 1'), 'only the selected lines');
    });

    it('a setup() prompt with mode and model: the message runs with them, and they stay in force', async () => {
      await e.start({
        initLua: `require('caboose').setup({ mode = 'chug', provider = 'a', providers = {
            a = { base_url = '${e.fake.url}', api_key = 'k', model = 'fake-model', models = { 'fake-model', 'model-b' }, max_retries = 0 },
          }, prompts = {
            plan_it = { description = 'plan a change', text = 'Plan {{input}} (no edits yet).', mode = 'plan', model = 'a/model-b' },
          } })` + UI,
      });
      e.fake.script({ text: 'a plan' }, { text: 'next' });
      await e.t.cmd('Caboose /plan_it a refactor');
      await e.fake.waitForRequest(1);
      const req = e.fake.chatRequests[0].body!;
      assert.equal(lastUser(0), 'Plan a refactor (no edits yet).');
      assert.equal(req.model, 'model-b', 'the prompt’s model');
      assert.equal((await e.t.lua<State>("return require('caboose').state()")).mode, 'plan');
      // The host ran it in plan mode (its system prompt says so).
      assert.match(String(req.messages!.find((m) => m.role === 'system')?.content), /The session is in plan mode/);
      await idle();
      await e.t.cmd('Caboose and now?');
      await e.fake.waitForRequest(2);
      assert.equal(e.fake.chatRequests[1].body!.model, 'model-b', 'the model stays');
      assert.equal((await e.t.lua<State>("return require('caboose').state()")).mode, 'plan', 'the mode stays');
    });

    it('each built-in reaches the model with its context: explain, fix (diagnostics), tests, review (#gitdiff), commit (staged diff)', async () => {
      await e.start({ initLua: SETUP + UI });
      const cwd = e.t.cwd;
      execFileSync('git', ['init', '-q'], { cwd });
      writeFile('a.lua', 'local a = 1\nlocal b = 2\nlocal c = 3\n');
      writeFile('s.txt', 'old\n');
      execFileSync('git', ['add', '.'], { cwd });
      execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'init'], { cwd });
      writeFile('a.lua', 'local a = 1\nlocal b = 22\nlocal c = 3\n');
      writeFile('s.txt', 'staged new\n');
      execFileSync('git', ['add', 's.txt'], { cwd });
      await e.t.cmd('edit a.lua');
      await e.t.lua(`vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 1, col = 6, message = 'b is odd', severity = vim.diagnostic.severity.WARN, source = 'lint' } })`);
      const run = async (i: number, text: string) => {
        e.fake.script({ text: `reply ${i}` });
        await submit(text);
        await e.fake.waitForRequest(i + 1);
        await waitChat(new RegExp(`reply ${i}`));
        await idle();
        return lastUser(i);
      };
      const explain = await run(0, '/explain');
      assert.match(explain, /^Explain the file a\.lua \(attached below\): what it is for/);
      assert.match(explain, /File a\.lua \(3 lines, lua, sha256 [0-9a-f]{64}\):\n```lua\nlocal a = 1\nlocal b = 22/);
      const fix = await run(1, '/fix');
      assert.match(fix, /^Fix the problems that the diagnostics below report in the file a\.lua \(attached below\)/);
      assert.match(fix, /#diagnostics a\.lua \(1 line\):\n```\na\.lua:2:7: WARN: b is odd \[lint\]\n```/);
      assert.match(fix, /File a\.lua \(3 lines, lua/);
      const tests = await run(2, '/tests focus on b');
      assert.match(tests, /^Write tests for the file a\.lua \(attached below\)\./);
      assert.match(tests, /\n\nfocus on b\n\nFile a\.lua/);
      const review = await run(3, '/review');
      assert.match(review, /^Review the changes in the git diff below/);
      assert.match(review, /#gitdiff \(\d+ lines, diff\):\n```diff\n[\s\S]*-local b = 2\n\+local b = 22/);
      assert.ok(!review.includes('staged new'), 'review: the unstaged diff');
      const commit = await run(4, '/commit');
      assert.match(commit, /^Write a git commit message for the staged changes below/);
      assert.match(commit, /#gitdiff \(staged\) \(\d+ lines, diff\):\n```diff\n[\s\S]*-old\n\+staged new/);
      assert.ok(!commit.includes('local b = 22'), 'commit: the staged diff only');
      const text = await chat();
      assert.match(text, /📎 #diagnostics a\.lua \(1 line\)/);
      assert.match(text, /📎 #gitdiff \(staged\) \(\d+ lines\)/);
    });

    it('precedence project > user > setup > built-in: :CaboosePrompts shows each with its source and the clash; /help and completion list prompts', async () => {
      await e.start({
        initLua: `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, prompts = {
            review = { description = 'setup review', text = 'SETUP REVIEW' },
            help = { description = 'a prompt named like a command', text = 'HELP PROMPT' },
            mine = { description = 'my own', text = 'MINE' },
          } })` + UI,
      });
      writeFile('.caboose/prompts/review.md', '---\ndescription: project review\n---\nPROJECT REVIEW\n');
      writeFile('.caboose/prompts/bad.md', '---\nmode: turbo\n---\nx\n');
      const userDir = path.join(e.t.home, 'config', 'nvim', 'caboose', 'prompts');
      fs.mkdirSync(userDir, { recursive: true });
      fs.writeFileSync(path.join(userDir, 'review.md'), 'USER REVIEW\n');
      fs.writeFileSync(path.join(userDir, 'explain.md'), '---\ndescription: my explain\n---\nUSER EXPLAIN\n');
      await e.t.lua(`_G.select_answer = nil`);
      await e.t.cmd('CaboosePrompts');
      await e.t.waitFor(async () => (await asked()).length === 1, 'the picker');
      const [picker] = await asked();
      assert.equal(picker.prompt, 'Caboose prompts');
      const line = (re: RegExp) => {
        const l = picker.items.find((i) => re.test(i));
        assert.ok(l, `${re} in\n${picker.items.join('\n')}`);
        return l;
      };
      line(/^\/review — project review \[project \.caboose\/prompts\/review\.md\]  \(overrides user, setup\(\), built-in\)$/);
      line(/^\/review — \(no description\) \[user ~\/config\/nvim\/caboose\/prompts\/review\.md\]  \(overridden by project\)$/);
      line(/^\/review — setup review \[setup\(\)\]  \(overridden by project\)$/);
      line(/^\/review — review the unstaged changes \(#gitdiff\) \[built-in\]  \(overridden by project\)$/);
      line(/^\/explain — my explain \[user .*explain\.md\]  \(overrides built-in\)$/);
      line(/^\/help — a prompt named like a command \[setup\(\)\]  \(\/help runs the command; run this one from here\)$/);
      line(/^\/bad — \(no description\) \[project \.caboose\/prompts\/bad\.md\]  \(error: `mode` should be one of/);
      for (const n of ['fix', 'tests', 'commit', 'mine']) line(new RegExp(`^/${n} — `));

      // The picker runs the one chosen, even an overridden one (the built-in review here: no trust asked).
      await e.t.lua(`_G.asked = {} _G.select_answer = '[built-in]  (overridden by project)'`);
      execFileSync('git', ['init', '-q'], { cwd: e.t.cwd });
      e.fake.script({ text: 'reviewed' }, { text: 'mine done' });
      await e.t.cmd('CaboosePrompts');
      await e.fake.waitForRequest(1);
      assert.match(lastUser(0), /^Review the changes in the git diff below/);
      await idle();
      // /mine (setup) runs; /help stays the command.
      await submit('/mine');
      await e.fake.waitForRequest(2);
      assert.equal(lastUser(1), 'MINE');
      await idle();
      await submit('/help');
      await waitChat(/### Prompts[\s\S]*`\/review` — project review \(project \.caboose\/prompts\/review\.md\)/);
      const help = await chat();
      assert.match(help, /`\/explain` — my explain \(user /);
      assert.match(help, /`\/commit` — write a commit message for the staged changes/);
      assert.doesNotMatch(help, /`\/help` — a prompt named like a command/);
      assert.equal(e.fake.chatRequests.length, 2, '/help never reaches the model');
      // Completion: the built-in popup's candidates and the LSP items blink.cmp / nvim-cmp get.
      const words = await e.t.lua<{ word: string; kind: string; menu: string }[]>("return require('caboose.insertables.complete').candidates('/').items");
      const prompts = words.filter((w) => w.kind === 'prompt').map((w) => w.word);
      for (const w of ['/review', '/explain', '/fix', '/tests', '/commit', '/mine', '/bad']) assert.ok(prompts.includes(w), w);
      assert.ok(!prompts.includes('/help'), '/help completes as the command');
      const lsp = await e.t.lua<{ label: string; kind: number; documentation: { value: string } }[]>("return require('caboose.insertables.complete').lsp_items(0, '/rev')");
      assert.deepEqual(lsp.map((i) => i.label), ['/review']);
      assert.equal(lsp[0].kind, 3, 'Function');
      assert.match(lsp[0].documentation.value, /project review\nPrompt from project \.caboose\/prompts\/review\.md/);
      // :Caboose /… completes the commands and the prompts (the first word only).
      assert.deepEqual(await e.t.lua("return vim.fn.getcompletion('Caboose /re', 'cmdline')"), ['/review']);
      assert.deepEqual(await e.t.lua("return vim.fn.getcompletion('Caboose /co', 'cmdline')"), ['/commit', '/compact']);
      assert.deepEqual(await e.t.lua("return vim.fn.getcompletion(\"'<,'>Caboose /ex\", 'cmdline')"), ['/explain', '/export']);
      assert.deepEqual(await e.t.lua("return vim.fn.getcompletion('Caboose why /re', 'cmdline')"), []);
      // The empty buffer Neovim starts with (the only one here) is nothing to write tests for.
      await submit('/tests');
      await e.t.waitFor(async () => /\/tests needs a file buffer \(open one, then run it again\): nothing sent/.test(await notes()), 'the warning');
      assert.equal(await inputArea(), '/tests');
      // A broken prompt file says why and sends nothing.
      await submit('/bad');
      await e.t.waitFor(async () => /prompt \/bad \(project \.caboose\/prompts\/bad\.md\): `mode` should be one of/.test(await notes()), 'the error');
      await settle();
      assert.equal(e.fake.chatRequests.length, 2);
      assert.equal(await inputArea(), '/bad');
    });
  });
});
