import { describe, it, afterEach } from 'node:test';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { waitApprovalFloat } from '../support/approval';
import { SUMMARIZE_INSTRUCTION } from '../../src/agent/context';

type State = { state: string; mode: string };
const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

forEachNvim((bin) => {
  describe(`slash commands and variables (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const waitChat = (re: RegExp, what = String(re)) => e.t.waitFor(async () => re.test(await chat()), what);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === 'idle', 'idle');
    const lastUser = (i: number) => String(e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
    /** Types `text` in the message area and sends it (<CR> in Normal mode). */
    const submit = async (text: string) => {
      await e.t.cmd('CabooseChat');
      await e.t.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(..., "\\n"))', [text]);
      await e.t.nvim.input('<CR>');
    };
    const notes = async () => ((await e.t.notifications()) as { msg: string }[]).map((n) => n.msg).join('\n');

    it('parses commands at the start or alone on a line; paths and MCP prompts are no commands; variables anywhere', async () => {
      await e.start({ initLua: SETUP });
      const parse = (s: string) =>
        e.t.lua<{ action: string | null; arg: string | null; unknown: string | null; attach: string[]; vars: string[] }>(
          `local p = require('caboose.insertables').parse(...)
           local a, v = {}, {}
           for _, x in ipairs(p.attach) do table.insert(a, x.cmd.name .. (x.arg ~= '' and (' ' .. x.arg) or '')) end
           for _, x in ipairs(p.vars) do table.insert(v, x.var.name .. (x.arg and (':' .. x.arg) or '')) end
           return { action = p.action and p.action.name or vim.NIL, arg = p.arg or vim.NIL, unknown = p.unknown or vim.NIL, attach = a, vars = v }`,
          [s],
        );
      assert.deepEqual(await parse('/mode plan'), { action: 'mode', arg: 'plan', unknown: null, attach: [], vars: [] });
      assert.deepEqual(await parse('  /help'), { action: 'help', arg: '', unknown: null, attach: [], vars: [] });
      assert.deepEqual(await parse('/usr/bin is a directory'), { action: null, arg: null, unknown: null, attach: [], vars: [] });
      assert.deepEqual(await parse('/everything:simple-prompt x=1'), { action: null, arg: null, unknown: null, attach: [], vars: [] });
      assert.deepEqual(await parse('/frobnicate this'), { action: null, arg: null, unknown: 'frobnicate', attach: [], vars: [] });
      // /help in the middle of a line is text.
      assert.deepEqual(await parse('what does /help do?'), { action: null, arg: null, unknown: null, attach: [], vars: [] });
      assert.deepEqual(await parse('look:\n/gitdiff staged\n/quickfix\nand /file here'), { action: null, arg: null, unknown: null, attach: ['gitdiff staged', 'quickfix'], vars: [] });
      assert.deepEqual((await parse('see #{buffer}, #buffers and #file:lua/a.lua. #diagnostics:workspace #mcp:s:u a#buffer #include')).vars, [
        'buffer',
        'buffers',
        'file:lua/a.lua',
        'diagnostics:workspace',
      ]);
    });

    it('/help lists commands and variables in the chat without asking the model; an unknown /word goes as text with a hint', async () => {
      await e.start({ initLua: SETUP });
      await submit('/help');
      await waitChat(/### Slash commands[\s\S]*`\/gitdiff \[staged\]`[\s\S]*### Variables[\s\S]*`#selection`/, 'the help in the chat');
      assert.equal(e.fake.chatRequests.length, 0, '/help never reaches the model');
      assert.equal(await e.t.lua<string>("return table.concat(vim.api.nvim_buf_get_lines(require('caboose.chat').input_buf(), 0, -1, false), '\\n')"), '', 'the message area is cleared');
      e.fake.script({ text: 'ok' });
      await submit('/frobnicate the widget');
      await e.fake.waitForRequest(1);
      assert.equal(lastUser(0), '/frobnicate the widget');
      assert.match(await notes(), /\/frobnicate is not a caboose command: sent as text \(\/help lists them\)/);
      e.fake.script({ text: 'ok2' });
      await idle();
      await submit('/usr/bin holds binaries');
      await e.fake.waitForRequest(2);
      assert.equal(lastUser(1), '/usr/bin holds binaries');
      assert.doesNotMatch(await notes(), /\/usr is not/);
    });

    it('/mode, /model, /undo and /clear act instead of sending', async () => {
      await e.start({ initLua: SETUP });
      await submit('/mode plan');
      await e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).mode === 'plan', 'mode plan');
      await e.t.lua(`_G.picked = nil
        require('caboose.model').pick = function(opts) _G.picked = 'model picker' end
        require('caboose.ui.checkpoints').rewind = function() _G.rewound = true end`);
      await submit('/model');
      await e.t.waitFor(() => e.t.lua<boolean>("return _G.picked == 'model picker'"), 'the model picker');
      await submit('/undo');
      await e.t.waitFor(() => e.t.lua<boolean>('return _G.rewound == true'), ':CabooseUndo path');
      e.fake.script({ text: 'first reply' });
      await submit('hello');
      await waitChat(/first reply/);
      await idle();
      await submit('/clear');
      await e.t.waitFor(async () => !/first reply/.test(await chat()), 'a new chat');
      assert.equal(e.fake.chatRequests.length, 1, 'no command reached the model');
    });

    it('on an empty chat /compact, /undo, /mode with a bad mode and /quickfix with an empty list say so and never crash', async () => {
      await e.start({ initLua: SETUP });
      await submit('/compact');
      await e.t.waitFor(async () => /nothing to compact yet/.test(await notes()), '/compact: nothing yet');
      await submit('/undo');
      await e.t.waitFor(async () => /nothing to rewind/.test(await notes()), '/undo: nothing to rewind');
      await submit('/mode bogus');
      await e.t.waitFor(async () => /unknown mode bogus \(plan, create, auto-edit, chug\)/.test(await notes()), '/mode: the modes');
      assert.equal((await e.t.lua<State>("return require('caboose').state()")).mode, 'chug', 'the mode is unchanged');
      assert.equal(e.fake.chatRequests.length, 0, 'no command reached the model');
      e.fake.script({ text: 'empty list' });
      await e.t.lua('vim.fn.setqflist({})');
      await submit('/quickfix');
      await e.fake.waitForRequest(1);
      assert.match(lastUser(0), /\/quickfix \(1 line\):\n```\nthe quickfix list is empty\n```/);
    });

    it('/compact summarizes the conversation now', async () => {
      await e.start({ initLua: SETUP });
      e.fake.script({ text: 'one' }, { text: 'two' }, { text: 'SUMMARY of it all' }, { text: 'three' });
      await submit('first');
      await waitChat(/one/);
      await idle();
      await submit('second');
      await waitChat(/two/);
      await idle();
      await submit('/compact');
      const req = await e.fake.waitForRequest(3);
      const msgs = req.body!.messages!;
      assert.equal(msgs.at(-1)!.content, SUMMARIZE_INSTRUCTION);
      await waitChat(/compacting the conversation \(\/compact\)/);
      await waitChat(/compacted \d+ earlier messages into a summary/);
      await idle();
      await submit('third');
      const next = await e.fake.waitForRequest(4);
      assert.ok(next.body!.messages!.some((m) => String(m.content).includes('SUMMARY of it all')), 'the next request carries the summary');
      assert.ok(!next.body!.messages!.some((m) => m.content === 'first'), 'the summarized turn is gone');
    });

    it('every variable reaches the model with path, range and filetype; the transcript shows a label; send() expands them too', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      execFileSync('git', ['init', '-q'], { cwd });
      fs.writeFileSync(path.join(cwd, 'a.lua'), 'local a = 1\nlocal b = 2\nlocal c = 3\n');
      fs.writeFileSync(path.join(cwd, 'notes.txt'), 'note body\n');
      execFileSync('git', ['add', '.'], { cwd });
      execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'init'], { cwd });
      fs.writeFileSync(path.join(cwd, 'a.lua'), 'local a = 1\nlocal b = 22\nlocal c = 3\n');
      fs.writeFileSync(path.join(cwd, 'other.py'), 'print(1)\n');
      await e.t.cmd('edit other.py');
      await e.t.cmd('edit a.lua');
      await e.t.lua(`vim.api.nvim_buf_set_lines(0, 2, 3, false, { 'local c = 333 -- unsaved' })
        vim.api.nvim_buf_set_mark(0, '<', 2, 0, {}) vim.api.nvim_buf_set_mark(0, '>', 3, 0, {})
        local ns = vim.api.nvim_create_namespace('t')
        vim.diagnostic.set(ns, 0, { { lnum = 1, col = 6, message = 'b is odd', severity = vim.diagnostic.severity.WARN, source = 'lint' } })
        vim.fn.setqflist({ { filename = 'a.lua', lnum = 3, col = 1, text = 'qf entry here', type = 'E' } })`);
      e.fake.script({ text: 'seen all' });
      const sent = await e.t.lua<boolean>(
        "return require('caboose').send('look at #{buffer} #buffers #selection #diagnostics #gitdiff #quickfix and #file:notes.txt')",
      );
      assert.equal(sent, true);
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.match(msg, /^look at #\{buffer\}/);
      assert.match(msg, /File a\.lua \(3 lines, lua, unsaved changes in the buffer, sha256 [0-9a-f]{64}\):\n```lua\nlocal a = 1\nlocal b = 22\nlocal c = 333 -- unsaved\n```/);
      assert.match(msg, /File other\.py \(1 line, python, sha256/);
      assert.match(msg, /Selection from a\.lua \(lines 2-3, lua\):\n```lua\nlocal b = 22\nlocal c = 333 -- unsaved\n```/);
      assert.match(msg, /#diagnostics a\.lua \(1 line\):\n```\na\.lua:2:7: WARN: b is odd \[lint\]\n```/);
      assert.match(msg, /#gitdiff \(\d+ lines, diff\):\n````?diff\n[\s\S]*-local b = 2\n\+local b = 22/);
      assert.match(msg, /#quickfix \(1 line\):\n```\na\.lua:3:1: E: qf entry here\n```/);
      assert.match(msg, /File notes\.txt \(1 line(?:, text)?, sha256 [0-9a-f]{64}\):\n```(?:text)?\nnote body\n```/);
      await waitChat(/seen all/);
      const text = await chat();
      for (const label of [
        /📎 #buffer a\.lua \(3 lines, unsaved\)/,
        /📎 #buffers other\.py \(1 line\)/,
        /📎 #selection a\.lua:2-3/,
        /📎 #diagnostics a\.lua \(1 line\)/,
        /📎 #gitdiff \(\d+ lines\)/,
        /📎 #quickfix \(1 line\)/,
        /📎 #file:notes\.txt notes\.txt \(1 line\)/,
      ])
        assert.match(text, label);
    });

    it('paths with braces, %, spaces and unicode attach as typed; `@word{` in text is no error; /gitdiff outside a repository says so in one line', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      fs.writeFileSync(path.join(cwd, 'a{b}.lua'), 'braces body\n');
      fs.writeFileSync(path.join(cwd, '100%.txt'), 'percent body\n');
      fs.writeFileSync(path.join(cwd, 'my ünï file.lua'), 'unicode body\n');
      e.fake.script({ text: 'seen' }, { text: 'no diff' });
      await submit('see #{file:a{b}.lua}, #file:100%.txt and #{file:my ünï file.lua}; mail @bob{x');
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      // #file: is sent with its filetype, as #buffer is (.txt has none on 0.10, text on 0.12).
      assert.match(msg, /File a\{b\}\.lua \(1 line, lua, sha256 [0-9a-f]+\):\n```lua\nbraces body/);
      assert.match(msg, /File 100%\.txt \(1 line(?:, text)?, sha256 [0-9a-f]+\):\n```(?:text)?\npercent body/);
      assert.match(msg, /File my ünï file\.lua \(1 line, lua, sha256 [0-9a-f]+\):\n```lua\nunicode body/);
      await waitChat(/📎 #file:a\{b\}\.lua a\{b\}\.lua \(1 line\)/);
      await idle();
      assert.ok(!fs.existsSync(path.join(cwd, '.git')), 'precondition: the workspace is no git repository');
      await submit('/gitdiff\nwhat changed?');
      await e.fake.waitForRequest(2);
      await e.t.waitFor(async () => /\/gitdiff: nothing attached: not a git repository/.test(await notes()), 'the one-line reason');
      assert.ok(!/usage: git diff/.test(await notes()), "git's usage text is not shown");
    });

    it('#buffers with more buffers than one message carries: the first 50 go, the rest are named in a warning', async () => {
      await e.start({ initLua: SETUP });
      await e.t.lua(`for i = 1, 53 do
          local p = string.format('f%02d.txt', i)
          vim.fn.writefile({ 'body ' .. i }, p)
          vim.cmd('badd ' .. p)
          vim.fn.bufload(vim.fn.bufnr(p))
        end`);
      e.fake.script({ text: 'many' });
      await e.t.lua("require('caboose').send('all of #buffers')");
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.ok(msg.includes('body 50'), 'the 50th is attached');
      assert.ok(!msg.includes('body 51'), 'the 51st is not');
      assert.match(await notes(), /only 50 attachments go with one message; not attached: f51\.txt, f52\.txt, f53\.txt/);
    });

    it('a variable too large is cut with a notice the model reads and the label shows', async () => {
      await e.start({ initLua: SETUP });
      await e.t.lua(`local items = {}
        for i = 1, 4000 do table.insert(items, { filename = 'f.txt', lnum = i, col = 1, text = string.rep('x', 40) .. i }) end
        vim.fn.setqflist(items)`);
      e.fake.script({ text: 'big' });
      await submit('what about #quickfix');
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.match(msg, /#quickfix \(4000 lines, cut at 100000 characters\):/);
      assert.match(msg, /\[cut: the first 100000 of \d+ characters are shown; the rest was not sent\]/);
      assert.ok(!msg.includes('x4000'), 'the tail is not sent');
      await waitChat(/📎 #quickfix \(4000 lines, cut at 100000 characters\)/);
    });

    it('/file and /buffer pick (vim.ui.select); /diagnostics, /gitdiff and /quickfix attach', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      fs.writeFileSync(path.join(cwd, 'pick.txt'), 'picked file\n');
      execFileSync('git', ['init', '-q'], { cwd });
      fs.writeFileSync(path.join(cwd, 'staged.txt'), 'staged line\n');
      execFileSync('git', ['add', 'staged.txt'], { cwd });
      await e.t.cmd('edit scratch.md');
      await e.t.lua(`vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'never saved' })
        _G.prompts = {}
        vim.ui.select = function(items, opts, cb)
          table.insert(_G.prompts, opts.prompt)
          for _, it in ipairs(items) do
            local label = opts.format_item and opts.format_item(it) or it
            if label:match('pick%.txt') or label:match('scratch%.md') then return cb(it) end
          end
          cb(nil)
        end
        vim.fn.setqflist({ { filename = 'pick.txt', lnum = 1, col = 1, text = 'qf' } })
        vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 0, col = 0, message = 'scratch problem', severity = vim.diagnostic.severity.ERROR } })`);
      e.fake.script({ text: 'got them' });
      await submit('/file\n/buffer\n/quickfix\n/diagnostics\n/gitdiff staged\nuse these');
      await e.fake.waitForRequest(1);
      const msg = lastUser(0);
      assert.match(msg, /^\/file\n\/buffer\n\/quickfix\n\/diagnostics\n\/gitdiff staged\nuse these/);
      assert.match(msg, /\/diagnostics scratch\.md \(1 line\):\n```\nscratch\.md:1:1: ERROR: scratch problem\n```/);
      assert.match(msg, /\/gitdiff \(staged\) \(\d+ lines, diff\):\n```diff\n[\s\S]*\+staged line/);
      assert.match(msg, /File pick\.txt \(1 line(?:, text)?, sha256 [0-9a-f]{64}\):\n```(?:text)?\npicked file\n```/);
      assert.match(msg, /never saved/);
      assert.match(msg, /\/quickfix \(1 line\):\n```\npick\.txt:1:1: qf\n```/);
      assert.deepEqual(await e.t.lua('return _G.prompts'), ['Attach file', 'Attach buffer']);
      await waitChat(/got them/);
      const text = await chat();
      assert.match(text, /📎 \/file pick\.txt \(1 line\)/);
      assert.match(text, /📎 \/buffer scratch\.md \(1 line, unsaved\)/);
    });
  });
});

forEachNvim((bin) => {
  describe(`/fetch goes through the fetch tool's approval and rules (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    let server: http.Server | undefined;
    afterEach(async () => {
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      server = undefined;
    });
    const serve = async () => {
      server = http.createServer((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('page body from the server\n');
      });
      await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
      return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/page`;
    };

    it('asks (create mode), then attaches the page; the label names the URL', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = 'float' }, fetch_allow_hosts = { '127.0.0.1' } })` });
      const url = await serve();
      e.fake.script({ text: 'read it' });
      await e.t.lua('require("caboose").send(...)', [`/fetch ${url}\nsummarize`]);
      await waitApprovalFloat(e.t, 'fetch');
      assert.equal(e.fake.chatRequests.length, 0, 'nothing goes to the model before the approval');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.fake.waitForRequest(1);
      const msg = String(e.fake.chatRequests[0].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.match(msg, new RegExp(`Fetched ${url.replace(/[.?]/g, '\\$&')} \\(HTTP 200, text/plain[^)]*\\):\\n\`\`\`\\npage body from the server`));
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(`📎 /fetch ${url} (1 line)`), 'the label');
    });

    it('a secret file (secret_globs) named by #file:, /file or #buffer asks first, in chug mode too, as read_file does', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, approval = { style = 'float' } })` });
      fs.writeFileSync(path.join(e.t.cwd, '.env'), 'API_TOKEN=hunter2-secret\n');
      e.fake.script({ text: 'refused' }, { text: 'read' });
      await e.t.lua('require("caboose").send(...)', ['check #file:.env please']);
      const float = await waitApprovalFloat(e.t, 'read_file');
      assert.match(float.text + float.title, /\.env/);
      assert.equal(e.fake.chatRequests.length, 0, 'nothing goes to the model before the answer');
      await e.t.lua("require('caboose').approval_respond('reject')");
      await e.fake.waitForRequest(1);
      const refused = String(e.fake.chatRequests[0].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.ok(!refused.includes('hunter2'), 'a refused secret is not sent');
      assert.match(refused, /could not be read: rejected_by_user/);
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle');
      await e.t.lua('require("caboose").send(...)', ['/file .env\nnow read it']);
      await waitApprovalFloat(e.t, 'read_file');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.fake.waitForRequest(2);
      const allowed = String(e.fake.chatRequests[1].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.match(allowed, /API_TOKEN=hunter2-secret/);
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle');
      // The open .env buffer: refused, its text does not stand in for the file.
      await e.t.cmd('edit .env');
      e.fake.script({ text: 'buffer refused' });
      await e.t.lua('require("caboose").send(...)', ['and #buffer']);
      await waitApprovalFloat(e.t, 'read_file');
      await e.t.lua("require('caboose').approval_respond('reject')");
      await e.fake.waitForRequest(3);
      const buffer = String(e.fake.chatRequests[2].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.ok(!buffer.includes('hunter2'), "a refused secret buffer's text is not sent");
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle');
      await e.t.lua("vim.api.nvim_buf_set_mark(0, '<', 1, 0, {}) vim.api.nvim_buf_set_mark(0, '>', 1, 0, {})");
      e.fake.script({ text: 'selection refused' });
      await e.t.lua('require("caboose").send(...)', ['and #selection']);
      await waitApprovalFloat(e.t, 'read_file');
      await e.t.lua("require('caboose').approval_respond('reject')");
      await e.fake.waitForRequest(4);
      const selection = String(e.fake.chatRequests[3].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.ok(!selection.includes('hunter2'), 'a refused selection from a secret file is not sent');
      assert.match(selection, /#selection from \.env, but it could not be read: rejected_by_user/);
    });

    it('the fetch rules apply: a private host not allowed is not attached, and the label says why', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })` });
      const url = await serve();
      e.fake.script({ text: 'no page' });
      await e.t.lua('require("caboose").send(...)', [`/fetch ${url}`]);
      await e.fake.waitForRequest(1);
      const msg = String(e.fake.chatRequests[0].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.match(msg, /the fetch failed/);
      assert.ok(!msg.includes('page body from the server'));
      await e.t.waitFor(async () => new RegExp(`📎 /fetch ${url.replace(/[.?]/g, '\\$&')} — not attached`).test((await e.t.chatLines()).join('\n')), 'the label');
    });
  });
});

forEachNvim((bin) => {
  describe(`completion of /commands and #variables (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('the built-in popup opens after / at the start of a line and after #; the omnifunc completes them', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('CabooseChat');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'markdown', 'the markdown filetype');
      assert.match(await e.t.lua<string>('return vim.bo.omnifunc'), /caboose\.insertables\.complete/);
      await e.t.nvim.input('a/');
      await e.t.waitFor(async () => (await e.t.lua<number>('return vim.fn.pumvisible()')) === 1, 'menu after /');
      const words = await e.t.lua<string[]>("return vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items)");
      for (const w of ['/help', '/clear', '/mode', '/model', '/undo', '/compact', '/file', '/buffer', '/diagnostics', '/gitdiff', '/fetch', '/quickfix', '/explain', '/review']) assert.ok(words.includes(w), w);
      await e.t.nvim.input('he<C-n><Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.api.nvim_get_current_line()')) === '/help', '/help completed');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { '' })");
      await e.t.nvim.input('afix #');
      await e.t.waitFor(async () => (await e.t.lua<number>('return vim.fn.pumvisible()')) === 1, 'menu after #');
      await e.t.nvim.input('dia<C-n><Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.api.nvim_get_current_line()')) === 'fix #diagnostics', '#diagnostics completed');
      // The omnifunc (<C-x><C-o>): braces, arguments; `@` still completes paths.
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'see #{bu' }) vim.api.nvim_win_set_cursor(0, { 1, 8 })");
      assert.equal(await e.t.lua<number>("return require('caboose.insertables.complete').omnifunc(1, '')"), 4);
      assert.deepEqual(
        (await e.t.lua<{ word: string }[]>("return require('caboose.insertables.complete').omnifunc(0, '#{bu')")).map((i) => i.word),
        ['#{buffer}', '#{buffers}'],
      );
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'x #gitdiff:' }) vim.api.nvim_win_set_cursor(0, { 1, 11 })");
      assert.deepEqual(
        (await e.t.lua<{ word: string }[]>("return require('caboose.insertables.complete').omnifunc(0, '#gitdiff:')")).map((i) => i.word),
        ['#gitdiff:staged'],
      );
      // Mid-line `/` is text: no command completion there.
      assert.equal(await e.t.lua("return require('caboose.insertables.complete').candidates('see /he')"), null);
    });

    // UI pass: keys arriving in one burst (tmux, ssh, a mapping) give one TextChangedI, after `#sel`: the
    // popup waited for a line ending in `#` and never opened, so `#sel` went out as text.
    it('the popup opens when `#sel` or `/ex` arrive in one burst of keys', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('CabooseChat');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'markdown', 'the markdown filetype');
      const menu = () => e.t.lua<string[]>("return vim.fn.pumvisible() == 1 and vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items) or {}");
      await e.t.nvim.input('afix #sel');
      await e.t.waitFor(async () => (await menu()).includes('#selection'), 'the menu after a burst ending in #sel');
      await e.t.nvim.input('<C-n><C-y><Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.api.nvim_get_current_line()')) === 'fix #selection', '#selection completed');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { '' })");
      await e.t.nvim.input('a/ex');
      await e.t.waitFor(async () => (await menu()).includes('/explain'), 'the menu after a burst ending in /ex');
      await e.t.nvim.input('<C-e><Esc>');
      // Without a trigger typed, words alone open nothing.
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { '' })");
      await e.t.nvim.input('aplain words here');
      for (let i = 0; i < 5; i++) await e.t.lua('return 1');
      assert.deepEqual(await menu(), []);
    });

    // UI pass: `#file:` offered only its own name, never a path (`#image:` and `@` complete paths).
    it('#file: completes paths in the popup as it is typed (and for blink.cmp / nvim-cmp)', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(path.join(e.t.cwd, 'main.lua'), 'return 1\n');
      fs.mkdirSync(path.join(e.t.cwd, 'lua'), { recursive: true });
      fs.writeFileSync(path.join(e.t.cwd, 'lua', 'mod.lua'), 'return 2\n');
      await e.t.cmd('CabooseChat');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'markdown', 'the markdown filetype');
      const menu = () => e.t.lua<string[]>("return vim.fn.pumvisible() == 1 and vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items) or {}");
      await e.t.nvim.input('asee #file:m');
      const words = await e.t.waitFor(async () => {
        const w = await menu();
        return w.includes('#file:main.lua') ? w : null;
      }, 'paths after #file:');
      assert.ok(!words.includes('#file:'), JSON.stringify(words));
      await e.t.nvim.input('<C-n><C-y> and <Esc>');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.api.nvim_get_current_line()')) === 'see #file:main.lua and ', '#file:main.lua completed');
      const c = await e.t.lua<{ col: number; items: { word: string }[] }>("return require('caboose.insertables.complete').candidates('x #{file:lu')");
      assert.equal(c.col, 2);
      assert.deepEqual(c.items.map((i) => i.word), ['#{file:lua/']);
    });

    it('blink.cmp source: new/enabled/get_trigger_characters/get_completions as blink documents them', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('CabooseChat');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { '/com' }) vim.api.nvim_win_set_cursor(0, { 1, 4 })");
      const r = await e.t.lua<{ enabled: boolean; triggers: string[]; res: { items: { label: string; insertText: string; kind: number; textEdit: { newText: string; range: { start: { line: number; character: number }; end: { line: number; character: number } } } }[]; is_incomplete_forward: boolean; is_incomplete_backward: boolean }; cancel: string; outside: boolean }>(
        `local src = require('caboose.insertables.blink').new({}, {})
         local out
         -- As in Insert mode after typing '/com': the cursor (1-based row, 0-based col) after the 4th byte.
         local ctx = { bufnr = vim.api.nvim_get_current_buf(), line = vim.api.nvim_get_current_line(), cursor = { 1, 4 } }
         local cancel = src:get_completions(ctx, function(res) out = res end)
         local enabled = src:enabled()
         vim.cmd('new')
         local outside = src:enabled()
         vim.cmd('close')
         return { enabled = enabled, triggers = src:get_trigger_characters(), res = out, cancel = type(cancel), outside = outside }`,
      );
      assert.equal(r.enabled, true);
      assert.equal(r.outside, false, 'not enabled outside the message area');
      assert.deepEqual(r.triggers, ['/', '#']);
      assert.equal(r.cancel, 'function');
      assert.equal(r.res.is_incomplete_forward, false);
      // The command, then the built-in prompt /commit (caboose.prompts).
      assert.deepEqual(r.res.items.map((i) => i.insertText), ['/compact', '/commit']);
      assert.equal(r.res.items[0].kind, 3, 'CompletionItemKind.Function');
      assert.equal(r.res.items[1].kind, 3, 'a prompt is a Function too');
      assert.deepEqual(r.res.items[0].textEdit.range, { start: { line: 0, character: 0 }, end: { line: 0, character: 4 } });
    });

    it('nvim-cmp source: new/is_available/get_trigger_characters/get_keyword_pattern/complete as nvim-cmp documents them', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('CabooseChat');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'fix #quick' }) vim.api.nvim_win_set_cursor(0, { 1, 10 })");
      const r = await e.t.lua<{ available: boolean; triggers: string[]; pattern: string; res: { items: { label: string; insertText: string; kind: number; textEdit: { range: { start: { character: number } } } }[]; isIncomplete: boolean } }>(
        `local src = require('caboose.insertables.cmp').new()
         local out
         local c = vim.api.nvim_win_get_cursor(0)
         src:complete({ context = { cursor_before_line = vim.api.nvim_get_current_line():sub(1, c[2]), cursor = { row = c[1], col = c[2] + 1 }, bufnr = 0 } }, function(res) out = res end)
         return { available = src:is_available(), triggers = src:get_trigger_characters(), pattern = src:get_keyword_pattern(), res = out }`,
      );
      assert.equal(r.available, true);
      assert.deepEqual(r.triggers, ['/', '#']);
      assert.equal(typeof r.pattern, 'string');
      assert.equal(r.res.isIncomplete, false);
      assert.deepEqual(r.res.items.map((i) => i.insertText), ['#quickfix']);
      assert.equal(r.res.items[0].textEdit.range.start.character, 4);
    });

    for (const [plugin, envVar, mod] of [
      ['blink.cmp', 'CABOOSE_TEST_BLINK_CMP', 'blink'],
      ['nvim-cmp', 'CABOOSE_TEST_NVIM_CMP', 'cmp'],
    ] as const) {
      const dir = process.env[envVar];
      it(`registers with the real ${plugin} when it is installed`, { skip: dir && fs.existsSync(dir) ? false : `skipped: ${plugin} not found at $${envVar} (${dir ?? 'unset'})` }, async () => {
        const setup = mod === 'blink' ? "require('blink.cmp').setup({ fuzzy = { implementation = 'lua' } })" : "require('cmp').setup({ sources = { { name = 'buffer' } } })";
        await e.start({ initLua: `vim.opt.rtp:prepend(${JSON.stringify(dir)})\n${setup}\n${SETUP}` });
        await e.t.cmd('CabooseChat');
        const state = await e.t.lua<{ blink: boolean; cmp: boolean }>("return require('caboose.insertables.sources').register()");
        assert.equal(state[mod], true, `${plugin} has the caboose source`);
        if (mod === 'cmp') {
          const names = await e.t.lua<string[]>("return vim.tbl_map(function(s) return s.name end, require('cmp.config').get().sources)");
          assert.equal(names[0], 'caboose', 'the message area lists it first');
        } else {
          assert.equal(await e.t.lua<boolean>("return require('blink.cmp.config').sources.providers.caboose ~= nil"), true);
        }
        // The plugin itself offers our items in the message area (markdown once its parser is loaded).
        await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'markdown', 'the markdown filetype');
        await e.t.nvim.input('a/he');
        await e.t.waitFor(() => e.t.lua<boolean>("return vim.fn.mode() == 'i' and vim.api.nvim_get_current_line() == '/he'"), 'typed /he');
        const labels = await e.t.waitFor(async () => {
          const l = await e.t.lua<string[]>(
            mod === 'cmp'
              ? "local cmp = require('cmp') if not cmp.visible() then cmp.complete() end return vim.tbl_map(function(en) return en:get_completion_item().label end, cmp.get_entries())"
              : "local b = require('blink.cmp') if not b.is_menu_visible() then b.show() end return vim.tbl_map(function(i) return i.label end, b.get_items())",
          );
          return l.includes('/help') ? l : null;
        }, `${plugin} offers /help`);
        assert.ok(labels.includes('/help'));
        await e.t.nvim.input('<Esc>');
      });
    }
  });
});

forEachNvim((bin) => {
  describe(`export (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it(':CabooseExport writes the chat (messages, labels, code intact, tool calls summarized); never overwrites; ! opens a buffer; /export path', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(path.join(e.t.cwd, 'a.txt'), 'alpha\nbeta\n');
      const code = '```lua\nlocal x = 1\n\n\nreturn x\n```';
      e.fake.script({ toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] }, { text: `Read it.\n\n${code}` });
      await e.t.lua("require('caboose').send('show @a.txt')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('return x'), 'the reply');
      await e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === 'idle', 'idle');
      await e.t.cmd('CabooseRename Parser chat: one');
      const file = path.join(e.t.cwd, 'parser-chat-one.md');
      await e.t.cmd('CabooseExport');
      await e.t.waitFor(async () => fs.existsSync(file), `the export at ${file}`);
      const md = fs.readFileSync(file, 'utf8');
      assert.match(md, /^# Parser chat: one\n/);
      assert.match(md, /## You\n\nshow @a\.txt\n> 📎 @a\.txt a\.txt \(2 lines\)/);
      assert.match(md, /- ✓ read_file a\.txt/);
      assert.ok(md.includes(`Read it.\n\n${code}`), 'the code block is intact');
      assert.ok(!md.includes('alpha'), 'tool output is summarized, not exported');
      // Again: a new name, the first file untouched.
      await e.t.cmd('CabooseExport');
      await e.t.waitFor(async () => fs.existsSync(path.join(e.t.cwd, 'parser-chat-one-2.md')), 'the second export');
      // An explicit path that exists is not overwritten.
      fs.writeFileSync(path.join(e.t.cwd, 'keep.md'), 'mine\n');
      await e.t.cmd('CabooseExport keep.md');
      await e.t.waitFor(async () => /keep\.md exists: not overwritten/.test(JSON.stringify(await e.t.notifications())), 'the refusal');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'keep.md'), 'utf8'), 'mine\n');
      // A link (even a dangling one) is not written through.
      const target = path.join(e.t.cwd, 'elsewhere', 'target.md');
      fs.symlinkSync(target, path.join(e.t.cwd, 'link.md'));
      await e.t.cmd('CabooseExport link.md');
      await e.t.waitFor(async () => /link\.md exists: not overwritten/.test(JSON.stringify(await e.t.notifications())), 'the refusal of the link');
      assert.ok(!fs.existsSync(target), 'nothing written through the link');
      await e.t.cmd('CabooseExport!');
      await e.t.waitFor(async () => (await e.t.lua<string>("return vim.bo.filetype == 'markdown' and vim.bo.buftype == '' and vim.api.nvim_buf_get_lines(0, 0, 1, false)[1] or ''")) === '# Parser chat: one', 'the export buffer');
      await e.t.lua("require('caboose').send('/export out/chat.md')");
      await e.t.waitFor(async () => fs.existsSync(path.join(e.t.cwd, 'out', 'chat.md')), '/export out/chat.md');
      assert.equal(e.fake.chatRequests.length, 2, '/export never reaches the model');
    });
  });
});

forEachNvim((bin) => {
  describe(`MCP prompts and resources in the completion (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const EVERYTHING = path.join(__dirname, '..', '..', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
    it('after / and #, the popup offers /server:prompt and #mcp:server:uri next to ours', { skip: fs.existsSync(EVERYTHING) ? false : `skipped: the MCP reference server not found at ${EVERYTHING}` }, async () => {
      const server = { command: process.execPath, args: [EVERYTHING, 'stdio'] };
      await e.start({
        initLua: `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, mcp = { servers = { everything = vim.json.decode(${JSON.stringify(JSON.stringify(server))}) }, start_timeout_ms = 30000 } })`,
      });
      await e.t.cmd('CabooseChat');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'markdown', 'the markdown filetype');
      // The host runs (prestarted on InsertEnter); the first `/` asks for the items, the menu shows them when they come.
      await e.t.lua("require('caboose')._start_host()");
      await e.t.nvim.input('a/');
      const words = await e.t.waitFor(async () => {
        const w = await e.t.lua<string[]>("return vim.fn.pumvisible() == 1 and vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items) or {}");
        return w.includes('/everything:args-prompt') ? w : null;
      }, 'the MCP prompt in the menu', 40_000);
      assert.ok(words.includes('/help'), 'ours too');
      await e.t.nvim.input('<Esc>');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { '' })");
      await e.t.nvim.input('asee #');
      const res = await e.t.waitFor(async () => {
        const w = await e.t.lua<string[]>("return vim.fn.pumvisible() == 1 and vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({ 'items' }).items) or {}");
        return w.find((x) => x.startsWith('#mcp:everything:')) ? w : null;
      }, 'an MCP resource in the menu');
      assert.ok(res.includes('#buffer'));
      await e.t.nvim.input('<Esc>');
    });
  });
});
