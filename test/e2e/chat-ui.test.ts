/** The chat as a user lives in it (issue 8): no cursor yanking, a readable queue, a message area, context. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { firstToolResult } from '../support/chat-requests';

type State = { state: string };
const SETUP = (extra = '') => `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } ${extra} })`;

forEachNvim((bin) => {
  describe(`chat UI (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const waitChat = (re: RegExp, what = String(re)) => e.t.waitFor(async () => re.test(await chat()), what);
    const waitState = (s: string) => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === s, `state ${s}`);
    const chatWin = () => e.t.lua<number>("return vim.fn.win_findbuf(require('caboose.chat').buf())[1]");
    const winbar = () => e.t.lua<string>("return require('caboose.chat').status_text() or ''");
    const lastUser = (i: number) => String(e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
    const gated = () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      return { gate, release: () => release() };
    };

    it('a chat window scrolled up keeps its cursor through a streamed reply, and can select and yank meanwhile', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ text: 'intro line one\nintro line two\nintro three' });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      await waitChat(/intro three/);
      const g = gated();
      const many = Array.from({ length: 30 }, (_, i) => `streamed ${i}\n`);
      e.fake.script({ text: many.join(''), chunks: many, gate: g.gate, gateAfterChunks: 2 });
      await e.t.cmd('Caboose second');
      await waitChat(/streamed 1\b/);
      // The user goes into the chat, scrolls to the top and starts selecting.
      const win = await chatWin();
      await e.t.lua('vim.api.nvim_set_current_win(...) vim.api.nvim_win_set_cursor(0, { 1, 0 })', [win]);
      await e.t.nvim.input('Vj');
      g.release();
      await waitChat(/streamed 29/);
      await waitState('idle');
      assert.deepEqual(await e.t.lua('return vim.api.nvim_win_get_cursor(0)'), [2, 0], 'the cursor stayed where the user put it');
      assert.match(await e.t.lua<string>('return vim.fn.mode()'), /^V/, 'still in Visual mode');
      await e.t.nvim.input('y');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'n', 'normal mode');
      const lines = await e.t.chatLines();
      assert.equal(await e.t.lua<string>("return vim.fn.getreg('\"')"), `${lines[0]}\n${lines[1]}\n`, 'yanked the selected lines');
    });

    it('a chat window whose cursor is on the last line follows the stream', async () => {
      await e.start({ initLua: SETUP() });
      const many = Array.from({ length: 40 }, (_, i) => `line ${i}\n`);
      e.fake.script({ text: many.join('') + 'the end' });
      await e.t.cmd('Caboose go');
      await waitChat(/the end/);
      const win = await chatWin();
      const [row] = await e.t.lua<[number, number]>('return vim.api.nvim_win_get_cursor(...)', [win]);
      assert.equal(row, (await e.t.chatLines()).length, 'the chat follows the reply to its end');
    });

    it('a message sent mid-reply waits as queued and is printed after the reply it waited for', async () => {
      await e.start({ initLua: `vim.o.columns = 160 ${SETUP()}` });
      const g = gated();
      e.fake.script({ text: 'first reply words', chunks: ['first re', 'ply words'], gate: g.gate }, { text: 'second reply' });
      await e.t.cmd('Caboose m1');
      await waitChat(/first re/);
      await e.t.cmd('Caboose m2 please');
      await e.t.waitFor(async () => (await e.t.lua<unknown[]>("return require('caboose.chat').queue()")).length === 1, 'queued');
      assert.doesNotMatch(await chat(), /m2 please/, 'not printed in the transcript while queued');
      assert.match(await winbar(), /1 queued/);
      const virt = await e.t.lua<string>(`
        local buf = require('caboose.chat').buf()
        local ns = vim.api.nvim_get_namespaces().caboose_chat_queue
        local marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
        return marks[1] and marks[1][4].virt_lines[1][1][1] or ''`);
      assert.match(virt, /queued 1: m2 please/);
      g.release();
      await waitChat(/second reply/);
      await waitState('idle');
      const text = await chat();
      assert.match(text, /## You\n\nm1\n\n## Caboose\n\nfirst reply words\n\n## You\n\nm2 please\n\n## Caboose\n\nsecond reply/);
      assert.doesNotMatch(await winbar(), /queued/);
    });

    // UI pass: :CabooseStop in the middle of a code block left the fence open, so the marker, "> stopped"
    // and every later message rendered (and exported) as code.
    it(':CabooseStop inside a code block closes it before the marker: live, reopened and exported', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script(
        { text: 'Here:\n\n```lua\nlocal x = 1\nreturn x', chunks: ['Here:\n\n```lua\n', 'local x = 1\n', 'return x'], gate: new Promise(() => undefined), gateAfterChunks: 2 },
        { text: 'After.' },
      );
      await e.t.cmd('Caboose show code');
      await waitChat(/local x = 1/);
      const id = await e.t.lua<string>("return require('caboose').state().session");
      await e.t.cmd('CabooseStop');
      await waitChat(/response interrupted/);
      await waitState('idle');
      const fenced = /```lua\nlocal x = 1\n```\n\n_\[response interrupted\]_/;
      assert.match(await chat(), fenced, 'live: the block closed before the marker');
      await e.t.cmd('Caboose next');
      await waitChat(/After\./);
      await waitState('idle');
      // The transcript's Markdown after the cut has no open fence: "## You" of the next message is prose.
      const after = await e.t.lua<boolean>(`local lines = vim.api.nvim_buf_get_lines(require('caboose.chat').buf(), 0, -1, false)
        local open = false
        for _, l in ipairs(lines) do
          if l:match('^%s*\`\`\`') then open = not open end
          if l == '## You' and open then return false end
        end
        return true`);
      assert.ok(after, 'no "## You" inside a code block');
      await e.t.cmd('CabooseExport!');
      const md = await e.t.waitFor(async () => {
        const t = await e.t.lua<string>("return vim.bo.filetype == 'markdown' and vim.bo.buftype == '' and table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n') or ''");
        return t.includes('After.') ? t : null;
      }, 'the export buffer');
      assert.match(md, fenced, 'export: the block closed');
      assert.ok(typeof id === 'string' && id !== '', `precondition: a session id (${id})`);
      await e.t.cmd('CabooseNew');
      await e.t.lua(`require('caboose.ui.sessions').open(...)`, [id]);
      await e.t.waitFor(async () => /After\./.test(await chat()), 'the session reopened');
      assert.match(await chat(), fenced, 'reopened: the block closed');
    });

    it(':CabooseStop says which queued messages it discarded', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ text: 'partial answer, never finished', chunks: ['partial answer', ', never finished'], gate: new Promise(() => undefined) });
      await e.t.cmd('Caboose m1');
      await waitChat(/partial answer/);
      await e.t.cmd('Caboose m2');
      await e.t.cmd('Caboose m3');
      await e.t.waitFor(async () => (await e.t.lua<unknown[]>("return require('caboose.chat').queue()")).length === 2, 'two queued');
      await e.t.cmd('CabooseStop');
      await waitChat(/discarded 2 queued messages: “m2”, “m3”/);
      // In the order it happened: the cut reply, then the dropped messages.
      assert.match(await chat(), /partial answer\n\n_\[response interrupted\]_[\s\S]*discarded 2 queued messages/);
      await waitState('idle');
      assert.equal((await e.t.lua<unknown[]>("return require('caboose.chat').queue()")).length, 0);
      assert.doesNotMatch(await winbar(), /queued/);
      assert.doesNotMatch(await chat(), /## You\n\nm2/);
    });

    it('the queue-full message names max_queue', async () => {
      await e.start({ initLua: SETUP(', max_queue = 1') });
      e.fake.script({ hang: true });
      await e.t.cmd('Caboose m1');
      await waitState('streaming');
      await e.t.cmd('Caboose m2');
      await e.t.cmd('Caboose m3');
      await waitChat(/busy and 1 message is already queued/);
    });

    it('a failed request prints the error, without an empty reply heading or "response interrupted"', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ status: 500 });
      await e.t.cmd('Caboose hi');
      await waitChat(/Error/);
      await waitState('idle');
      const text = await chat();
      assert.doesNotMatch(text, /## Caboose/);
      assert.doesNotMatch(text, /interrupted/);
    });

    it('the winbar says retrying (not streaming) while a request is retried', async () => {
      await e.start({ initLua: `vim.o.columns = 160 require('caboose').setup({ mode = 'chug', provider = { max_retries = 2, retry_base_delay_ms = 1500 } })` });
      e.fake.script({ status: 503 }, { text: 'made it' });
      await e.t.cmd('Caboose hi');
      const bar = await e.t.waitFor(async () => {
        const w = await winbar();
        return /retrying/.test(w) ? w : null;
      }, 'retrying in the winbar');
      assert.doesNotMatch(bar, /streaming/);
      await waitChat(/made it/);
      await waitState('idle');
      assert.doesNotMatch(await winbar(), /retrying/);
    });

    it('the winbar shows the model and token usage; the chat width is a share of the screen', async () => {
      await e.start({ initLua: `vim.o.columns = 200 vim.o.lines = 50 ${SETUP()}`, env: { CABOOSE_MODEL: 'fake-model-x' } });
      e.fake.script({ text: 'one', usage: { prompt_tokens: 1234, completion_tokens: 56 } }, { text: 'two', usage: { prompt_tokens: 2000, completion_tokens: 100 } });
      await e.t.cmd('Caboose hi');
      await waitChat(/one/);
      await waitState('idle');
      await e.t.cmd('Caboose again');
      await waitChat(/two/);
      await waitState('idle');
      const bar = await winbar();
      assert.match(bar, /fake-model-x/);
      assert.match(bar, /↑2\.0k ↓100 Σ3\.4k/, bar);
      assert.match(bar, /chug/);
      assert.equal(await e.t.lua('return vim.api.nvim_win_get_width(...)', [await chatWin()]), 80, '40% of 200 columns');
      await e.t.lua('vim.o.columns = 120');
      await e.t.waitFor(async () => (await e.t.lua<number>('return vim.api.nvim_win_get_width(...)', [await chatWin()])) === 48, 'resized to 40% of 120');
    });

    it('the message area: multi-line, <C-s> in insert mode and <CR> in normal mode send, undo brings the text back', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ text: 'got it' }, { text: 'second' });
      await e.t.cmd('CabooseChat');
      assert.equal(await e.t.lua('return vim.b.caboose_input == true'), true, ':CabooseChat puts the cursor in the message area');
      const hint = await e.t.lua<string>(`
        local buf = require('caboose.chat').buf()
        local marks = vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_get_namespaces().caboose_chat_hint, 0, -1, { details = true })
        return marks[1] and marks[1][4].virt_text[1][1] or ''`);
      assert.match(hint, /<CR>/, 'an empty chat shows a one-line hint');
      await e.t.nvim.input('iline one<CR>line two<C-s>');
      await e.fake.waitForRequest(1);
      assert.equal(lastUser(0), 'line one\nline two');
      await waitChat(/got it/);
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('') === '', 'cleared');
      assert.equal(await e.t.lua('return vim.fn.mode()'), 'n');
      await e.t.nvim.input('u');
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n') === 'line one\nline two', 'undo restores');
      await e.t.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, { "again" })');
      await e.t.nvim.input('<CR>');
      await e.fake.waitForRequest(2);
      assert.equal(lastUser(1), 'again');
      await waitChat(/second/);
    });

    it('chat keys: g? lists them, i goes to the message area, q closes the chat', async () => {
      await e.start({ initLua: SETUP() });
      await e.t.cmd('CabooseChat');
      await e.t.lua('vim.api.nvim_set_current_win(...)', [await chatWin()]);
      await e.t.nvim.input('g?');
      const keys = await e.t.waitFor(async () => {
        const l = await e.t.lua<string[] | null>("if vim.bo.filetype == 'caboose_keys' then return vim.api.nvim_buf_get_lines(0, 0, -1, false) end return nil");
        return l;
      }, 'keys float');
      const text = keys.join('\n');
      for (const k of ['<C-s>', 'gy', '<C-c>', '@', '#buffer']) assert.ok(text.includes(k), k);
      await e.t.nvim.input('q');
      await e.t.nvim.input('i');
      await e.t.waitFor(async () => (await e.t.lua<boolean>('return vim.b.caboose_input == true and vim.fn.mode() == "i"')), 'insert in the message area');
      await e.t.nvim.input('<Esc>');
      await e.t.lua('vim.api.nvim_set_current_win(...)', [await chatWin()]);
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await e.t.lua<number>("return #vim.fn.win_findbuf(require('caboose.chat').buf())")) === 0, 'chat closed');
    });

    it('#buffer (unsaved text included) and @path reach the model with their text; the transcript shows them', async () => {
      await e.start({ initLua: SETUP() });
      fs.writeFileSync(path.join(e.t.cwd, 'a.lua'), 'local x = 1\n');
      fs.mkdirSync(path.join(e.t.cwd, 'src'));
      fs.writeFileSync(path.join(e.t.cwd, 'src', 'b.txt'), 'bee content\n');
      await e.t.cmd('edit a.lua');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'local x = 2 -- unsaved' })");
      e.fake.script({ text: 'seen' });
      await e.t.cmd('CabooseChat');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'explain #buffer and @src/b.txt.' })");
      await e.t.nvim.input('<CR>');
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.match(msg, /^explain #buffer and @src\/b\.txt\./);
      assert.match(msg, /File a\.lua \(1 line, lua, unsaved changes in the buffer, sha256 [0-9a-f]{64}\):\n```lua\nlocal x = 2 -- unsaved\n```/);
      assert.match(msg, /File src\/b\.txt \(1 line, (?:text, )?sha256 [0-9a-f]{64}\):\n```(?:text)?\nbee content\n```/);
      const system = String(e.fake.chatRequests[0].body!.messages![0].content);
      assert.ok(system.includes(e.t.cwd), 'the system prompt names the working directory');
      await waitChat(/seen/);
      const text = await chat();
      assert.match(text, /📎 #buffer a\.lua \(1 line, unsaved\)/);
      assert.match(text, /📎 @src\/b\.txt src\/b\.txt \(1 line\)/);
    });

    it('@ completes paths in the message area', async () => {
      await e.start({ initLua: SETUP() });
      fs.mkdirSync(path.join(e.t.cwd, 'src'));
      fs.writeFileSync(path.join(e.t.cwd, 'src', 'main.ts'), 'x\n');
      await e.t.cmd('CabooseChat');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'look at @sr' }) vim.api.nvim_win_set_cursor(0, { 1, 11 })");
      assert.match(await e.t.lua<string>('return vim.bo.omnifunc'), /caboose/);
      // Still ours once the markdown filetype (set a few ticks later on the first open) has run its ftplugin.
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'markdown', 'the markdown filetype');
      assert.match(await e.t.lua<string>('return vim.bo.omnifunc'), /caboose/);
      const start = await e.t.lua<number>("return require('caboose.context').omnifunc(1, '')");
      assert.equal(start, 9);
      const items = await e.t.lua<{ word: string }[]>("return require('caboose.context').omnifunc(0, 'sr')");
      assert.deepEqual(items.map((i) => i.word), ['src/']);
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { '' })");
      await e.t.nvim.input('a@src/m');
      await e.t.waitFor(async () => (await e.t.lua<number>('return vim.fn.pumvisible()')) === 1, 'completion menu after @');
      await e.t.nvim.input('<C-n><Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.api.nvim_get_current_line()')) === '@src/main.ts', 'completed');
    });

    it('tool calls: one line each with status and summary, details folded', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })` });
      fs.writeFileSync(path.join(e.t.cwd, 'a.txt'), 'one\ntwo\n');
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
        (req) => ({
          toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: firstToolResult(req).data!.sha256 as string, edits: [{ oldText: 'two', newText: 'TWO\nthree' }] } }],
        }),
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo out-text; exit 3' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo never' } }] },
        { text: 'done' },
      );
      await e.t.cmd('Caboose go');
      await waitState('pending_approval');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => /bash echo out-text/.test(await chat()) && (await e.t.lua<State>("return require('caboose').state()")).state === 'pending_approval', 'bash approval');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => /bash echo never/.test(await chat()) && (await e.t.lua<State>("return require('caboose').state()")).state === 'pending_approval', 'second bash approval');
      await e.t.lua("require('caboose').approval_respond('reject', 'no more')");
      await waitChat(/done/);
      const lines = await e.t.chatLines();
      const text = lines.join('\n');
      assert.match(text, /^✓ read_file a\.txt 2 lines$/m);
      assert.match(text, /^## Caboose\n\n✓ read_file a\.txt/m, 'one blank line under the heading');
      assert.match(text, /^✓ edit_file a\.txt \+2 −1$/m);
      assert.match(text, /^✓ bash echo out-text; exit 3 → exit 3$/m);
      assert.match(text, /^⊘ bash echo never .*no more/m);
      assert.match(text, /^ {2}┆ out-text$/m, 'bash output in the details');
      assert.match(text, /^ {2}┆ \+TWO$/m, 'the diff in the details');
      assert.doesNotMatch(text, /expectedSha256/);
      const row = lines.findIndex((l) => l.startsWith('✓ bash')) + 2; // 1-based row of its first detail line
      const closed = await e.t.lua<number>('return vim.api.nvim_win_call(..., function() return vim.fn.foldclosed(' + row + ') end)', [await chatWin()]);
      assert.notEqual(closed, -1, 'details are folded');
      const foldsAt = async (win: number) =>
        e.t.lua<number[][]>(
          `return vim.api.nvim_win_call(..., function()
            local out, l, n = {}, 1, vim.api.nvim_buf_line_count(0)
            while l <= n do
              local s = vim.fn.foldclosed(l)
              if s ~= -1 then table.insert(out, { s, vim.fn.foldclosedend(l) }); l = vim.fn.foldclosedend(l) + 1 else l = l + 1 end
            end
            return out
          end)`,
          [win],
        );
      const detailRuns = (ls: string[]) => {
        const runs: number[][] = [];
        ls.forEach((l, i) => {
          if (!l.startsWith('  ┆ ')) return;
          const last = runs.at(-1);
          if (last && last[1] === i) last[1] = i + 1;
          else runs.push([i + 1, i + 1]);
        });
        return runs.filter(([a, b]) => b > a); // one line shows as itself ('foldminlines')
      };
      const live = await foldsAt(await chatWin());
      assert.deepEqual(live, detailRuns(lines), 'each run of details is one closed fold, nothing else is folded');
      // A new window on the chat folds the same way; so does the same session reopened from the store.
      await e.t.lua("require('caboose.chat').close()");
      await e.t.cmd('CabooseChat');
      assert.deepEqual(await foldsAt(await chatWin()), live, 'folds in a reopened chat window');
      const id = await e.t.lua<string>("return require('caboose').state().session");
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().session")) !== id, 'a new session');
      await e.t.lua("require('caboose.ui.sessions').open(...)", [id]);
      await waitChat(/done/);
      const reopened = await e.t.chatLines();
      assert.deepEqual(reopened, lines, 'the reopened session reads as it did live');
      assert.deepEqual(await foldsAt(await chatWin()), detailRuns(reopened), 'folds in the reopened session');
      assert.ok(detailRuns(reopened).length >= 2);
      const hl = await e.t.lua<string[]>(`
        local buf = require('caboose.chat').buf()
        local out = {}
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_get_namespaces().caboose_chat, 0, -1, { details = true })) do
          if m[4].hl_group then table.insert(out, m[4].hl_group) end
        end
        return out`);
      assert.ok(hl.includes('CabooseToolOk') && hl.includes('CabooseToolRejected'), hl.join(','));
    });

    it('an edit to an unsaved buffer says "not saved: unsaved buffer"', async () => {
      await e.start({ initLua: SETUP() });
      fs.writeFileSync(path.join(e.t.cwd, 'u.txt'), 'alpha\n');
      await e.t.cmd('edit u.txt');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 1, 1, false, { 'typed' })");
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'u.txt' } }] },
        (req) => ({ toolCalls: [{ name: 'edit_file', arguments: { path: 'u.txt', expectedSha256: firstToolResult(req).data!.sha256 as string, edits: [{ oldText: 'alpha', newText: 'beta' }] } }] }),
        { text: 'edited' },
      );
      await e.t.cmd('Caboose edit');
      await waitChat(/edited/);
      assert.match(await chat(), /^✓ edit_file u\.txt \+1 −1 \(not saved: unsaved buffer\)$/m);
    });

    it('fenced code is highlighted by treesitter injections; gy yanks the block under the cursor', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ text: 'Here:\n\n```lua\nlocal answer = 42\nprint(answer)\n```\n\nbye' });
      await e.t.cmd('Caboose code');
      await waitChat(/bye/);
      await waitState('idle');
      const win = await chatWin();
      const lines = await e.t.chatLines();
      const row = lines.indexOf('local answer = 42');
      await e.t.lua('local w, r = ... vim.api.nvim_set_current_win(w) vim.api.nvim_win_set_cursor(0, { r, 0 })', [win, row + 1]);
      const langs = await e.t.lua<string[]>(`
        local buf = require('caboose.chat').buf()
        local parser = vim.treesitter.get_parser(buf, 'markdown')
        parser:parse(true)
        local out = {}
        for _, c in ipairs(vim.treesitter.get_captures_at_pos(buf, ${row}, 0)) do table.insert(out, c.lang) end
        return out`);
      assert.ok(langs.includes('lua'), `lua injection at the code line: ${langs.join(',')}`);
      assert.equal(await e.t.lua("return vim.treesitter.highlighter.active[require('caboose.chat').buf()] ~= nil"), true);
      await e.t.nvim.input('gy');
      await e.t.waitFor(async () => (await e.t.lua<string>("return vim.fn.getreg('\"')")) === 'local answer = 42\nprint(answer)\n', 'yanked code');
    });

    it('user commands never wait on the host (no rpcrequest on their path)', async () => {
      await e.start({
        initLua: `${SETUP()}
          _G.sync_calls = {}
          local orig = vim.rpcrequest
          vim.rpcrequest = function(...) table.insert(_G.sync_calls, select(2, ...)) return orig(...) end`,
      });
      e.fake.script({ hang: true });
      await e.t.cmd('Caboose hi');
      await waitState('streaming');
      await e.t.cmd('CabooseMode create');
      await e.t.cmd('Caboose queued one');
      await e.t.cmd('CabooseStop');
      await waitState('idle').catch(async (err) => {
        throw new Error(`${err}\n${JSON.stringify(await e.t.notifications())}\n${JSON.stringify(await e.t.lua('return _G.sync_calls'))}`);
      });
      await e.t.cmd('CabooseRestore');
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => /trash is empty/.test(n.msg)), 'restore answered');
      assert.deepEqual(await e.t.lua('return _G.sync_calls'), []);
    });
  });
});

forEachNvim((bin) => {
  describe(`chat windows (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const SETUP_CREATE = `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })`;
    const layout = () => e.t.lua<unknown>('return vim.fn.winlayout()');
    /** The current tab's split windows by role: transcript, input (message area) and the user's. */
    const wins = () =>
      e.t.lua<{ transcript: number[]; input: number[]; other: number[] }>(`
        local chat = require('caboose.chat')
        local out = { transcript = {}, input = {}, other = {} }
        for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
          if vim.api.nvim_win_get_config(w).relative == '' then
            local b = vim.api.nvim_win_get_buf(w)
            table.insert(out[b == chat.buf() and 'transcript' or b == chat.input_buf() and 'input' or 'other'], w)
          end
        end
        return out`);
    const exited = () => new Promise<number | null>((resolve) => (e.t.proc.exitCode !== null ? resolve(e.t.proc.exitCode) : e.t.proc.once('exit', (code) => resolve(code))));
    const withTimeout = <T>(p: Promise<T>, ms: number, what: string) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms))]);
    const openFileAndChat = async (file = 'a.txt') => {
      fs.writeFileSync(path.join(e.t.cwd, file), 'alpha\n');
      await e.t.cmd(`edit ${file}`);
      const fileWin = await e.t.lua<number>('return vim.api.nvim_get_current_win()');
      await e.t.cmd('CabooseChat');
      await e.t.lua('vim.cmd.stopinsert() vim.api.nvim_set_current_win(...)', [fileWin]);
      return fileWin;
    };

    it(':q in the only file window quits Neovim (the chat closes with it)', async () => {
      await e.start({ initLua: SETUP_CREATE });
      await openFileAndChat();
      await e.t.nvim.input(':q<CR>');
      assert.equal(await withTimeout(exited(), 5000, 'Neovim quits'), 0);
    });

    it(':wq writes and quits; :q with unsaved changes is refused (E37) and the chat comes back', async () => {
      await e.start({ initLua: SETUP_CREATE });
      const fileWin = await openFileAndChat();
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved' })");
      await assert.rejects(e.t.cmd('quit'), /E37/);
      await e.t.waitFor(async () => (await wins()).input.length === 1, 'the chat back');
      const w = await wins();
      assert.deepEqual(w.other, [fileWin], 'the file window stays, with its changes');
      assert.equal(w.transcript.length, 1);
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), fileWin, 'the cursor stays in the file window');
      assert.equal(await e.t.lua('return vim.bo.modified'), true);
      await assert.rejects(e.t.cmd('qall'), /E37|E162/);
      await e.t.waitFor(async () => (await wins()).transcript.length === 1, 'the chat back after :qa');
      await e.t.nvim.input(':wq<CR>');
      assert.equal(await withTimeout(exited(), 5000, 'Neovim quits'), 0);
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'a.txt'), 'utf8'), 'unsaved\n');
    });

    it('with several tabs, :q in the last file window of a tab closes that tab and its chat', async () => {
      await e.start({ initLua: SETUP_CREATE });
      await openFileAndChat('a.txt');
      await e.t.cmd('tabnew');
      await openFileAndChat('b.txt');
      await e.t.cmd('quit');
      await e.t.waitFor(async () => (await e.t.lua<number>("return #vim.api.nvim_list_tabpages()")) === 1, 'one tab left');
      const w = await wins();
      assert.equal(w.transcript.length + w.input.length, 2, 'the first tab keeps its chat');
      assert.equal(await e.t.lua('return vim.fn.bufname()'), 'a.txt');
    });

    it('closing the transcript window closes the message area too; :close of the last file window leaves an empty one', async () => {
      await e.start({ initLua: SETUP_CREATE });
      const fileWin = await openFileAndChat();
      const [transcript] = (await wins()).transcript;
      await e.t.lua('vim.api.nvim_set_current_win(...)', [transcript]);
      await e.t.cmd('quit');
      await e.t.waitFor(async () => (await wins()).input.length === 0, 'message area closed');
      assert.deepEqual(await wins(), { transcript: [], input: [], other: [fileWin] });
      await e.t.cmd('CabooseChat');
      await e.t.lua('vim.cmd.stopinsert() vim.api.nvim_set_current_win(...)', [fileWin]);
      await e.t.cmd('close');
      await e.t.waitFor(async () => (await wins()).other.length === 1, 'an empty window beside the chat');
      const w = await wins();
      assert.equal(w.transcript.length + w.input.length, 2, 'the chat stays (closing the last window is not quitting)');
      assert.equal(await e.t.lua('return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(...))', [w.other[0]]), '');
    });

    it('the chat windows keep their buffers (:e there gives E1513); :CabooseChat rebuilds a broken layout', async () => {
      await e.start({ initLua: SETUP_CREATE });
      const fileWin = await openFileAndChat();
      fs.writeFileSync(path.join(e.t.cwd, 'other.txt'), 'other\n');
      const before = await layout();
      const w = await wins();
      for (const win of [w.transcript[0], w.input[0]]) {
        await e.t.lua('vim.api.nvim_set_current_win(...)', [win]);
        await assert.rejects(e.t.cmd('edit other.txt'), /E1513/);
      }
      assert.deepEqual(await layout(), before, 'the layout stays');
      // Forced with !: the transcript's window now shows the file; :CabooseChat puts the chat back together.
      await e.t.lua('vim.api.nvim_set_current_win(...)', [w.transcript[0]]);
      await e.t.cmd('edit! other.txt');
      await e.t.cmd('CabooseChat');
      const after = await wins();
      assert.equal(after.transcript.length, 1);
      assert.equal(after.input.length, 1);
      assert.equal(after.other.length, 2);
      const stacked = await e.t.lua<boolean>(`
        local t, i = ...
        local function walk(n)
          if n[1] == 'leaf' then return false end
          for k, c in ipairs(n[2]) do
            local nx = n[2][k + 1]
            if n[1] == 'col' and c[2] == t and nx and nx[2] == i then return true end
            if walk(c) then return true end
          end
          return false
        end
        return walk(vim.fn.winlayout())`, [after.transcript[0], after.input[0]]);
      assert.equal(stacked, true, 'the message area is right under the transcript');
      assert.equal(await e.t.lua('return vim.wo[...].winbar', [w.transcript[0]]), '', 'the window that took the file lost the chat winbar');
      assert.ok(after.other.includes(fileWin));
    });

    it('the message area gets its height back after :CabooseAudit closes, and from :CabooseChat', async () => {
      await e.start({ initLua: SETUP_CREATE });
      await openFileAndChat();
      const height = async () => e.t.lua<number>('return vim.api.nvim_win_get_height(...)', [(await wins()).input[0]]);
      assert.equal(await height(), 5);
      await e.t.cmd('CabooseAudit');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'caboose_audit', 'the audit split');
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) !== 'caboose_audit', 'the audit split closed');
      await e.t.waitFor(async () => (await height()) === 5, 'input_height again').catch(async (err) => {
        throw new Error(`${err}: ${await height()}`);
      });
      await e.t.lua('vim.api.nvim_win_set_height(..., 11)', [(await wins()).input[0]]);
      await e.t.cmd('CabooseChat');
      assert.equal(await height(), 5, ':CabooseChat restores the layout');
    });

    it('za, zo, zc on a tool call line open and close its details', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'for f in 1 2 3 4 5; do echo line $f; done' } }] }, { text: 'done' });
      await e.t.cmd('Caboose go');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('done'), 'reply');
      const lines = await e.t.chatLines();
      const row = lines.findIndex((l) => l.startsWith('✓ bash')) + 1;
      assert.ok(lines[row].startsWith('  ┆ '), 'details under the tool line');
      const win = await e.t.lua<number>("return vim.fn.win_findbuf(require('caboose.chat').buf())[1]");
      await e.t.lua("local w, r = ... vim.api.nvim_set_current_win(w) vim.api.nvim_win_set_cursor(w, { r, 0 }) vim.v.errmsg = ''", [win, row]);
      const closed = () => e.t.lua<boolean>(`return vim.fn.foldclosed(${row + 1}) ~= -1`);
      assert.equal(await closed(), true, 'folded at first');
      const press = async (keys: string, want: boolean) => {
        await e.t.nvim.input(keys);
        await e.t.waitFor(async () => (await closed()) === want, `${keys}: ${want ? 'closed' : 'open'}`);
        assert.deepEqual(await e.t.lua('return vim.api.nvim_win_get_cursor(0)'), [row, 0], `${keys} keeps the cursor on the tool line`);
      };
      await press('za', false);
      await press('za', true);
      await press('zo', false);
      await press('zc', true);
      assert.equal(await e.t.lua('return vim.v.errmsg'), '', 'no E490');
    });

    it('the winbar gives way when narrow: the title is cut first; mode, state and model stay; grants shrink to a count', async () => {
      await e.start({ initLua: `vim.o.columns = 160 vim.o.lines = 45 ${SETUP_CREATE}` });
      await e.t.cmd('CabooseChat');
      await e.t.lua(`require('caboose.chat').set_status(nil, nil, {
        grants = { 'bash' }, model = 'fake-model-x', title = 'Trial session title',
        usage = { prompt = 10, completion = 5, session_prompt = 60, session_completion = 30 } })`);
      const shown = async () => {
        const raw = await e.t.lua<string>("return require('caboose.chat').status_text()");
        assert.doesNotMatch(raw, /%</, 'no truncation point');
        return raw.replace(/%#[^#]*#|%\*/g, '').replace(/%%/g, '%');
      };
      const width = () => e.t.lua<number>("return vim.api.nvim_win_get_width(vim.fn.win_findbuf(require('caboose.chat').buf())[1])");
      assert.equal(await width(), 64);
      assert.equal(await shown(), '  create  │ fake-model-x │ always: bash │ Trial session title', 'the usage goes before the title is cut below a few words');
      await e.t.lua('vim.o.columns = 80');
      await e.t.waitFor(async () => (await width()) === 40, 'narrower chat');
      await e.t.waitFor(async () => (await shown()) === '  create  │ fake-model-x │ always: bash', 'mode, model and grants at 40 columns').catch(async (err) => {
        throw new Error(`${err}: ${await shown()}`);
      });
      await e.t.lua("require('caboose.chat').set_status('pending_approval', nil, {})");
      assert.equal(await shown(), '  create  │ approval │ fake-model-x', 'the grants go before the model at 40 columns');
      await e.t.lua("require('caboose.chat').set_status(nil, nil, { grants = { 'bash', 'create_file', 'edit_file' } })");
      assert.equal(await e.t.lua<string>('return require(\'caboose.chat\').status_line(61)').then((l) => l.replace(/%#[^#]*#|%\*/g, '')), '  create  │ pending approval │ fake-model-x │ always: 3 tools', 'a count before they go');
      await e.t.lua("require('caboose.chat').set_status(nil, nil, { grants = { 'bash' } })");
      for (const w of [20, 30, 45, 55, 70, 90]) {
        const line = (await e.t.lua<string>(`return require('caboose.chat').status_line(${w})`)).replace(/%#[^#]*#|%\*/g, '');
        assert.ok((await e.t.lua<number>('return vim.api.nvim_strwidth(...)', [line])) <= Math.max(w, 30), `${w}: ${line}`);
        assert.match(line, /^ {2}create {2}│ (pending approval|approval)/, line);
      }
      const wide = (await e.t.lua<string>('return require(\'caboose.chat\').status_line(200)')).replace(/%#[^#]*#|%\*/g, '');
      assert.equal(wide, '  create  │ pending approval │ fake-model-x │ always: bash │ ↑10 ↓5 Σ90 │ Trial session title');
    });

    it('the new-chat hint fits the window (a shorter form when narrow) and keeps "g? lists the keys"', async () => {
      await e.start({ initLua: SETUP_CREATE });
      await e.t.cmd('CabooseChat');
      const hint = () =>
        e.t.lua<string>(`
          local buf = require('caboose.chat').buf()
          local marks = vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_get_namespaces().caboose_chat_hint, 0, -1, { details = true })
          return marks[1] and marks[1][4].virt_text[1][1] or ''`);
      const width = () => e.t.lua<number>("return vim.api.nvim_win_get_width(vim.fn.win_findbuf(require('caboose.chat').buf())[1])");
      const narrow = await hint();
      assert.ok(narrow.length > 0 && narrow.length <= (await width()), `${narrow} fits ${await width()} columns`);
      assert.match(narrow, /g\? lists the keys$/);
      await e.t.lua('vim.o.columns = 220');
      await e.t.waitFor(async () => (await hint()).includes('(or <C-s> in Insert mode)'), 'the long hint when wide');
    });
  });
});

forEachNvim((bin) => {
  describe(`host prestart (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    it('typing a :Caboose command starts the host before <CR>; nothing starts before that', async () => {
      await e.start({ initLua: SETUP() });
      assert.equal(await e.t.lua("return require('caboose.rpc').is_running()"), false);
      await e.t.nvim.input(':echo 1');
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(await e.t.lua("return package.loaded['caboose.rpc'] and require('caboose.rpc').is_running() or false"), false, 'other commands start nothing');
      await e.t.nvim.input('<Esc>:Cabo');
      await e.t.waitFor(async () => (await e.t.lua<boolean>("return package.loaded['caboose.rpc'] ~= nil and require('caboose.rpc').is_running()")), 'host started while typing');
      e.fake.script({ text: 'prestarted reply' });
      await e.t.nvim.input('ose hi<CR>');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('prestarted reply'), 'reply');
    });

    it('host.prestart = false waits for the command', async () => {
      await e.start({ initLua: `require('caboose').setup({ host = { prestart = false } })` });
      await e.t.nvim.input(':Cabo');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(await e.t.lua("return require('caboose.rpc').is_running()"), false);
      await e.t.nvim.input('<Esc>');
    });
  });
});
