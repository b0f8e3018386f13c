import { describe, it, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { processAlive as alive } from '../support/processes';

/** Direct children of a pid (from /proc). */
function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

forEachNvim((bin) => {
  describe(`chat in Neovim ${bin.version}`, () => {
    let fake: FakeOpenAI;
    let t: TestNvim;

    before(async () => {
      fake = await startFakeOpenAI();
    });
    after(async () => {
      await fake.close();
    });
    beforeEach(async () => {
      t = await startNvim({ nvim: bin, env: { OPENAI_BASE_URL: fake.url, CABOOSE_MODEL: 'fake-model' } });
    });
    afterEach(async () => {
      await t.close();
    });

    it('starts no node process until the first command', async () => {
      const pid = t.proc.pid!;
      assert.equal(await t.lua("return package.loaded['caboose'] == nil"), true, 'plugin/ must not load the module');
      assert.equal(await t.lua("return vim.fn.exists(':Caboose') == 2"), true, ':Caboose is defined');
      assert.deepEqual(childPids(pid), [], 'no child process before the first command');
      fake.script({ text: 'hello' });
      await t.cmd('Caboose hi');
      const kids = await t.waitFor(async () => {
        const k = childPids(pid);
        return k.length > 0 ? k : null;
      }, 'host process');
      const hostPid = await t.lua<number>("return require('caboose.rpc').host_pid()");
      assert.ok(kids.includes(hostPid), 'the host is a child of Neovim');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('hello'), 'reply');
    });

    it(':Caboose streams the reply into the chat, with partial states and state events', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      fake.script({ text: 'Hello there, this arrives in pieces.', chunks: ['Hello ', 'there, ', 'this arrives ', 'in pieces.'], gate, gateAfterChunks: 1 });
      const before = fake.chatRequests.length;
      await t.cmd('Caboose say hi');
      const req = await fake.waitForRequest(fake.requests.length + 1);
      const msgs = req.body?.messages ?? [];
      assert.equal(msgs[msgs.length - 1].role, 'user');
      assert.equal(msgs[msgs.length - 1].content, 'say hi');
      assert.equal(req.body?.stream, true);
      assert.equal(fake.chatRequests.length, before + 1);

      // A partial state: the first chunk is shown while the rest is held back.
      const partial = await t.waitFor(async () => {
        const text = (await t.chatLines()).join('\n');
        return text.includes('Hello') && !text.includes('in pieces.') ? text : null;
      }, 'a partial reply');
      assert.match(partial, /## You\n\nsay hi/);
      assert.equal((await t.lua<{ state: string }>("return require('caboose').state()")).state, 'streaming');
      release();
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('Hello there, this arrives in pieces.'), 'the full reply');
      await t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');

      const events = await t.stateEvents();
      const seq = events.map((e) => `${e.previous}->${e.state}`);
      assert.deepEqual(seq.slice(0, 2), ['idle->streaming', 'streaming->idle']);
      const st = await t.lua<{ state: string; mode: string; session: string }>("return require('caboose').state()");
      assert.equal(st.mode, 'create');
      assert.match(st.session, /^[0-9a-f-]{36}$/);

      const bufName = await t.lua<string>("return vim.api.nvim_buf_get_name(require('caboose.chat').buf())");
      assert.match(bufName, /^caboose:\/\/chat\//);
      assert.equal(await t.lua("return vim.bo[require('caboose.chat').buf()].filetype"), 'markdown');
      assert.equal(await t.lua("return #vim.fn.win_findbuf(require('caboose.chat').buf())"), 1, 'chat split is open');
    });

    it('a second :Caboose continues the same conversation', async () => {
      fake.script({ text: 'first answer' }, { text: 'second answer' });
      const n = fake.requests.length;
      await t.cmd('Caboose one');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('first answer'), 'first answer');
      await t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
      await t.cmd('Caboose two');
      const req = await fake.waitForRequest(n + 2);
      const contents = (req.body?.messages ?? []).map((m) => `${m.role}:${typeof m.content === 'string' ? m.content : ''}`);
      assert.ok(contents.includes('user:one'));
      assert.ok(contents.includes('assistant:first answer'));
      assert.equal(contents[contents.length - 1], 'user:two');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('second answer'), 'second answer');
    });

    it('killing the host mid-stream shows an error and the next :Caboose starts a new host', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      fake.script({ text: 'partial then more', chunks: ['partial ', 'then more'], gate });
      await t.cmd('Caboose go');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('partial'), 'partial');
      const pid = await t.lua<number>("return require('caboose.rpc').host_pid()");
      process.kill(pid, 'SIGKILL');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('host exited unexpectedly'), 'error in chat');
      const notes = await t.notifications();
      assert.ok(notes.some((n) => n.msg.includes('host exited unexpectedly') && n.level === 4), 'vim.notify at ERROR level');
      assert.equal((await t.lua<{ state: string }>("return require('caboose').state()")).state, 'idle');
      release();
      assert.equal(alive(pid), false);
      fake.script({ text: 'back again' });
      await t.cmd('Caboose again');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('back again'), 'reply from the new host');
      const pid2 = await t.lua<number>("return require('caboose.rpc').host_pid()");
      assert.notEqual(pid2, pid);
    });
  });
});
