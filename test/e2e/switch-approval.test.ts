/**
 * The session switch against an open approval float (server.ts inOrder/switchStep, rpc.lua leave_scope):
 * the chat leaves a session whose turn waits on the user's approval. The session left refuses the tool
 * (nothing runs), its float must not stay open over the session switched to (its "closed" event is
 * tagged with the scope the chat left, so Lua drops it), and an answer given to a float of the session
 * left must never decide anything in the session switched to.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';

const state = (t: TestNvim) => t.lua<{ state: string; session?: string }>("return require('caboose').state()");
const idle = (t: TestNvim) => t.waitFor(async () => (await state(t)).state === 'idle', 'idle');
const chatText = async (t: TestNvim) => (await t.chatLines()).join('\n');

forEachNvim((bin) => {
  describe(`a session switch while an approval float is open (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it(':CabooseStop, :CabooseNew and a message in one go while the float is open: the tool is refused, the message is the new session\'s and answered there, no float left', async () => {
      const t = await e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: "require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = 'float' } })" });
      const marker = path.join(t.cwd, 'ran.txt');
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: `echo ran > ${marker}` } }] }, { text: 'Reply to third.' });
      await t.cmd('Caboose second');
      await waitApprovalFloat(t, 'bash');
      const b = (await state(t)).session!;
      await t.lua("vim.cmd('CabooseStop'); vim.cmd('CabooseNew'); vim.cmd('Caboose third')");
      await t.waitFor(async () => (await chatText(t)).includes('Reply to third.'), 'the reply to the message after the switch');
      await idle(t);
      const now = (await state(t)).session!;
      assert.notEqual(now, b);
      assert.equal(await approvalFloat(t), null);
      assert.equal(fs.existsSync(marker), false, 'the tool of the session left did not run');
      const last = e.fake.chatRequests.at(-1)!;
      const users = (last.body?.messages ?? []).filter((m) => (m as { role: string }).role === 'user').map((m) => JSON.stringify((m as { content: unknown }).content));
      assert.equal(users.length, 1, `the new session's request holds only its own message: ${users.join(' | ')}`);
      assert.match(users[0]!, /third/);
    });

    for (const how of ['reopening a stored session', ':CabooseNew'] as const) {
      it(`${how}: the float of the session left closes, its tool does not run, the session switched to is not answered by it`, async () => {
        const t = await e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: "require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = 'float' } })" });
        const marker = path.join(t.cwd, 'ran.txt');
        // Session A: one finished exchange (stored, to reopen).
        e.fake.script({ text: 'First session reply.' });
        await t.cmd('Caboose first');
        await t.waitFor(async () => (await chatText(t)).includes('First session reply.'), 'the first reply');
        await idle(t);
        const a = (await state(t)).session!;
        // Session B: a turn that waits on an approval.
        await t.cmd('CabooseNew');
        await t.waitFor(async () => ((await state(t)).session ?? a) !== a, 'a new session');
        e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: `echo ran > ${marker}` } }] }, { text: 'B after the tool.' });
        await t.cmd('Caboose second');
        await waitApprovalFloat(t, 'bash');
        const b = (await state(t)).session!;
        assert.notEqual(b, a);
        // The switch, with the float open.
        if (how === ':CabooseNew') await t.cmd('CabooseNew');
        else await t.lua("require('caboose.ui.sessions').open(...)", [a]);
        await t.waitFor(async () => {
          const s = (await state(t)).session;
          return s !== undefined && s !== b;
        }, 'the switch');
        if (how !== ':CabooseNew') assert.equal((await state(t)).session, a);
        await idle(t);
        // Let anything still on its way arrive.
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(await approvalFloat(t), null, 'the float of the session left is closed');
        assert.equal(fs.existsSync(marker), false, 'the tool of the session left did not run');
        // An answer now (a key typed into a float the user still saw) decides nothing anywhere.
        await t.lua("require('caboose').approval_respond('once')");
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(fs.existsSync(marker), false, 'the tool did not run after a late answer');
        assert.ok(!(await chatText(t)).includes('B after the tool.'), 'the session left does not reach the chat');
      });
    }
  });
});
