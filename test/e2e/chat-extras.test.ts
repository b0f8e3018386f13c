/**
 * Issue 22's debug view, images and progress, end to end in headless Neovim against the fake server.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
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
  });
});
