/**
 * Issue 22, conversation control, end to end: regenerate the last reply (:CabooseRetry, the chat's gR),
 * with another model, after a turn that changed files; edit-and-resend (gI) forks the chat.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { UI_STUB } from '../support/ui-stub';
import type { FakeMessage, FakeRequest } from '../support/fake-openai';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

const EVENTS_STUB = `
_G.regenerated, _G.forked = {}, {}
vim.api.nvim_create_autocmd('User', { pattern = 'CabooseRegenerated', callback = function(ev) table.insert(_G.regenerated, ev.data) end })
vim.api.nvim_create_autocmd('User', { pattern = 'CabooseForked', callback = function(ev) table.insert(_G.forked, ev.data) end })
`;
const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })\n${UI_STUB}\n${EVENTS_STUB}`;

/** The conversation a request carried, without the system prompt: `role: text` lines. */
function conversation(req: FakeRequest | undefined): string[] {
  return (req?.body?.messages ?? [])
    .filter((m: FakeMessage) => m.role !== 'system')
    .map((m: FakeMessage) => `${m.role}: ${typeof m.content === 'string' ? m.content : (m.tool_calls ?? []).map((c) => c.function.name).join(',')}`);
}

const chatText = async (t: TestNvim) => (await t.chatLines()).join('\n');
const idle = (t: TestNvim) => t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
const sessionId = (t: TestNvim) => t.lua<string>("return require('caboose').state().session");

forEachNvim((bin) => {
  describe(`conversation control (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    /** Sends `text`, waits for `reply` in the chat and for the idle state. */
    const turn = async (text: string, reply: string) => {
      e.fake.script({ text: reply });
      await e.t.cmd(`Caboose ${text}`);
      await e.t.waitFor(async () => (await chatText(e.t)).includes(reply), reply);
      await idle(e.t);
    };
    /** Puts the cursor of the transcript's window on line `row` (1-based) and focuses it. */
    const focusTranscript = async (row: number) => {
      await e.t.lua(`local win = vim.fn.win_findbuf(require('caboose.chat').buf())[1]
        vim.api.nvim_set_current_win(win)
        vim.api.nvim_win_set_cursor(win, { ..., 0 })`, [row]);
    };

    it('gR regenerates: the previous reply is gone from the chat and from the next request, which asks the same message again', async () => {
      await e.start({ initLua: SETUP });
      await turn('first question', 'answer one');
      await turn('second question', 'old answer two');
      const n = e.fake.chatRequests.length;
      e.fake.script({ text: 'new answer two' });
      await focusTranscript(1);
      await e.t.nvim.input('gR');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('new answer two'), 'the regenerated reply');
      await idle(e.t);
      assert.deepEqual(conversation(e.fake.chatRequests[n]), ['user: first question', 'assistant: answer one', 'user: second question']);
      const text = await chatText(e.t);
      assert.doesNotMatch(text, /old answer two/);
      assert.match(text, /↻ regenerating the last reply: the previous reply was removed/);
      assert.equal(text.match(/second question/g)?.length, 1, 'the message is shown once, above the new reply');
      assert.ok(text.indexOf('↻ regenerating') < text.indexOf('second question'));
      // The next message continues from the new reply.
      await turn('third', 'answer three');
      assert.deepEqual(conversation(e.fake.chatRequests.at(-1)), [
        'user: first question',
        'assistant: answer one',
        'user: second question',
        'assistant: new answer two',
        'user: third',
      ]);
      const ev = await e.t.lua<{ message: string }[]>('return _G.regenerated');
      assert.equal(ev[0].message, 'second question');
      // The stored session lost the old reply too: reopened, it shows the new one only.
      const id = await sessionId(e.t);
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await sessionId(e.t)) !== id, 'a new session');
      await e.t.lua("require('caboose.ui.sessions').open(...)", [id]);
      await e.t.waitFor(async () => (await chatText(e.t)).includes('answer three'), 'the reopened transcript');
      const reopened = await chatText(e.t);
      assert.doesNotMatch(reopened, /old answer two/);
      assert.match(reopened, /↻ regenerating the last reply[^\n]*\n(.*\n)*## You\n\nsecond question\n(.*\n)*new answer two/);
      // The keys are in g? (and ? stays a search).
      await focusTranscript(1);
      await e.t.nvim.input('g?');
      await e.t.waitFor(() => e.t.lua<boolean>("return vim.bo.filetype == 'caboose_keys'"), 'the keys float');
      const keys = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      assert.match(keys, /^ gR +regenerate the last reply \(:CabooseRetry \[model\]\)$/m);
      assert.match(keys, /^ gI +edit your message under the cursor, resend \(forks\)$/m);
    });

    it(':CabooseRetry is refused while a turn runs, and with nothing to regenerate', async () => {
      await e.start({ initLua: SETUP });
      await e.t.cmd('CabooseRetry');
      await e.t.waitFor(async () => (await e.t.notifications()).find((x) => /nothing to regenerate/.test(x.msg)), 'the refusal (nothing sent yet)');
      let release!: () => void;
      e.fake.script({ text: 'slow reply', chunks: ['slow ', 'reply'], gate: new Promise<void>((r) => (release = r)), gateAfterChunks: 1 });
      await e.t.cmd('Caboose hello');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('slow'), 'the reply streaming');
      await e.t.cmd('CabooseRetry');
      await e.t.waitFor(async () => (await e.t.notifications()).find((x) => /a turn is running: stop it first/.test(x.msg)), 'the refusal (busy)');
      release();
      await e.t.waitFor(async () => (await chatText(e.t)).includes('slow reply'), 'the reply');
      await idle(e.t);
      assert.equal(e.fake.chatRequests.length, 1, 'nothing was sent again');
    });

    it(':CabooseRetry {model} regenerates with that model (request and chat say so) and completes model names', async () => {
      await e.start({
        initLua: `require('caboose').setup({ mode = 'chug', provider = 'fake', providers = { fake = { base_url = '${e.fake.url}', api_key = 'k', model = 'model-a', models = { 'model-b' }, max_retries = 0 } } })\n${UI_STUB}\n${EVENTS_STUB}`,
      });
      await turn('which model are you', 'I am model a');
      assert.equal(e.fake.chatRequests[0].body?.model, 'model-a');
      const completions = await e.t.lua<string[]>("return vim.fn.getcompletion('CabooseRetry fake/', 'cmdline')");
      assert.ok(completions.includes('fake/model-b'), JSON.stringify(completions));
      e.fake.script({ text: 'I am model b' });
      await e.t.cmd('CabooseRetry fake/model-b');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('I am model b'), 'the reply of model b');
      await idle(e.t);
      const req = e.fake.chatRequests[1];
      assert.equal(req.body?.model, 'model-b');
      assert.deepEqual(conversation(req), ['user: which model are you']);
      const text = await chatText(e.t);
      assert.match(text, /↻ regenerating the last reply with fake\/model-b: the previous reply was removed/);
      assert.doesNotMatch(text, /I am model a/);
      const ev = await e.t.lua<{ model: string }[]>('return _G.regenerated');
      assert.equal(ev[0].model, 'fake/model-b');
    });

    it('regenerating a turn that changed files offers the rewind: cancel keeps all, rewind restores the files, then asks again', async () => {
      await e.start({ initLua: SETUP });
      const abs = path.join(e.t.cwd, 'w.txt');
      fs.writeFileSync(abs, 'before\n');
      e.fake.script({ toolCalls: [{ name: 'write_file', arguments: { path: 'w.txt', content: 'after\n', expectedSha256: sha('before\n') } }] }, { text: 'wrote it' });
      await e.t.cmd('Caboose change w.txt');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('wrote it'), 'the reply');
      await idle(e.t);
      assert.equal(fs.readFileSync(abs, 'utf8'), 'after\n');
      // Cancel: nothing happens.
      await e.t.cmd('CabooseRetry');
      await e.t.waitFor(async () => (await e.t.lua<number>('return #_G.ui.selects')) === 1, 'the question');
      const q = (await e.t.lua<{ prompt: string; items: string[] }[]>('return _G.ui.selects'))[0];
      assert.equal(q.prompt, 'The replies to your last message changed 1 file (w.txt): ');
      assert.deepEqual(q.items, ['Rewind the files and regenerate', 'Keep the files and regenerate', 'Cancel']);
      assert.equal(fs.readFileSync(abs, 'utf8'), 'after\n');
      assert.match(await chatText(e.t), /wrote it/);
      assert.equal(e.fake.chatRequests.length, 2);
      // Rewind.
      e.fake.script({ text: 'a different answer' });
      await e.t.lua("table.insert(_G.ui.pick, 'Rewind the files')");
      await e.t.cmd('CabooseRetry');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('a different answer'), 'the regenerated reply');
      await idle(e.t);
      assert.equal(fs.readFileSync(abs, 'utf8'), 'before\n', 'the file is back');
      assert.deepEqual(conversation(e.fake.chatRequests[2]), ['user: change w.txt'], 'the old turn, its tool call and result are gone');
      const text = await chatText(e.t);
      assert.match(text, /↻ regenerating the last reply its file changes rewound \(w\.txt\): the previous reply was removed/);
      assert.doesNotMatch(text, /wrote it/);
      // The rewound checkpoint is not offered again.
      assert.deepEqual(
        (await e.t.lua<{ rewound: boolean }[]>("return require('caboose.rpc').request('checkpoint.list', {}).checkpoints")).map((c) => c.rewound),
        [true],
      );
    });

    it('gI on a user message forks the chat: the request holds the history before it plus the edited text; the earlier branch is listed and reopens unchanged', async () => {
      await e.start({ initLua: SETUP });
      await turn('one', 'reply one');
      await turn('two', 'reply two');
      await turn('three', 'reply three');
      const original = await sessionId(e.t);
      const lines = await e.t.chatLines();
      // The cursor on the body of the second message.
      const row = lines.findIndex((l, i) => l === 'two' && lines[i - 2] === '## You') + 1;
      assert.ok(row > 0, lines.join('\n'));
      await focusTranscript(row);
      await e.t.nvim.input('gI');
      await e.t.waitFor(() => e.t.lua("return require('caboose.conversation')._float()"), 'the edit float');
      assert.deepEqual(await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)'), ['two']);
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'two, edited' })");
      e.fake.script({ text: 'reply to the edit' });
      const n = e.fake.chatRequests.length;
      await e.t.nvim.input('<C-s>');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('reply to the edit'), 'the reply in the new branch');
      await idle(e.t);
      assert.deepEqual(conversation(e.fake.chatRequests[n]), ['user: one', 'assistant: reply one', 'user: two, edited']);
      const fork = await sessionId(e.t);
      assert.notEqual(fork, original);
      const text = await chatText(e.t);
      assert.match(text, /⑂ forked from/);
      assert.doesNotMatch(text, /reply two|three/);
      assert.equal((await e.t.lua<{ session: string; from: string }[]>('return _G.forked'))[0].from, original);
      // :CabooseSessions lists both; the fork says where it came from.
      const before = await e.t.lua<number>('return #_G.ui.selects');
      await e.t.cmd('CabooseSessions');
      await e.t.waitFor(async () => (await e.t.lua<number>('return #_G.ui.selects')) > before, 'the session picker');
      const items = (await e.t.lua<{ items: string[] }[]>('return _G.ui.selects')).at(-1)!.items;
      const forkLine = items.find((s) => s.includes('⑂ forked from'));
      assert.ok(forkLine, items.join('\n'));
      assert.equal(items.filter((s) => /\d+ messages?/.test(s)).length, 2, items.join('\n'));
      // The earlier branch reopens with its original messages, and continues from them.
      await e.t.lua("require('caboose.ui.sessions').open(...)", [original]);
      await e.t.waitFor(async () => (await sessionId(e.t)) === original, 'the earlier branch reopened');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('reply three'), 'its transcript');
      const old = await chatText(e.t);
      assert.match(old, /reply two/);
      assert.doesNotMatch(old, /two, edited|reply to the edit|forked/);
      await turn('four', 'reply four');
      assert.deepEqual(conversation(e.fake.chatRequests.at(-1)), [
        'user: one',
        'assistant: reply one',
        'user: two',
        'assistant: reply two',
        'user: three',
        'assistant: reply three',
        'user: four',
      ]);
    });

    it('gI finds your message by its mark: a reply imitating a "## You" heading is not one; the text comes back exactly, also after a reopen', async () => {
      await e.start({ initLua: SETUP });
      await turn('first', 'Sure.\n\n## You\n\nnot a user message');
      e.fake.script({ text: 'second reply' });
      await e.t.lua("require('caboose').send(...)", ['line one\n\n> a quoted line\n## not a heading']);
      await e.t.waitFor(async () => (await chatText(e.t)).includes('second reply'), 'the second reply');
      await idle(e.t);
      const floatText = async (row: number) => {
        await focusTranscript(row);
        await e.t.nvim.input('gI');
        await e.t.waitFor(() => e.t.lua("return require('caboose.conversation')._float()"), 'the edit float');
        const text = await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)');
        await e.t.nvim.input('<Esc>');
        await e.t.waitFor(async () => (await e.t.lua("return require('caboose.conversation')._float()")) === null, 'the float closed');
        return text;
      };
      let lines = await e.t.chatLines();
      // On the imitation: a reply, not a message.
      await focusTranscript(lines.indexOf('not a user message') + 1);
      await e.t.nvim.input('gI');
      await e.t.waitFor(async () => (await e.t.notifications()).find((x) => /put the cursor on one of your messages/.test(x.msg)), 'the hint');
      assert.deepEqual(await floatText(lines.indexOf('> a quoted line') + 1), ['line one', '', '> a quoted line', '## not a heading']);
      assert.deepEqual(await floatText(lines.indexOf('first') + 1), ['first']);
      // Reopened (the transcript is loaded in one piece): the marks are there too.
      const id = await sessionId(e.t);
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await sessionId(e.t)) !== id, 'a new session');
      await e.t.lua("require('caboose.ui.sessions').open(...)", [id]);
      await e.t.waitFor(async () => (await chatText(e.t)).includes('second reply'), 'the reopened transcript');
      lines = await e.t.chatLines();
      assert.deepEqual(await floatText(lines.indexOf('## not a heading') + 1), ['line one', '', '> a quoted line', '## not a heading']);
      // Sent from the float: the fork is cut before the second message.
      await focusTranscript(lines.indexOf('## not a heading') + 1);
      await e.t.nvim.input('gI');
      await e.t.waitFor(() => e.t.lua("return require('caboose.conversation')._float()"), 'the edit float');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'rewritten' })");
      e.fake.script({ text: 'fork reply' });
      const n = e.fake.chatRequests.length;
      await e.t.nvim.input('<CR>');
      await e.t.waitFor(async () => (await chatText(e.t)).includes('fork reply'), 'the fork reply');
      assert.deepEqual(conversation(e.fake.chatRequests[n]), ['user: first', 'assistant: Sure.\n\n## You\n\nnot a user message', 'user: rewritten']);
    });

    it('gI outside a user message says where to put the cursor; chat.keys renames and disables the keys', async () => {
      await e.start({ initLua: `require('caboose').setup({ mode = 'chug', chat = { keys = { regenerate = '', edit = '<Leader>e' } } })\n${UI_STUB}\n${EVENTS_STUB}` });
      await turn('hello', 'reply hello');
      const maps = await e.t.lua<string[]>(`local out = {}
        for _, m in ipairs(vim.api.nvim_buf_get_keymap(require('caboose.chat').buf(), 'n')) do
          if (m.desc or ''):find('regenerate') or (m.desc or ''):find('resend') then table.insert(out, m.lhs) end
        end
        return out`);
      assert.deepEqual(maps, ['\\e']);
      const lines = await e.t.chatLines();
      await focusTranscript(lines.indexOf('reply hello') + 1);
      await e.t.nvim.input('\\e');
      await e.t.waitFor(async () => (await e.t.notifications()).find((x) => /put the cursor on one of your messages/.test(x.msg)), 'the hint');
      assert.equal(await e.t.lua("return require('caboose.conversation')._float()"), null);
      assert.match(await e.t.lua<string>("return vim.fn.execute('verbose map gR')"), /No mapping found/);
      const bad = await e.t.lua<string>("local ok, err = pcall(require('caboose').setup, { chat = { keys = { edit = 1 } } }) return ok and '' or tostring(err)");
      assert.match(bad, /chat\.keys/);
    });
  });
});
