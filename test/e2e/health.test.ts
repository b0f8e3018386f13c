import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { forEachNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

forEachNvim((bin) => {
  describe(`:checkhealth caboose and setup() (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    const healthText = async (tt: TestNvim) => {
      await tt.cmd('checkhealth caboose');
      return (await tt.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
    };

    it('reports Neovim, Node, host, better-sqlite3, endpoint and key (never the key itself)', async () => {
      const t = await e.start({ env: { OPENAI_BASE_URL: e.fake.url, OPENAI_API_KEY: 'sk-very-secret-123' } });
      const text = await healthText(t);
      assert.match(text, /OK.*Neovim \d+\.\d+\.\d+/);
      assert.match(text, /OK.*Node v\d+/);
      assert.match(text, /OK.*host \S+ answers \(pid \d+/);
      assert.match(text, /OK.*better-sqlite3 loads \(SQLite \d/);
      assert.match(text, /OK.*API key present/);
      assert.match(text, /OK.*endpoint reachable \(GET \/models → 200/);
      assert.doesNotMatch(text, /sk-very-secret-123/);
      assert.ok(e.fake.requests.some((r) => r.method === 'GET' && r.path === '/v1/models' && r.headers.authorization === 'Bearer sk-very-secret-123'));
    });

    it('help links in the report are well formed (no stray parenthesis inside |caboose-mcp|)', async () => {
      const t = await e.start();
      const text = await healthText(t);
      assert.match(text, /no MCP server configured: see :help \|?caboose-mcp\|?$/m);
      assert.doesNotMatch(text, /\|[^|\s]*\)\|/, 'no help link ends in a parenthesis');
    });

    it("verifies the audit log's hash chain: ok with the row count, or an error naming the first bad row", async () => {
      const t = await e.start();
      for (const args of [{ path: 'a.txt', content: 'a' }, { path: 'b.txt', content: 'b' }]) {
        assert.equal((await t.lua<{ ok: boolean }>("return require('caboose').tool_call('create_file', ...)", [args])).ok, true);
      }
      assert.equal((await t.lua<{ ok: boolean }>("return require('caboose').tool_call('bash', { command = 'echo c > c.txt' })")).ok, true);
      const db = path.join(t.dataDir, 'caboose.sqlite');
      assert.match(await healthText(t), new RegExp(`OK.*audit log hash chain verifies \\(3 rows, ${db}\\)`));

      // Tampering through a second connection, as someone editing the file would.
      const conn = new Database(db);
      conn.exec('DROP TRIGGER audit_log_no_update');
      conn.prepare("UPDATE audit_log SET path = 'innocent.txt' WHERE id = 2").run();
      conn.close();
      const text = await healthText(t);
      assert.match(text, /ERROR.*audit log hash chain is broken at row 2 \(the first bad row; 2 rows checked\)/);
      assert.doesNotMatch(text, /OK.*audit log hash chain verifies/);
    });

    it('reports an unreachable endpoint and a missing key as problems', async () => {
      const t = await e.start({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: '' } });
      const text = await healthText(t);
      assert.match(text, /ERROR.*endpoint not reachable/);
      assert.match(text, /WARNING.*no API key/);
    });

    it('setup() validates options and names the dotted key', async () => {
      const t = await e.start();
      const err = await t.lua<string>("local ok, e = pcall(require('caboose').setup, { chat = { position = 'middle' } }) return e");
      assert.match(err, /`chat\.position` should be one of right, left, bottom, top/);
      const err2 = await t.lua<string>("local ok, e = pcall(require('caboose').setup, { provider = { model = 42 } }) return e");
      assert.match(err2, /`provider\.model` should be string or nil/);
      const err3 = await t.lua<string>("local ok, e = pcall(require('caboose').setup, { web_search = { engine = 'x' } }) return e");
      assert.match(err3, /`web_search` should be nil or \{ searxng_url/);
      const err4 = await t.lua<string>("local ok, e = pcall(require('caboose').setup, { approval = { grace_ms = -1 } }) return e");
      assert.match(err4, /`approval\.grace_ms` should be a number >= 0/);
      const err5 = await t.lua<string>("local ok, e = pcall(require('caboose').setup, { allow_readonly_writes = 'yes' }) return e");
      assert.match(err5, /`allow_readonly_writes` should be a boolean/);
      assert.equal(await t.lua("require('caboose').setup({}) return require('caboose').config().allow_readonly_writes"), false, 'default');
      assert.equal(await t.lua("require('caboose').setup({ approval = { grace_ms = 0 } }) return require('caboose').config().approval.grace_ms"), 0);
      assert.equal(await t.lua("require('caboose').setup({}) return require('caboose').config().approval.grace_ms"), 400, 'default');
      const ok = await t.lua<boolean>("return pcall(require('caboose').setup, { provider = { model = 'x' }, mode = 'plan' })");
      assert.equal(ok, true);
      assert.equal(await t.lua("return require('caboose').state().mode"), 'plan');
    });

    it('works without setup(): defaults and the environment', async () => {
      const t = await e.start({ env: { OPENAI_BASE_URL: e.fake.url, CABOOSE_MODEL: 'env-model' } });
      assert.deepEqual(await t.lua('return require(\'caboose\').state()'), { state: 'idle', mode: 'create', grants: [] }, 'mode known before any command');
      assert.equal(await t.lua("return require('caboose.rpc').is_running()"), false, 'state() starts no host');
      e.fake.script({ text: 'env ok' });
      const n = e.fake.requests.length;
      await t.cmd('Caboose ping');
      const req = await e.fake.waitForRequest(n + 1);
      assert.equal(req.body?.model, 'env-model');
      assert.equal(req.headers.authorization, 'Bearer test-key');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('env ok'), 'reply');
    });

    it('setup() provider options win over the environment; api_key_cmd supplies the key', async () => {
      const t = await e.start({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', CABOOSE_MODEL: 'env-model' },
        initLua: `require('caboose').setup({ provider = { base_url = ${JSON.stringify(e.fake.url)}, model = 'setup-model', api_key_cmd = 'echo from-cmd', headers = { ['X-Extra'] = 'yes' } } })`,
      });
      e.fake.script({ text: 'setup ok' });
      const n = e.fake.requests.length;
      await t.cmd('Caboose ping');
      const req = await e.fake.waitForRequest(n + 1);
      assert.equal(req.body?.model, 'setup-model');
      assert.equal(req.headers.authorization, 'Bearer from-cmd');
      assert.equal(req.headers['x-extra'], 'yes');
    });

    it('the host logs to stdpath("log")/caboose.log at the configured level, never the key', async () => {
      const t = await e.start({ env: { OPENAI_API_KEY: 'sk-log-secret' }, initLua: "require('caboose').setup({ log = { level = 'debug' } })" });
      e.fake.script({ text: 'logged' });
      await t.cmd('Caboose hi');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('logged'), 'reply');
      const file = await t.lua<string>("return vim.fn.stdpath('log') .. '/caboose.log'");
      assert.equal(file, t.logFile);
      const text = fs.readFileSync(file, 'utf8');
      assert.match(text, /INFO .*host started/);
      assert.match(text, /DEBUG .*request session\.send/);
      assert.doesNotMatch(text, /sk-log-secret/);
    });

    it("log level 'warn' keeps info and debug lines out", async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ log = { level = 'warn' } })" });
      e.fake.script({ text: 'quiet' });
      await t.cmd('Caboose hi');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('quiet'), 'reply');
      const text = fs.existsSync(t.logFile) ? fs.readFileSync(t.logFile, 'utf8') : '';
      assert.doesNotMatch(text, /INFO|DEBUG/);
    });

    it('a failing api_key_cmd is reported in the chat and by vim.notify', async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ provider = { api_key_cmd = 'echo nope >&2; exit 3' } })" });
      await t.cmd('Caboose hi');
      const chat = await t.waitFor(async () => {
        const text = (await t.chatLines()).join('\n');
        return /\*\*Error:\*\*.*api_key_cmd failed/.test(text) ? text : null;
      }, 'error in chat');
      assert.ok(chat);
      const notes = await t.notifications();
      assert.ok(notes.some((n) => /api_key_cmd failed/.test(n.msg) && n.level === 4));
      assert.equal((await t.lua<{ state: string }>("return require('caboose').state()")).state, 'idle');
    });

    it('provider settings also work at the top level of setup(); web_search accepts a URL string', async () => {
      const t = await e.start({
        env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
        initLua: `require('caboose').setup({ base_url = ${JSON.stringify('URL')}, model = 'top-model', web_search = 'http://127.0.0.1:9' })`.replace('"URL"', JSON.stringify(e.fake.url)),
      });
      e.fake.script({ text: 'top ok' });
      await t.cmd('Caboose hi');
      const req = await e.fake.waitForRequest(1);
      assert.equal(req.body?.model, 'top-model');
      assert.ok((req.body?.tools ?? []).some((x) => x.function.name === 'web_search'));
      assert.equal(await t.lua("return require('caboose').config().provider.model"), 'top-model');
    });
  });
});
