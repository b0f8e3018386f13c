/**
 * The first-request path (src/host/first-request.ts, issue 24): a cold `send('hi')` sends the model request
 * before the session's store and tools load. What the user and the session store end up with must be what
 * the usual path gives (CABOOSE_FIRST_REQUEST=0 turns the first-request path off): the same request, the
 * same stored rows, the same chat; failures, tool calls and stop behave as always.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import type { FakeReply } from '../support/fake-openai';

const SETUP = (extra = '') => `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 }, sandbox = { mode = 'off' } ${extra} })`;
const TAKEN = 'first request sent before the session loaded';

const state = (t: TestNvim) => t.lua<{ state: string }>("return require('caboose').state()").then((s) => s.state);

/** The session's stored rows (what a reopened session and :CabooseSessions read), without ids and times. */
function storedRows(dataDir: string): Record<string, unknown>[] {
  const db = new Database(path.join(dataDir, 'caboose.sqlite'), { readonly: true });
  try {
    return db.prepare('SELECT kind, role, in_context, partial, display_json, text, message_json FROM session_messages ORDER BY id').all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

function log(t: TestNvim): string {
  return fs.existsSync(t.logFile) ? fs.readFileSync(t.logFile, 'utf8') : '';
}

forEachNvim((bin) => {
  describe(`a cold send's first request (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    /** A cold send('hi') in a fresh Neovim on `cwd`; returns its chat, its requests and its stored rows. */
    async function coldSend(cwd: string, fast: boolean, replies: FakeReply[]) {
      const t = await startNvim({ nvim: bin, cwd, initLua: SETUP(), env: { OPENAI_BASE_URL: e.fake.url, ...(fast ? {} : { CABOOSE_FIRST_REQUEST: '0' }) } });
      try {
        const before = e.fake.chatRequests.length;
        e.fake.script(...replies);
        await t.lua("require('caboose').send('hi there')");
        await t.waitFor(async () => (await t.chatLines()).join('\n').includes('cold reply'), 'the reply');
        await t.waitFor(async () => (await state(t)) === 'idle', 'idle');
        // The turn's last writes (and a title request, if any) settle.
        await new Promise((r) => setTimeout(r, 500));
        const chat = await t.chatLines();
        const requests = e.fake.chatRequests.slice(before).map((r) => r.rawBody);
        const hostLog = log(t);
        const rows = storedRows(t.dataDir);
        await t.close();
        return { chat, requests, rows, hostLog };
      } catch (err) {
        await t.close();
        throw err;
      }
    }

    it('sends the same request and leaves the same session and chat as the usual path', async () => {
      const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-'));
      try {
        fs.writeFileSync(path.join(cwd, 'AGENTS.md'), '# Rules\nAnswer briefly.\n');
        const replies: FakeReply[] = [{ text: 'cold reply, in words' }];
        const fast = await coldSend(cwd, true, replies);
        const usual = await coldSend(cwd, false, replies);
        assert.match(fast.hostLog, new RegExp(TAKEN), 'the first-request path was taken');
        assert.doesNotMatch(usual.hostLog, new RegExp(TAKEN), 'the usual path was taken');
        // The model's connection was opened at host.init and the first request went out on it (agent/preconnect.ts).
        assert.match(fast.hostLog, new RegExp(`pre-connecting to the model at 127\\.0\\.0\\.1:${e.fake.port}`));
        assert.match(fast.hostLog, /the first request to the model went out on the connection opened ahead/);
        // Byte for byte: system prompt (with the rules), message, tools and their schemas.
        assert.equal(fast.requests[0], usual.requests[0]);
        assert.match(fast.requests[0], /Answer briefly/);
        assert.match(fast.requests[0], /"name":"edit_file"/);
        assert.deepEqual(fast.requests.slice(1), usual.requests.slice(1), 'the title request too');
        assert.deepEqual(fast.rows, usual.rows);
        assert.ok(fast.rows.some((r) => r.role === 'user' && String(r.message_json).includes('hi there')), 'the message is stored');
        assert.ok(fast.rows.some((r) => r.role === 'assistant' && String(r.message_json).includes('cold reply, in words')), 'the reply is stored');
        assert.deepEqual(fast.chat, usual.chat);
      } finally {
        fs.rmSync(cwd, { recursive: true, force: true });
      }
    });

    it('with the sandbox on, from the answer an earlier start remembered: the same request as the usual path', async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-home-'));
      const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-'));
      const setup = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;
      const once = async (env: Record<string, string>, text: string) => {
        const t = await startNvim({ nvim: bin, cwd, home, initLua: setup, env: { OPENAI_BASE_URL: e.fake.url, ...env } });
        try {
          const before = e.fake.chatRequests.length;
          e.fake.script({ text: `reply to ${text}` });
          await t.lua('require(\'caboose\').send(...)', [text]);
          await t.waitFor(async () => (await t.chatLines()).join('\n').includes(`reply to ${text}`), 'the reply');
          await t.waitFor(async () => (await state(t)) === 'idle', 'idle');
          return { request: e.fake.chatRequests[before].rawBody, hostLog: log(t) };
        } finally {
          await t.close();
        }
      };
      try {
        // The first start ever runs the trial and remembers its answer in the data folder.
        await once({}, 'first start');
        assert.ok(fs.existsSync(path.join(home, 'data', 'nvim', 'caboose', 'sandbox-trial.json')), 'precondition: the answer is remembered');
        fs.rmSync(path.join(home, 'state', 'nvim', 'caboose.log'), { force: true });
        const fast = await once({}, 'hi');
        assert.match(fast.hostLog, new RegExp(TAKEN));
        fs.rmSync(path.join(home, 'state', 'nvim', 'caboose.log'), { force: true });
        const usual = await once({ CABOOSE_FIRST_REQUEST: '0' }, 'hi');
        assert.doesNotMatch(usual.hostLog, new RegExp(TAKEN));
        assert.equal(fast.request, usual.request);
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
        fs.rmSync(cwd, { recursive: true, force: true });
      }
    });

    it('a config the path never applies to (MCP servers) loads the host at once from the next start; without them, the path is back', async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-home-'));
      const marker = path.join(home, 'cache', 'nvim', 'caboose', 'first-request.off');
      const mcp = `mcp = { servers = { idle = { command = ${JSON.stringify(process.execPath)}, args = { '-e', 'setTimeout(() => {}, 60000)' } } } }`;
      const start = async (extra: string) => {
        fs.rmSync(path.join(home, 'state', 'nvim', 'caboose.log'), { force: true });
        const t = await startNvim({ nvim: bin, home, initLua: SETUP(extra ? `, ${extra}` : ''), env: { OPENAI_BASE_URL: e.fake.url } });
        try {
          await t.lua("require('caboose').prestart()");
          await t.waitFor(() => t.lua<boolean>("return pcall(require('caboose.rpc').request, 'host.ping')"), 'the host');
          await t.waitFor(async () => /init cwd=/.test(log(t)), 'host.init handled');
          return log(t);
        } finally {
          await t.close();
        }
      };
      try {
        const first = await start(mcp);
        assert.match(first, /first-request bundle/, 'precondition: this start loaded the first-request bundle');
        assert.equal(fs.existsSync(marker), true, 'the marker is left');
        const second = await start(mcp);
        assert.doesNotMatch(second, /first-request bundle/, 'the host loaded at once');
        await start('');
        assert.equal(fs.existsSync(marker), false, 'the marker is gone without MCP servers');
        assert.match(await start(''), /first-request bundle/);
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
      }
    });

    it('a host bundle that cannot load ends the process, and the chat says why', async () => {
      // A copy of the plugin whose host bundle throws when it loads.
      const root = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-plugin-'));
      const repo = path.join(__dirname, '..', '..');
      try {
        for (const d of ['lua', 'plugin', 'rplugin', 'dist']) fs.cpSync(path.join(repo, d), path.join(root, d), { recursive: true });
        fs.symlinkSync(path.join(repo, 'node_modules'), path.join(root, 'node_modules'));
        fs.writeFileSync(path.join(root, 'package.json'), fs.readFileSync(path.join(repo, 'package.json')));
        fs.writeFileSync(path.join(root, 'dist', 'host.bundle.js'), "throw new Error('a broken host bundle');\n");
        await e.start({ initLua: SETUP(), pluginRoot: root });
        e.fake.script({ text: 'cold words', gate: new Promise(() => undefined), gateAfterChunks: 1 });
        await e.t.lua("require('caboose').send('hi there')");
        await e.t.waitFor(async () => /a broken host bundle/.test(JSON.stringify(await e.t.notifications()) + (await e.t.chatLines()).join('\n')), 'the reason shown');
        assert.equal(await e.t.lua<boolean>("return require('caboose.rpc').is_running()"), false, 'the host is gone');
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });

    it('a first request that fails (HTTP 500) leaves the message stored and shows the error', async () => {
      await e.start({ initLua: SETUP() });
      e.fake.script({ status: 500 });
      await e.t.lua("require('caboose').send('hi there')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('fake status 500'), 'the error in the chat');
      await e.t.waitFor(async () => (await state(e.t)) === 'idle', 'idle');
      assert.match(log(e.t), new RegExp(TAKEN));
      await new Promise((r) => setTimeout(r, 200));
      const rows = storedRows(e.t.dataDir);
      assert.ok(rows.some((r) => r.role === 'user' && String(r.message_json).includes('hi there')), 'the message is stored');
      assert.ok(rows.some((r) => r.kind === 'error' && String(r.display_json).includes('fake status 500')), 'the error is stored');
    });

    it('a first request that cannot connect leaves the message stored and shows the error', async () => {
      await e.start({ initLua: SETUP(), env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' } });
      await e.t.lua("require('caboose').send('hi there')");
      await e.t.waitFor(async () => /cannot reach|ECONNREFUSED/i.test((await e.t.chatLines()).join('\n')), 'the error in the chat');
      await e.t.waitFor(async () => (await state(e.t)) === 'idle', 'idle');
      assert.match(log(e.t), new RegExp(TAKEN));
      await new Promise((r) => setTimeout(r, 200));
      const rows = storedRows(e.t.dataDir);
      assert.ok(rows.some((r) => r.role === 'user' && String(r.message_json).includes('hi there')), 'the message is stored');
      assert.ok(rows.some((r) => r.kind === 'error'), 'the error is stored');
    });

    it("a first reply's tool call waits for approval and runs as always", async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, sandbox = { mode = 'off' } })` });
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'made.txt', content: 'made\n' } }] }, { text: 'cold reply: done' }, { text: 'A title' });
      await e.t.lua("require('caboose').send('make a file')");
      await e.t.waitFor(async () => (await state(e.t)) === 'pending_approval', 'the approval request');
      assert.equal(fs.existsSync(path.join(e.t.cwd, 'made.txt')), false, 'nothing written before the approval');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('cold reply: done'), 'the final reply');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'made.txt'), 'utf8'), 'made\n');
      assert.match(log(e.t), new RegExp(TAKEN));
      const second = e.fake.chatRequests[1].body!.messages!;
      assert.ok(second.some((m) => m.role === 'tool'), 'the tool result went back to the model');
    });

    it('when the session store cannot open, the first request is cut and the error shown as without it', async () => {
      await e.start({ initLua: SETUP() });
      // A folder where the database file goes: the store cannot open.
      fs.mkdirSync(path.join(e.t.dataDir, 'caboose.sqlite'), { recursive: true });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      e.fake.script({ text: 'cold words that never end', chunks: ['cold ', 'words ', 'that never end'], gate, gateAfterChunks: 1 });
      try {
        await e.t.lua("require('caboose').send('hi there')");
        await e.fake.waitForRequest(1);
        await e.t.waitFor(() => Promise.resolve(e.fake.chatRequests[0].clientClosed), 'the request cut');
        await e.t.waitFor(async () => /caboose\.sqlite|directory|SQLITE|database/i.test((await e.t.chatLines()).join('\n')), 'the error in the chat');
        assert.match(log(e.t), new RegExp(TAKEN));
        await e.t.waitFor(async () => (await state(e.t)) === 'idle', 'idle');
      } finally {
        release();
      }
    });

    it('stop during the first reply stops it; the message and the cut reply are stored', async () => {
      await e.start({ initLua: SETUP() });
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      e.fake.script({ text: 'cold words that never end', chunks: ['cold ', 'words ', 'that never end'], gate, gateAfterChunks: 1 });
      try {
        await e.t.lua("require('caboose').send('hi there')");
        await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('cold'), 'the first words');
        await e.t.lua("require('caboose').stop()");
        await e.t.waitFor(async () => (await state(e.t)) === 'idle', 'idle');
        await e.t.waitFor(() => Promise.resolve(e.fake.chatRequests[0].clientClosed), 'the request cut');
        assert.match(log(e.t), new RegExp(TAKEN));
        assert.match((await e.t.chatLines()).join('\n'), /stopped/);
        await new Promise((r) => setTimeout(r, 200));
        const rows = storedRows(e.t.dataDir);
        assert.ok(rows.some((r) => r.role === 'user' && String(r.message_json).includes('hi there')), 'the message is stored');
        assert.ok(rows.some((r) => r.role === 'assistant' && String(r.message_json).includes('cold')), 'the cut reply is stored');
      } finally {
        release();
      }
    });
  });
});
