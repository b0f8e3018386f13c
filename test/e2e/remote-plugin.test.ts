import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { forEachNvim, REPO_ROOT, startNvim } from '../support/nvim';

const NODE_HOST = path.join(REPO_ROOT, 'node_modules', 'neovim', 'bin', 'cli.js');

forEachNvim((bin) => {
  describe(`classic remote-plugin host (Neovim ${bin.version})`, () => {
    let fake: FakeOpenAI;
    let home: string;
    before(async () => {
      fake = await startFakeOpenAI();
      home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-rplugin-'));
    });
    after(async () => {
      await fake.close();
      fs.rmSync(home, { recursive: true, force: true });
    });

    it(':UpdateRemotePlugins registers the host functions and no duplicate commands; the chat works through it', async () => {
      const hostProg = `vim.g.node_host_prog = ${JSON.stringify(NODE_HOST)}`;
      const first = await startNvim({ nvim: bin, home, initLua: hostProg });
      try {
        await first.cmd('UpdateRemotePlugins');
      } finally {
        await first.close();
      }
      const manifest = fs.readFileSync(path.join(home, 'data', 'nvim', 'rplugin.vim'), 'utf8');
      assert.match(manifest, /CabooseHostRequest/);
      assert.match(manifest, /CabooseHostNotify/);
      assert.doesNotMatch(manifest, /'type': 'command'/, 'the remote plugin defines no commands');

      const t = await startNvim({
        nvim: bin,
        home,
        env: { OPENAI_BASE_URL: fake.url },
        initLua: `${hostProg}\nrequire('caboose').setup({ host = { transport = 'remote' } })`,
      });
      try {
        assert.equal(await t.lua("return vim.fn.exists(':Caboose')"), 2);
        assert.equal(await t.lua("return vim.fn.exists('#FuncUndefined#CabooseHostRequest')"), 1, 'registered from the manifest');
        fake.script({ text: 'via the classic host' });
        const n = fake.requests.length;
        await t.cmd('Caboose hello classic');
        const req = await fake.waitForRequest(n + 1, 15_000);
        assert.equal(req.body?.messages?.at(-1)?.content, 'hello classic');
        await t.waitFor(async () => (await t.chatLines()).join('\n').includes('via the classic host'), 'reply', 15_000);
        await t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
        assert.equal(await t.lua("return require('caboose.rpc').job_id()"), null, 'no job host was started');
      } finally {
        await t.close();
      }
    });
  });
});
