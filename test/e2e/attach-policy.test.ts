/**
 * What the user attaches from the editor obeys the workspace's path policy, end to end in headless Neovim
 * against the fake server: `#image:` refuses secret files (secret_globs) and links to them or out of the
 * workspace; `#buffer`, `#selection` and `#diagnostics` of a file outside the workspace are not sent. Each
 * refusal is labelled in the chat; an ordinary image and buffer still go (the precondition).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

type State = { state: string };
/** A tiny valid PNG (1×1, red). */
const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108020000009077' + '53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082', 'hex');
const SETUP = "require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, secret_globs = { '.env*', '*.pem', 'private/**' } })";

forEachNvim((bin) => {
  describe(`attachments obey the path policy (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === 'idle', 'idle');
    const chat = async () => (await e.t.chatLines()).join('\n');
    const userContent = (i: number) => e.fake.chatRequests[i].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content as unknown;

    it('#image: a secret file, a link named shot.png to a secret or out of the workspace are refused with a label; the bytes never go', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      const outside = path.join(path.dirname(cwd), `outside-${path.basename(cwd)}.png`);
      fs.writeFileSync(outside, PNG);
      try {
        fs.writeFileSync(path.join(cwd, 'ok.png'), PNG);
        // Real PNG bytes in each: only the policy can refuse them.
        fs.writeFileSync(path.join(cwd, 'server.pem'), PNG);
        fs.symlinkSync('server.pem', path.join(cwd, 'shot.png'));
        fs.mkdirSync(path.join(cwd, 'private'));
        fs.writeFileSync(path.join(cwd, 'private', 'scan.png'), PNG);
        fs.writeFileSync(path.join(cwd, '.env.png'), PNG);
        fs.symlinkSync(outside, path.join(cwd, 'away.png'));
        e.fake.script({ text: 'one image' });
        await e.t.lua('require("caboose").send(...)', ['look #image:ok.png #image:shot.png #image:private/scan.png #image:.env.png #image:away.png']);
        await e.fake.waitForRequest(1);
        const content = userContent(0) as { type: string; image_url?: { url: string } }[];
        assert.ok(Array.isArray(content));
        assert.equal(content.filter((p) => p.type === 'image_url').length, 1, 'only ok.png went');
        const text = await e.t.waitFor(async () => {
          const c = await chat();
          return /away\.png — not attached/.test(c) ? c : null;
        }, 'the labels');
        assert.match(text, /#image ok\.png \(PNG, \d+ B\)/);
        for (const name of ['shot\\.png', 'private/scan\\.png', '\\.env\\.png']) {
          assert.match(text, new RegExp(`${name} — not attached: matches secret_globs`), name);
        }
        assert.match(text, /away\.png — not attached: outside the workspace/);
        await idle();
      } finally {
        fs.rmSync(outside, { force: true });
      }
    });

    it('#buffer, #selection and #diagnostics of a file outside the workspace are not sent; a workspace buffer is', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      const outside = path.join(path.dirname(cwd), `outside-${path.basename(cwd)}.conf`);
      fs.writeFileSync(outside, 'password = outside-hunter2\n');
      fs.writeFileSync(path.join(cwd, 'a.lua'), 'local inside = 1\n');
      try {
        await e.t.cmd('edit a.lua');
        e.fake.script({ text: 'inside seen' }, { text: 'outside refused' });
        await e.t.lua("require('caboose').send('see #buffer')");
        await e.fake.waitForRequest(1);
        assert.match(String(userContent(0)), /local inside = 1/, 'precondition: a workspace buffer goes');
        await idle();
        await e.t.cmd(`edit ${outside}`);
        await e.t.lua(`vim.api.nvim_buf_set_mark(0, '<', 1, 0, {}) vim.api.nvim_buf_set_mark(0, '>', 1, 0, {})
          vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, { { lnum = 0, col = 0, message = 'weak outside-hunter2', severity = vim.diagnostic.severity.WARN } })`);
        await e.t.lua("require('caboose').send('see #buffer #selection #diagnostics')");
        await e.fake.waitForRequest(2);
        const msg = String(userContent(1));
        assert.ok(!msg.includes('outside-hunter2'), 'nothing of the outside file goes to the model');
        const text = await e.t.waitFor(async () => {
          const c = await chat();
          return /#diagnostics .* — not attached/.test(c) ? c : null;
        }, 'the labels');
        const base = path.basename(outside).replace(/[.]/g, '\\.');
        assert.match(text, new RegExp(`#buffer .*${base} — not attached: outside the workspace`));
        assert.match(text, new RegExp(`#selection .*${base} — not attached: outside the workspace`));
        assert.match(text, new RegExp(`#diagnostics .*${base} — not attached: outside the workspace`));
        await idle();
      } finally {
        fs.rmSync(outside, { force: true });
      }
    });

    it('after :cd out of the workspace, a buffer there is still outside (its real path is judged, not the name relative to the new cwd)', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      const away = fs.mkdtempSync(path.join(path.dirname(cwd), `cd-${path.basename(cwd)}-`));
      try {
        fs.writeFileSync(path.join(away, 'app.conf'), 'password = cd-hunter2\n');
        e.fake.script({ text: 'hi' }, { text: 'refused' });
        await e.t.lua("require('caboose').send('hello')");
        await e.fake.waitForRequest(1);
        await idle();
        await e.t.cmd(`cd ${away}`);
        await e.t.cmd('edit app.conf');
        await e.t.lua(`vim.api.nvim_buf_set_mark(0, '<', 1, 0, {}) vim.api.nvim_buf_set_mark(0, '>', 1, 0, {})`);
        await e.t.lua("require('caboose').send('see #buffer #selection')");
        await e.fake.waitForRequest(2);
        assert.ok(!String(userContent(1)).includes('cd-hunter2'), 'nothing of the outside file goes');
        const text = await e.t.waitFor(async () => {
          const c = await chat();
          return /#selection app\.conf.* — not attached/.test(c) ? c : null;
        }, 'the labels');
        assert.match(text, /#buffer app\.conf — not attached: outside the workspace/);
        assert.match(text, /#selection app\.conf — not attached: outside the workspace/);
        await idle();
      } finally {
        fs.rmSync(away, { recursive: true, force: true });
      }
    });

    it('#gitdiff and #quickfix leave out a secret file\'s changes and lines, and the label says so', async () => {
      await e.start({ initLua: SETUP });
      const cwd = e.t.cwd;
      const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd });
      git('init', '-q');
      fs.writeFileSync(path.join(cwd, 'a.lua'), 'local a = 1\n');
      fs.writeFileSync(path.join(cwd, '.env.local'), 'TOKEN=old-value\n');
      git('add', '.');
      git('commit', '-qm', 'init');
      fs.writeFileSync(path.join(cwd, 'a.lua'), 'local a = 2\n');
      fs.writeFileSync(path.join(cwd, '.env.local'), 'TOKEN=new-hunter2\n');
      await e.t.lua("vim.fn.setqflist({ { filename = 'a.lua', lnum = 1, col = 1, text = 'local a' }, { filename = '.env.local', lnum = 1, col = 1, text = 'TOKEN=new-hunter2' } })");
      e.fake.script({ text: 'reviewed' });
      await e.t.lua("require('caboose').send('review #gitdiff #quickfix')");
      await e.fake.waitForRequest(1);
      const msg = String(userContent(0));
      assert.match(msg, /\+local a = 2/, 'precondition: the diff went');
      assert.match(msg, /a\.lua:1:1: local a/, 'precondition: the quickfix list went');
      assert.ok(!msg.includes('hunter2'), "nothing of the secret file's change goes");
      const text = await e.t.waitFor(async () => {
        const c = await chat();
        return /#quickfix \(\d+ lines?; left out/.test(c) ? c : null;
      }, 'the labels');
      assert.match(text, /#gitdiff \(\d+ lines; left out: \.env\.local\)/);
      assert.match(text, /#quickfix \(\d+ lines?; left out: \.env\.local\)/);
      await idle();
    });
  });
});
