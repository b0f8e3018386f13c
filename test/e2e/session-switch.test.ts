/**
 * A message typed right after the chat changes session (:CabooseNew, reopening a stored session,
 * :CabooseAgent) with no wait in between: Lua calls the host without waiting, so the switch and the message
 * reach the host back to back. The message goes to the session the chat switched to, is stored there and
 * answered there; the session left keeps what was sent to it before; nothing the left session does while it
 * winds down reaches the chat or fails on its closed store (it once answered the message with "TypeError:
 * The database connection is not open" in the new chat).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { UI_STUB } from '../support/ui-stub';

const chatText = async (t: TestNvim) => (await t.chatLines()).join('\n');
const state = (t: TestNvim) => t.lua<{ state: string; session?: string }>("return require('caboose').state()");
const idle = (t: TestNvim) => t.waitFor(async () => (await state(t)).state === 'idle', 'idle');

/** The user messages each stored session holds (its id → their words), read from the database. */
async function userMessages(t: TestNvim): Promise<Map<string, string[]>> {
  const Database = (await import('better-sqlite3')).default;
  const db = new Database(path.join(t.dataDir, 'caboose.sqlite'), { readonly: true });
  try {
    const rows = db.prepare("SELECT session_id, display_json FROM session_messages WHERE kind = 'message' AND role = 'user' ORDER BY id").all() as { session_id: string; display_json: string }[];
    const out = new Map<string, string[]>();
    for (const r of rows) out.set(r.session_id, [...(out.get(r.session_id) ?? []), (JSON.parse(r.display_json) as { text: string }).text]);
    return out;
  } finally {
    db.close();
  }
}

/** Nothing went wrong in the chat or in a notification. */
async function noErrors(t: TestNvim): Promise<void> {
  const text = await chatText(t);
  assert.ok(!/database|not open|TypeError|Error:/i.test(text), `no error in the chat:\n${text}`);
  const notes = (await t.notifications()) as { msg: string; level: number }[];
  const errors = notes.filter((n) => n.level >= 4 || /database|not open|TypeError/.test(n.msg));
  assert.deepEqual(errors, [], 'no error notification');
}

/** The host's log holds no store failure (a late write of a replaced session). */
function noStoreErrors(t: TestNvim): void {
  const log = fs.existsSync(t.logFile) ? fs.readFileSync(t.logFile, 'utf8') : '';
  assert.ok(!/database connection is not open/.test(log), `no write to a closed store:\n${log.split('\n').filter((l) => /not open/.test(l)).join('\n')}`);
}

forEachNvim((bin) => {
  describe(`a message right after a session switch (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it(':CabooseNew then a message at once, on a cold host: the message goes to the new session, answered there', async () => {
      const t = await e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
      e.fake.script({ text: 'Reply to second.' });
      await t.lua("vim.cmd('CabooseNew'); vim.cmd('Caboose second')");
      await t.waitFor(async () => (await chatText(t)).includes('Reply to second.'), 'the reply');
      await idle(t);
      await noErrors(t);
      const msgs = await userMessages(t);
      assert.deepEqual([...msgs.entries()], [[(await state(t)).session, ['second']]]);
      noStoreErrors(t);
    });

    it('after a reply, and while one streams: the message after :CabooseNew is the new session’s, the old keeps its own', async () => {
      const t = await e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
      const words = Array.from({ length: 200 }, (_, i) => `word${i} `);
      e.fake.scriptFor('first', { text: 'Reply to first.' });
      // (The fake picks a conversation's replies by its first message: 'third' continues 'second'.)
      e.fake.scriptFor('second', { text: 'Reply to second.' }, { text: words.join(''), chunks: words, delayMs: 10 });
      await t.cmd('Caboose first');
      await t.waitFor(async () => (await chatText(t)).includes('Reply to first.'), 'the first reply');
      await idle(t);
      const first = (await state(t)).session;
      await t.lua("vim.cmd('CabooseNew'); vim.cmd('Caboose second')");
      await t.waitFor(async () => (await chatText(t)).includes('Reply to second.'), 'the second reply');
      await idle(t);
      await noErrors(t);
      assert.ok(!(await chatText(t)).includes('first'), 'the new chat shows nothing of the first session');
      const second = (await state(t)).session;
      assert.notEqual(second, first);

      // While a reply streams.
      e.fake.scriptFor('fourth', { text: 'Reply to fourth.' }, { text: 'Reply to fifth.' });
      e.fake.scriptFor('sixth', { text: 'Reply to sixth.' });
      await t.cmd('Caboose third');
      await t.waitFor(async () => (await chatText(t)).includes('word10 '), 'the third reply streaming');
      await t.lua("vim.cmd('CabooseNew'); vim.cmd('Caboose fourth')");
      await t.waitFor(async () => (await chatText(t)).includes('Reply to fourth.'), 'the fourth reply');
      await idle(t);
      await noErrors(t);
      assert.ok(!/word\d|third/.test(await chatText(t)), 'nothing of the streaming session in the new chat');
      const fourth = (await state(t)).session;

      // A message and :CabooseNew at once: the message stays with the session it was sent to (stopped
      // there, or kept as not sent when the switch overtook it), the one after it goes to the new session.
      await t.lua("vim.cmd('Caboose fifth'); vim.cmd('CabooseNew'); vim.cmd('Caboose sixth')");
      await t.waitFor(async () => (await chatText(t)).includes('Reply to sixth.'), 'the sixth reply');
      await idle(t);
      await noErrors(t);
      assert.ok(!/fourth|fifth/.test(await chatText(t)), `nothing of the left session in the new chat:\n${await chatText(t)}`);
      const sixth = (await state(t)).session;
      await t.waitFor(async () => (await userMessages(t)).get(fourth!)?.length === 2, 'the fifth message stored with its session');
      const msgs = await userMessages(t);
      assert.deepEqual(msgs.get(first!), ['first']);
      assert.deepEqual(msgs.get(second!), ['second', 'third']);
      assert.deepEqual(msgs.get(fourth!), ['fourth', 'fifth']);
      assert.deepEqual(msgs.get(sixth!), ['sixth']);
      noStoreErrors(t);
    });

    it('several :CabooseNew and messages in a row: each message is stored in the session it was sent to; the last is answered', async () => {
      const t = await e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
      e.fake.setDefaultReply({ text: 'Default reply.' });
      e.fake.scriptFor('gamma', { text: 'Reply to gamma.' });
      await t.cmd('Caboose warm up');
      await t.waitFor(async () => (await chatText(t)).includes('Default reply.'), 'the first reply');
      await idle(t);
      // Each message is followed at once by the next :CabooseNew: it is on its way when its session is left.
      await t.lua(`
        for _, word in ipairs({ 'alpha', 'beta', 'gamma' }) do
          vim.cmd('CabooseNew')
          vim.cmd('Caboose ' .. word)
        end
      `);
      await t.waitFor(async () => (await chatText(t)).includes('Reply to gamma.'), 'the last reply');
      await idle(t);
      await noErrors(t);
      const text = await chatText(t);
      assert.ok(!/alpha|beta|warm up|Default reply/.test(text), `only the last session in the chat:\n${text}`);
      // Every message was stored, each in a session of its own (the left ones were stopped, not lost).
      await t.waitFor(async () => [...(await userMessages(t)).values()].flat().length === 4, 'four stored messages');
      const msgs = await userMessages(t);
      assert.deepEqual([...msgs.values()].map((m) => m.join(',')).sort(), ['alpha', 'beta', 'gamma', 'warm up']);
      assert.deepEqual(msgs.get((await state(t)).session!), ['gamma']);
      assert.equal(msgs.size, 4);
      noStoreErrors(t);
    });

    it('reopening a session, or :CabooseAgent, then a message at once: the message continues the chat switched to', async () => {
      const t = await e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
      e.fake.scriptFor('pelicans', { text: 'Pelicans have a pouch.' }, { text: 'They also fly.' });
      e.fake.scriptFor('widgets', { text: 'Widgets are quantized.' });
      await t.cmd('Caboose pelicans please');
      await t.waitFor(async () => (await chatText(t)).includes('pouch'), 'the first reply');
      await idle(t);
      const first = (await state(t)).session!;
      await t.cmd('CabooseNew');
      await t.cmd('Caboose widgets please');
      await t.waitFor(async () => (await chatText(t)).includes('quantized'), 'the second reply');
      await idle(t);
      const second = (await state(t)).session!;

      const n = e.fake.requests.length;
      await t.lua("require('caboose.ui.sessions').open(...); vim.cmd('Caboose and what else')", [first]);
      await t.waitFor(async () => (await chatText(t)).includes('They also fly.'), 'the reply in the reopened session');
      await idle(t);
      await noErrors(t);
      const req = e.fake.requests.slice(n).find((r) => r.path.endsWith('/chat/completions'));
      const said = (req?.body?.messages ?? []).map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : ''}`).slice(1);
      assert.deepEqual(said, ['user: pelicans please', 'assistant: Pelicans have a pouch.', 'user: and what else']);

      e.fake.scriptFor('agent switch', { text: 'Fresh agent chat.' });
      await t.lua("require('caboose').agent('caboose', true); vim.cmd('Caboose agent switch')");
      await t.waitFor(async () => (await chatText(t)).includes('Fresh agent chat.'), 'the reply after :CabooseAgent');
      await idle(t);
      await noErrors(t);
      const msgs = await userMessages(t);
      assert.deepEqual(msgs.get(first), ['pelicans please', 'and what else']);
      assert.deepEqual(msgs.get(second), ['widgets please']);
      assert.deepEqual(msgs.get((await state(t)).session!), ['agent switch']);
      noStoreErrors(t);
    });
  });
});
