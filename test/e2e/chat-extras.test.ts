/**
 * Issue 22's debug view, images and progress, end to end in headless Neovim against the fake server.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { forEachNvim, REPO_ROOT } from '../support/nvim';
import { useE2E } from '../support/e2e';

type State = { state: string; mode: string };
const KEY = 'sk-caboose-FAKEKEY-0123456789abcdef';
const HEADER_SECRET = 'hdr-SECRET-9876543210';

/** A tiny valid PNG (1×1, red) and the JPEG signature with filler bytes. */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108020000009077' + '53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082', 'hex');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(2000, 7), Buffer.from([0xff, 0xd9])]);

forEachNvim((bin) => {
  describe(`:CabooseDebug (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === 'idle', 'idle');
    const notes = async () => ((await e.t.notifications()) as { msg: string }[]).map((n) => n.msg).join('\n');
    const debugLines = async () => {
      await e.t.cmd('CabooseDebug');
      return e.t.waitFor(async () => {
        const lines = await e.t.lua<string[] | null>("local b = vim.fn.bufnr('caboose://debug') if b == -1 then return vim.NIL end return vim.api.nvim_buf_get_lines(b, 0, -1, false)");
        return lines && lines.length > 1 ? lines : null;
      }, 'the debug buffer');
    };
    /** The fenced block after the heading starting with `heading`. */
    const block = (lines: string[], heading: string): string => {
      const at = lines.findIndex((l) => l.startsWith(heading));
      assert.ok(at >= 0, `heading ${heading}`);
      const open = lines.indexOf('```json', at);
      const close = lines.indexOf('```', open + 1);
      return lines.slice(open + 1, close).join('\n');
    };

    it('says when there was no request yet; then shows the exact JSON sent and the response summary, every secret masked', async () => {
      await e.start({
        env: { OPENAI_API_KEY: KEY },
        initLua: `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0, headers = { ['X-Api-Key'] = '${HEADER_SECRET}', ['X-Trace'] = 'visible-trace' } } })`,
      });
      await e.t.cmd('CabooseDebug');
      await e.t.waitFor(async () => /no request to the model in this chat yet/.test(await notes()), 'the "no request yet" notice');
      assert.equal(await e.t.lua<number>("return vim.fn.bufnr('caboose://debug')"), -1, 'no buffer without a request');

      e.fake.script({ text: 'Hello there.', usage: { prompt_tokens: 11, completion_tokens: 3 } });
      // The key also appears in a message: masked there too.
      await e.t.lua(`require('caboose').send('my key is ${KEY}, keep it')`);
      const req = await e.fake.waitForRequest(1);
      assert.equal(req.headers.authorization, `Bearer ${KEY}`, 'precondition: the key went in the Authorization header');
      assert.equal(req.headers['x-api-key'], HEADER_SECRET, 'precondition: the configured secret header went');
      await idle();

      const lines = await debugLines();
      const text = lines.join('\n');
      assert.ok(!text.includes(KEY), 'the API key never reaches the buffer');
      assert.ok(!text.includes(HEADER_SECRET), 'a credential header never reaches the buffer');
      assert.match(text, /"Authorization": "Bearer \[redacted\]"/);
      assert.match(text, /"X-Api-Key": "\[redacted\]"/);
      assert.match(text, /"X-Trace": "visible-trace"/);
      // UI pass: the headers read as sent (vim.json.encode wrote `application\/json`).
      assert.match(text, /"Content-Type": "application\/json"/);
      assert.doesNotMatch(text, /\\\//, 'no escaped slash');
      assert.match(text, /`POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions`/);
      const body = JSON.parse(block(lines, '## Request body')) as Record<string, unknown>;
      const sent = JSON.parse(req.rawBody.split(KEY).join('[redacted]')) as Record<string, unknown>;
      assert.deepEqual(body, sent, 'the JSON shown is the body the server received (the key masked)');
      assert.ok(Array.isArray((body as { tools?: unknown[] }).tools) && (body as { tools: unknown[] }).tools.length > 0, 'tools included');
      assert.match(text, /my key is \[redacted\], keep it/);
      assert.match(text, /- status: 200/);
      assert.match(text, /- finish reason: stop/);
      assert.match(text, /- usage: prompt 11, completion 3, total 14 tokens/);
      assert.match(text, /- chunks: [1-9]\d*/);
      assert.match(text, /- timing: headers after \d+ ms, done after \d+ ms/);
      assert.equal(await e.t.lua<string>("return vim.bo[vim.fn.bufnr('caboose://debug')].filetype"), 'markdown');
    });

    it('a failed request shows its status and error body', async () => {
      await e.start({ env: { OPENAI_API_KEY: KEY }, initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      e.fake.script({ status: 400, body: { error: { message: 'bad field frobnicate', type: 'invalid_request_error', code: 'bad_field' } } });
      await e.t.lua("require('caboose').send('hi')");
      await e.fake.waitForRequest(1);
      await idle();
      const text = (await debugLines()).join('\n');
      assert.match(text, /- status: 400/);
      assert.match(text, /- error \(bad_response, 400\): request rejected/);
      assert.match(text, /### Error body[\s\S]*"message": "bad field frobnicate"/);
    });
  });

  describe(`images (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === 'idle', 'idle');
    const chat = async () => (await e.t.chatLines()).join('\n');
    const notes = async () => ((await e.t.notifications()) as { msg: string }[]).map((n) => n.msg).join('\n');
    type Part = { type: string; text?: string; image_url?: { url: string } };
    const userContent = (i: number) => e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content as unknown;

    it('#image:path and a pasted path (spaces, file://) go as image_url parts with the exact bytes; labels in the chat', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      fs.mkdirSync(path.join(e.t.cwd, 'shots'));
      fs.writeFileSync(path.join(e.t.cwd, 'shots', 'bug.png'), PNG);
      fs.writeFileSync(path.join(e.t.cwd, 'my photo.jpg'), JPEG);
      e.fake.script({ text: 'I see a red pixel.' });
      await e.t.lua("require('caboose').send('what is in #image:shots/bug.png ?')");
      await e.fake.waitForRequest(1);
      const content = userContent(0) as Part[];
      assert.ok(Array.isArray(content), 'the message is sent as content parts');
      assert.equal(content[0].type, 'text');
      assert.match(content[0].text!, /^what is in #image:shots\/bug\.png \?/);
      assert.match(content[0].text!, /\[image bug\.png \(PNG, \d+ B\) attached\]/);
      assert.deepEqual(content.slice(1), [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } }]);
      await e.t.waitFor(async () => /#image bug\.png \(PNG, \d+ B\)/.test(await chat()), 'the image label in the chat');
      await idle();

      // A pasted path with a space, as a file:// URL on its own line.
      e.fake.script({ text: 'A photo.' });
      const url = `file://${path.join(e.t.cwd, 'my photo.jpg').split(' ').join('%20')}`;
      await e.t.lua('require("caboose").send(...)', [`describe this\n${url}`]);
      await e.fake.waitForRequest(2);
      const c2 = userContent(1) as Part[];
      assert.equal(c2[1].image_url!.url, `data:image/jpeg;base64,${JPEG.toString('base64')}`);
      assert.match(c2[0].text!, /\[image my photo\.jpg \(JPEG, 2 KB\) attached\]/);
      await e.t.waitFor(async () => /image my photo\.jpg \(JPEG, 2 KB\)/.test(await chat()), 'the pasted image label');
      await idle();
    });

    it('refuses a file that is not a PNG/JPEG by its bytes, one over the size cap, and a relative path leaving the workspace', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      fs.writeFileSync(path.join(e.t.cwd, 'fake.png'), 'SECRET_TOKEN=abc\n');
      fs.writeFileSync(path.join(e.t.cwd, 'huge.png'), Buffer.concat([PNG, Buffer.alloc(6 * 1024 * 1024)]));
      const outside = path.join(path.dirname(e.t.cwd), `outside-${path.basename(e.t.cwd)}.png`);
      fs.writeFileSync(outside, PNG);
      try {
        e.fake.script({ text: 'ok' });
        await e.t.lua('require("caboose").send(...)', [`look #image:fake.png #image:huge.png #image:../${path.basename(outside)}`]);
        await e.fake.waitForRequest(1);
        const content = userContent(0);
        assert.equal(typeof content, 'string', 'no image part went');
        assert.ok(!String(content).includes('SECRET_TOKEN'), 'the fake image content never reaches the model');
        const text = await e.t.waitFor(async () => {
          const c = await chat();
          return /huge\.png — not attached: 6\.0 MB is over the 5\.0 MB limit/.test(c) ? c : null;
        }, 'the size notice');
        assert.match(text, /fake\.png — not attached: not a PNG or JPEG file/);
        assert.match(text, /outside the workspace \(type its absolute path to attach it anyway\)/);
        await idle();
        // Typed as an absolute path, the same file goes.
        e.fake.script({ text: 'ok' });
        await e.t.lua('require("caboose").send(...)', [`and #image:${outside}`]);
        await e.fake.waitForRequest(2);
        assert.ok(Array.isArray(userContent(1)), 'an explicit absolute path is attached');
      } finally {
        fs.rmSync(outside, { force: true });
      }
    });

    it('a model that rejects images: a clear error naming the setting, the text still goes; vision = false never sends them', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })" });
      fs.writeFileSync(path.join(e.t.cwd, 'a.png'), PNG);
      e.fake.script(
        (req) => {
          const user = req.body!.messages!.filter((m) => m.role === 'user').at(-1)!;
          return Array.isArray(user.content)
            ? { status: 400, body: { error: { message: 'Invalid content type. image_url is only supported by certain models.', type: 'invalid_request_error', code: null } } }
            : { text: 'text only, fine' };
        },
        { text: 'text only, fine' },
      );
      await e.t.lua("require('caboose').send('explain #image:a.png please')");
      await e.fake.waitForRequest(2);
      assert.ok(Array.isArray(userContent(0)), 'precondition: the first request carried the image');
      const second = String(userContent(1));
      assert.match(second, /^explain #image:a\.png please/, 'the text went again');
      assert.match(second, /not sent: the model rejected images/);
      await e.t.waitFor(async () => /rejected the image[\s\S]*provider\.vision = false/.test(await notes()), 'the error names the setting');
      await e.t.waitFor(async () => /text only, fine/.test(await chat()), 'the reply to the text');
      await idle();
    });

    it('vision = false: the image is not sent, the text is, and the error names the setting', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0, vision = false } })" });
      fs.writeFileSync(path.join(e.t.cwd, 'a.png'), PNG);
      e.fake.script({ text: 'ok' });
      await e.t.lua("require('caboose').send('explain #image:a.png')");
      await e.fake.waitForRequest(1);
      assert.equal(typeof userContent(0), 'string');
      assert.match(String(userContent(0)), /configured without vision/);
      await e.t.waitFor(async () => /vision = false[\s\S]*provider\.vision = true/.test(await notes()), 'the error names the setting');
      await idle();
    });

    it('#image: completes image files and folders', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug' })" });
      fs.mkdirSync(path.join(e.t.cwd, 'pics'));
      fs.writeFileSync(path.join(e.t.cwd, 'pics', 'one.png'), PNG);
      fs.writeFileSync(path.join(e.t.cwd, 'pics', 'two.JPG'), JPEG);
      fs.writeFileSync(path.join(e.t.cwd, 'pics', 'notes.txt'), 'x');
      const words = await e.t.lua<string[]>("local c = require('caboose.insertables.complete').candidates('see #image:pics/') return vim.tbl_map(function(i) return i.word end, c.items)");
      assert.deepEqual(words.sort(), ['#image:pics/one.png', '#image:pics/two.JPG']);
      const top = await e.t.lua<string[]>("local c = require('caboose.insertables.complete').candidates('#image:pi') return vim.tbl_map(function(i) return i.word end, c.items)");
      assert.deepEqual(top, ['#image:pics/']);
      const variable = await e.t.lua<string[]>("local c = require('caboose.insertables.complete').candidates('#ima') return vim.tbl_map(function(i) return i.word end, c.items)");
      assert.deepEqual(variable, ['#image:']);
    });

    it('finds pasted image paths: a whole line with spaces, quoted, escaped spaces, file:// URLs; not other files or missing ones; #{image:…} braces', async () => {
      await e.start({ initLua: "require('caboose').setup({ mode = 'chug' })" });
      fs.writeFileSync(path.join(e.t.cwd, 'my shot.png'), PNG);
      fs.writeFileSync(path.join(e.t.cwd, 'b.jpeg'), JPEG);
      fs.writeFileSync(path.join(e.t.cwd, 'c.txt'), 'x');
      const found = (text: string) => e.t.lua<string[]>("return require('caboose.insertables.variables').image_paths(...)", [text]);
      assert.deepEqual(await found('my shot.png'), ['my shot.png']);
      assert.deepEqual(await found('see "my shot.png" and b.jpeg, then c.txt and gone.png'), ['my shot.png', 'b.jpeg']);
      assert.deepEqual(await found('see my\\ shot.png.'), ['my shot.png']);
      assert.deepEqual(await found(`look:\nfile://${path.join(e.t.cwd, 'my shot.png').split(' ').join('%20')}`), [path.join(e.t.cwd, 'my shot.png')]);
      assert.deepEqual(await found('#image:b.jpeg only'), []);
      const vars = await e.t.lua<string[]>("local p = require('caboose.insertables').parse('what is #{image:my shot.png}') return vim.tbl_map(function(v) return v.var.name .. ':' .. (v.arg or '') end, p.vars)");
      assert.deepEqual(vars, ['image:my shot.png']);
    });
  });
});

/** The Lua code block that follows `marker` in doc/caboose.txt (up to the line starting with `<`). */
function docSnippet(marker: string): string {
  const doc = fs.readFileSync(path.join(REPO_ROOT, 'doc', 'caboose.txt'), 'utf8').split('\n');
  const at = doc.findIndex((l) => l.includes(marker));
  assert.ok(at >= 0, `doc marker ${marker}`);
  const end = doc.findIndex((l, i) => i > at && l.startsWith('<'));
  return doc.slice(at + 1, end).join('\n');
}

type Progress = { token: string; id: string; kind: string; title: string; message: string; client: string; value: { kind: string; title: string; message: string }; params: { token: string; value: { kind: string } } };

forEachNvim((bin) => {
  describe(`progress, fidget and lualine (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const state = () => e.t.lua<State>("return require('caboose').state()");
    const waitState = (s: string) => e.t.waitFor(async () => (await state()).state === s, s);
    const COLLECT = `_G.progress_seen = {}
      vim.api.nvim_create_autocmd('User', { pattern = 'CabooseProgress', callback = function(ev) table.insert(_G.progress_seen, ev.data) end })`;
    const seen = () => e.t.lua<Progress[]>('return _G.progress_seen');

    /** A tool run that asks (bash in create mode), approved; then the reply. */
    const runBashTurn = async () => {
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo progress-test' } }] }, { text: 'Ran it.' });
      await e.t.lua("require('caboose').send('run it')");
      await waitState('pending_approval');
      await e.t.waitFor(async () => (await seen()).some((d) => d.message === 'bash: waiting for your approval'), 'the approval report');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => (await seen()).some((d) => d.kind === 'end' && d.token.startsWith('caboose-turn-')), 'the turn ends');
    };

    it('User CabooseProgress: begin → report → end for a tool run and for a model turn, in the LSP $/progress value shape', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })\n${COLLECT}` });
      await runBashTurn();
      const all = await seen();
      const turn = all.filter((d) => d.token.startsWith('caboose-turn-'));
      const tool = all.filter((d) => d.token.startsWith('caboose-tool-'));
      assert.equal(new Set(tool.map((d) => d.token)).size, 1, 'one tool task');
      assert.deepEqual(
        tool.map((d) => [d.kind, d.message]),
        [
          ['begin', 'running bash…'],
          ['report', 'bash: waiting for your approval'],
          ['report', 'running bash…'],
          ['end', 'bash done'],
        ],
      );
      assert.equal(turn[0].kind, 'begin');
      assert.equal(turn[0].message, 'thinking…');
      assert.equal(turn.at(-1)!.kind, 'end');
      assert.ok(turn.slice(1, -1).length > 0 && turn.slice(1, -1).every((d) => d.kind === 'report'), 'reports in between');
      assert.ok(turn.some((d) => d.message === 'streaming…'), turn.map((d) => d.message).join(', '));
      assert.ok(turn.some((d) => d.message === 'running tools…'));
      // The tool task lives inside the turn.
      assert.ok(all.indexOf(turn[0]) < all.indexOf(tool[0]) && all.indexOf(tool.at(-1)!) < all.indexOf(turn.at(-1)!));
      for (const d of all) {
        assert.equal(d.id, d.token);
        assert.equal(d.title, 'caboose');
        assert.equal(d.client, 'caboose');
        assert.deepEqual(d.value, { kind: d.kind, title: d.title, message: d.message });
        assert.equal(d.params.token, d.token);
        assert.equal(d.params.value.kind, d.kind);
      }
      assert.equal(await e.t.lua("return require('caboose.progress').current() or ''"), '', 'nothing runs once idle');
    });

    it('fidget.nvim: progress handles created, reported and finished through fidget.progress.handle (its documented API)', async () => {
      // fidget's documented non-LSP interface: handle.create(msg) → handle with :report(props), :finish(), settable fields.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-fakefidget-'));
      fs.mkdirSync(path.join(dir, 'lua', 'fidget'), { recursive: true });
      fs.writeFileSync(
        path.join(dir, 'lua', 'fidget', 'progress.lua'),
        `local M = { handle = {}, log = {} }
         function M.handle.create(msg)
           assert(type(msg.title) == 'string' and type(msg.lsp_client) == 'table')
           local h = { message = msg.message }
           table.insert(M.log, { 'create', msg.lsp_client.name, msg.title, msg.message })
           function h:report(p) self.message = p.message or self.message table.insert(M.log, { 'report', self.message }) end
           function h:finish() table.insert(M.log, { 'finish', self.message }) end
           return h
         end
         return M`,
      );
      try {
        await e.start({ initLua: `vim.opt.rtp:prepend(${JSON.stringify(dir)})\nrequire('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })\n${COLLECT}` });
        await runBashTurn();
        const log = await e.t.lua<string[][]>("return require('fidget.progress').log");
        const tool = log.filter((l) => l.join(' ').includes('bash'));
        assert.deepEqual(tool[0], ['create', 'caboose', 'caboose', 'running bash…'], 'fidget shows "caboose: running bash…"');
        assert.ok(log.some((l) => l[0] === 'finish' && l[1] === 'bash done'));
        assert.equal(log.filter((l) => l[0] === 'create').length, log.filter((l) => l[0] === 'finish').length, 'every handle is finished');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('fidget.nvim: off with progress = { fidget = false }', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-fakefidget-'));
      fs.mkdirSync(path.join(dir, 'lua', 'fidget'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'lua', 'fidget', 'progress.lua'), "local M = { handle = {}, n = 0 } function M.handle.create() M.n = M.n + 1 return { report = function() end, finish = function() end } end return M");
      try {
        await e.start({ initLua: `vim.opt.rtp:prepend(${JSON.stringify(dir)})\nrequire('caboose').setup({ mode = 'chug', progress = { fidget = false }, provider = { max_retries = 0 } })\n${COLLECT}` });
        e.fake.script({ text: 'hi' });
        await e.t.lua("require('caboose').send('hello')");
        await e.t.waitFor(async () => (await seen()).some((d) => d.kind === 'end'), 'the turn ends');
        assert.equal(await e.t.lua<number>("return require('fidget.progress').n"), 0);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    const fidgetDir = process.env.CABOOSE_TEST_FIDGET;
    it('shows in the real fidget.nvim when it is installed', { skip: fidgetDir && fs.existsSync(fidgetDir) ? false : `skipped: fidget.nvim not found at $CABOOSE_TEST_FIDGET (${fidgetDir ?? 'unset'})` }, async () => {
      // fidget keeps progress out of its history by default: kept here so the test can read what it shows.
      await e.start({ initLua: `vim.opt.rtp:prepend(${JSON.stringify(fidgetDir)})\nrequire('fidget').setup({ progress = { display = { skip_history = false } } })\nrequire('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })\n${COLLECT}` });
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo progress-test' } }] }, { text: 'Ran it.' });
      await e.t.lua("require('caboose').send('run it')");
      await waitState('pending_approval');
      const items = () => e.t.lua<{ group: string; message: string }[]>("return vim.tbl_map(function(i) return { group = i.group_name, message = i.message } end, require('fidget.notification').get_history({ group_key = 'caboose' }))");
      await e.t.waitFor(async () => (await items()).some((i) => i.group === 'caboose' && i.message === 'bash: waiting for your approval'), 'fidget shows the caboose task');
      await e.t.lua("require('caboose').approval_respond('once')");
      await waitState('idle');
      await e.t.waitFor(async () => (await items()).some((i) => i.group === 'caboose' && i.message === 'bash done'), 'fidget shows the end');
    });

    it('the documented lualine component returns the statusline text (fake lualine; the real one via $CABOOSE_TEST_LUALINE)', async () => {
      const snippet = docSnippet('A lualine component: >lua');
      const real = process.env.CABOOSE_TEST_LUALINE;
      const useReal = !!(real && fs.existsSync(real));
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-fakelualine-'));
      fs.mkdirSync(path.join(dir, 'lua'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'lua', 'lualine.lua'), 'local M = {} function M.setup(opts) M.opts = opts end function M.refresh() end return M');
      try {
        await e.start({ initLua: `vim.opt.rtp:prepend(${JSON.stringify(useReal ? real : dir)})\nrequire('caboose').setup({ mode = 'create', provider = { max_retries = 0 } })\n${COLLECT}` });
        // A full-width statusline, so lualine does not shorten the component.
        await e.t.lua('vim.o.columns = 200 vim.o.laststatus = 3');
        await e.t.lua(snippet);
        const component = useReal
          ? "return vim.api.nvim_eval_statusline(vim.o.statusline, { winid = vim.api.nvim_get_current_win() }).str"
          : "local c = require('lualine').opts.sections.lualine_x[1] if c.cond and not c.cond() then return '' end return c[1]()";
        if (!useReal) assert.equal(await e.t.lua(component), '', 'idle: empty');
        e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo x' } }] }, { text: 'done' });
        await e.t.lua("require('caboose').send('go')");
        await waitState('pending_approval');
        const text = await e.t.lua<string>(component);
        assert.ok(text.includes('caboose: pending approval'), text);
        await e.t.lua("require('caboose').approval_respond('once')");
        await waitState('idle');
        if (!useReal) assert.equal(await e.t.lua(component), '');
        // lualine redraws on its timer (or refresh()): the text goes once idle.
        else await e.t.waitFor(async () => !(await e.t.lua<string>(`pcall(require('lualine').refresh) ${component}`)).includes('caboose:'), 'lualine drops the text');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
