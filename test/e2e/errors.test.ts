import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeReply } from '../support/fake-openai';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { closedPort } from '../support/local-http';


const SETUP = (extra = '') => `require('caboose').setup({ provider = { max_retries = 0, retry_base_delay_ms = 1 ${extra} } })`;

interface Case {
  name: string;
  reply?: FakeReply;
  unreachable?: boolean;
  expect: RegExp;
}

const CASES: Case[] = [
  { name: 'unreachable endpoint', unreachable: true, expect: /cannot reach http:\/\/127\.0\.0\.1:\d+\/v1/ },
  { name: '401', reply: { status: 401, body: { error: { message: 'bad key' } } }, expect: /authentication failed \(401\)/ },
  { name: '404 model', reply: { status: 404, body: { error: { message: 'The model does-not-exist does not exist' } } }, expect: /not found/ },
  { name: '500', reply: { status: 500 }, expect: /server error 500/ },
  { name: 'stream cut midway', reply: { text: 'half of an answer that never ends', chunks: ['half ', 'of an answer ', 'that never ends'], cutAfterChunks: 2 }, expect: /interrupted/ },
];

forEachNvim((bin) => {
  describe(`errors the user can act on (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    for (const c of CASES) {
      it(`${c.name}: message in the chat and vim.notify, conversation intact, back to idle`, async () => {
        const base = c.unreachable ? `http://127.0.0.1:${await closedPort()}/v1` : e.fake.url;
        const t = await e.start({ env: { OPENAI_BASE_URL: base, CABOOSE_MODEL: 'does-not-exist' }, initLua: SETUP() });
        if (c.reply) e.fake.script(c.reply);
        await t.cmd('Caboose first question');
        const chat = await t.waitFor(async () => {
          const text = (await t.chatLines()).join('\n');
          return /\*\*Error:\*\*/.test(text) ? text : null;
        }, 'an error in the chat');
        assert.match(chat, c.expect);
        assert.match(chat, /## You\n\nfirst question/, 'the user message stays');
        if (c.name === 'stream cut midway') assert.match(chat, /half of an answer/, 'partial text kept');
        const notes = await t.notifications();
        assert.ok(notes.some((n) => c.expect.test(n.msg) && n.level === 4), `vim.notify error: ${JSON.stringify(notes)}`);
        await t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');

        if (!c.unreachable) {
          // The conversation is intact: the next message carries the first one.
          e.fake.script({ text: 'recovered' });
          const n = e.fake.requests.length;
          await t.cmd('Caboose second question');
          const req = await e.fake.waitForRequest(n + 1);
          const users = (req.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => m.content);
          assert.deepEqual(users, ['first question', 'second question']);
          await t.waitFor(async () => (await t.chatLines()).join('\n').includes('recovered'), 'recovered');
        }
      });
    }
  });
});
