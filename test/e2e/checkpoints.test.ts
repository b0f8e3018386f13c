/** Checkpoints in real headless Neovim: :CabooseUndo and :CabooseCheckpoints on disk and through buffers. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { bufferOf, toolCall } from '../support/buffers';
import { lastToolResults } from '../support/chat-requests';
import type { FakeToolCall } from '../support/fake-openai';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const PATCH = '--- a/p.txt\n+++ b/p.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n';

// vim.ui.select answers with _G.answer ('Rewind' or 'Cancel') and records its prompts; User CabooseRewound is recorded.
const INIT = `require('caboose').setup({ mode = 'chug' })
  _G.prompts, _G.answer, _G.rewound = {}, 'Rewind', {}
  vim.ui.select = function(items, opts, cb)
    table.insert(_G.prompts, opts.prompt)
    for i, it in ipairs(items) do if it == _G.answer then return cb(it, i) end end
    cb(nil, nil)
  end
  vim.api.nvim_create_autocmd('User', { pattern = 'CabooseRewound', callback = function(ev) table.insert(_G.rewound, ev.data) end })`;

forEachNvim((bin) => {
  describe(`checkpoints (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const abs = (p: string) => path.join(e.t.cwd, p);
    const put = (p: string, text: string, mode?: number) => {
      fs.mkdirSync(path.dirname(abs(p)), { recursive: true });
      fs.writeFileSync(abs(p), text);
      if (mode !== undefined) fs.chmodSync(abs(p), mode);
    };
    const file = (p: string) => (fs.existsSync(abs(p)) ? fs.readFileSync(abs(p), 'utf8') : null);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
    let turns = 0;
    /** One user message whose turn makes these tool calls (all must succeed), then answers. */
    const turn = async (message: string, calls: FakeToolCall[]) => {
      const done = `done ${++turns}`;
      const n = e.fake.chatRequests.length;
      e.fake.script({ toolCalls: calls }, { text: done });
      await e.t.cmd(`Caboose ${message}`);
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(done), done);
      await idle();
      for (const [id, r] of lastToolResults(e.fake.chatRequests[n + 1])) assert.ok(r.ok, `${id}: ${JSON.stringify(r)}`);
    };
    const notified = (re: RegExp) => e.t.waitFor(async () => (await e.t.notifications()).find((x) => re.test(x.msg)), `a notification matching ${re}`);
    const lines = (name: string) => e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)', [name]);

    it(':CabooseUndo rewinds write, edit, patch, create, delete and move on disk; the model learns it with the next message', async () => {
      await e.start({ initLua: INIT });
      put('w.txt', 'write me\n');
      put('e.txt', 'edit me\n');
      put('p.txt', 'one\ntwo\nthree\n');
      put('d.sh', '#!/bin/sh\n', 0o755);
      put('m.txt', 'move me\n');
      await turn('change the files', [
        { name: 'write_file', arguments: { path: 'w.txt', content: 'written\n', expectedSha256: sha('write me\n') } },
        { name: 'edit_file', arguments: { path: 'e.txt', expectedSha256: sha('edit me\n'), edits: [{ oldText: 'edit me', newText: 'edited' }] } },
        { name: 'apply_patch', arguments: { patch: PATCH } },
        { name: 'create_file', arguments: { path: 'new/c.txt', content: 'created\n' } },
        { name: 'delete_file', arguments: { path: 'd.sh', expectedSha256: sha('#!/bin/sh\n') } },
        { name: 'move_file', arguments: { from: 'm.txt', to: 'moved/m.txt', expectedSha256: sha('move me\n') } },
      ]);
      assert.equal(file('w.txt'), 'written\n');
      assert.equal(file('d.sh'), null);
      await e.t.cmd('CabooseUndo');
      const n = await notified(/rewound "change the files"/);
      assert.match(n.msg, /w\.txt restored.*new\/c\.txt removed \(:CabooseRestore brings it back\).*d\.sh recreated.*moved\/m\.txt moved back to m\.txt/);
      assert.equal(file('w.txt'), 'write me\n');
      assert.equal(file('e.txt'), 'edit me\n');
      assert.equal(file('p.txt'), 'one\ntwo\nthree\n');
      assert.equal(file('new/c.txt'), null);
      assert.equal(file('d.sh'), '#!/bin/sh\n');
      assert.equal(fs.statSync(abs('d.sh')).mode & 0o777, 0o755);
      assert.equal(file('m.txt'), 'move me\n');
      assert.equal(file('moved/m.txt'), null);
      assert.equal((await e.t.chatLines()).join('\n').match(/rewound "change the files"/g)?.length, 1, 'said once in the chat');
      const ev = await e.t.lua<{ checkpoints: { message: string }[]; files: { path: string; action: string }[] }[]>('return _G.rewound');
      assert.equal(ev.length, 1);
      assert.deepEqual(ev[0].checkpoints.map((c) => c.message), ['change the files']);
      assert.equal(ev[0].files.find((f) => f.path === 'new/c.txt')?.action, 'trashed');
      // The created file waits in the trash.
      const trash = await e.t.lua<{ originalPath: string }[]>("return require('caboose.rpc').request('trash.list', {})");
      assert.ok(trash.some((t) => t.originalPath === 'new/c.txt'));
      // The model is told, once, with the next message, even when the session was left and reopened in
      // between (the note waits in the session store, not in the host's memory).
      const id = await e.t.lua<string>("return require('caboose').state().session");
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().session")) !== id, 'a new session');
      await e.t.lua("require('caboose.ui.sessions').open(...)", [id]);
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().session")) === id, 'the session reopened');
      // The reopened transcript still says what was rewound.
      await e.t.waitFor(async () => /rewound "change the files": w\.txt restored/.test((await e.t.chatLines()).join('\n')), 'the rewind line in the reopened chat');
      e.fake.script({ text: 'noted' }, { text: 'again' });
      const i = e.fake.chatRequests.length;
      await e.t.cmd('Caboose what now?');
      await e.fake.waitForRequest(i + 1);
      const lastUser = (k: number) => String(e.fake.chatRequests[k].body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.match(lastUser(i), /^\[Note: the user rewound the file changes made for their message "change the files" \(w\.txt restored, .*\)\.[^\n]*\]\n\nwhat now\?$/);
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('noted'), 'the answer');
      await idle();
      await e.t.cmd('Caboose and then?');
      await e.fake.waitForRequest(i + 2);
      assert.equal(lastUser(i + 1), 'and then?');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('again'), 'the answer');
      await idle();
      // Nothing left to rewind.
      await e.t.cmd('CabooseUndo');
      await notified(/nothing to rewind/);
    });

    it('clean loaded buffers show the old text, stay unmodified, and one `u` brings the agent text back', async () => {
      await e.start({ initLua: INIT });
      put('w.txt', 'write me\n');
      put('e.txt', 'edit me\n');
      put('p.txt', 'one\ntwo\nthree\n');
      put('d.txt', 'delete me\n');
      put('m.txt', 'move me\n');
      for (const f of ['w.txt', 'p.txt', 'd.txt', 'm.txt', 'e.txt']) await e.t.cmd(`edit ${f}`);
      await turn('change loaded files', [
        { name: 'write_file', arguments: { path: 'w.txt', content: 'written\n', expectedSha256: sha('write me\n') } },
        { name: 'edit_file', arguments: { path: 'e.txt', expectedSha256: sha('edit me\n'), edits: [{ oldText: 'edit me', newText: 'edited' }] } },
        { name: 'apply_patch', arguments: { patch: PATCH } },
        { name: 'create_file', arguments: { path: 'c.txt', content: 'created\n' } },
        { name: 'delete_file', arguments: { path: 'd.txt', expectedSha256: sha('delete me\n') } },
        { name: 'move_file', arguments: { from: 'm.txt', to: 'n.txt', expectedSha256: sha('move me\n') } },
      ]);
      assert.deepEqual(await bufferOf(e.t, abs('e.txt')), { lines: ['edited'], modified: false });
      assert.ok(await bufferOf(e.t, abs('n.txt')), 'the buffer moved with the file');
      await e.t.cmd('CabooseUndo');
      await notified(/rewound "change loaded files"/);
      assert.deepEqual(await bufferOf(e.t, abs('w.txt')), { lines: ['write me'], modified: false });
      assert.deepEqual(await bufferOf(e.t, abs('e.txt')), { lines: ['edit me'], modified: false });
      assert.deepEqual(await bufferOf(e.t, abs('p.txt')), { lines: ['one', 'two', 'three'], modified: false });
      assert.deepEqual(await bufferOf(e.t, abs('m.txt')), { lines: ['move me'], modified: false }, 'the buffer moved back');
      assert.equal(await bufferOf(e.t, abs('n.txt')), null);
      assert.equal(file('e.txt'), 'edit me\n');
      assert.equal(file('d.txt'), 'delete me\n');
      assert.equal(file('c.txt'), null);
      // The rewind is one undo step on top of the agent's: `u` shows the agent's text again (unsaved), <C-r> the old.
      await e.t.cmd('buffer e.txt');
      await e.t.cmd('undo');
      assert.deepEqual(await bufferOf(e.t, abs('e.txt')), { lines: ['edited'], modified: true });
      await e.t.cmd('redo');
      assert.deepEqual(await bufferOf(e.t, abs('e.txt')), { lines: ['edit me'], modified: false });
      const msgs = await e.t.lua<string>("return vim.fn.execute('messages')");
      assert.doesNotMatch(msgs, /W1[12]|E\d+:/);
    });

    it('`u` after an agent write to a clean buffer leaves it modified (the disk keeps the agent text); <C-r> is clean again', async () => {
      await e.start({ initLua: INIT });
      put('f.txt', 'old\n');
      await e.t.cmd('edit f.txt');
      const r = await toolCall(e.t, 'write_file', { path: 'f.txt', content: 'new\n', expectedSha256: sha('old\n') });
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(await bufferOf(e.t, abs('f.txt')), { lines: ['new'], modified: false });
      await e.t.cmd('undo');
      assert.deepEqual(await bufferOf(e.t, abs('f.txt')), { lines: ['old'], modified: true });
      await e.t.cmd('redo');
      assert.deepEqual(await bufferOf(e.t, abs('f.txt')), { lines: ['new'], modified: false });
      assert.equal(file('f.txt'), 'new\n');
    });

    it('unsaved buffers get their text back in the buffer only; the disk is untouched', async () => {
      await e.start({ initLua: INIT });
      put('w.txt', 'disk w\n');
      put('e.txt', 'disk e\n');
      put('p.txt', 'one\ntwo\nthree\n');
      for (const [f, text] of [['w.txt', 'user w'], ['e.txt', 'user e'], ['p.txt', 'one\ntwo\nthree\nuser p']] as const) {
        await e.t.cmd(`edit ${f}`);
        await e.t.lua('vim.api.nvim_buf_set_lines(0, 0, -1, false, vim.split(..., "\\n"))', [text]);
      }
      await turn('edit unsaved buffers', [
        { name: 'write_file', arguments: { path: 'w.txt', content: 'agent w\n', expectedSha256: sha('user w\n') } },
        { name: 'edit_file', arguments: { path: 'e.txt', expectedSha256: sha('user e\n'), edits: [{ oldText: 'user e', newText: 'agent e' }] } },
        { name: 'apply_patch', arguments: { patch: PATCH } },
      ]);
      assert.deepEqual(await bufferOf(e.t, abs('e.txt')), { lines: ['agent e'], modified: true });
      assert.deepEqual((await bufferOf(e.t, abs('p.txt')))!.lines, ['one', 'TWO', 'three', 'user p']);
      await e.t.cmd('CabooseUndo');
      const n = await notified(/rewound "edit unsaved buffers"/);
      assert.match(n.msg, /w\.txt restored \(in its unsaved buffer\)/);
      assert.deepEqual(await bufferOf(e.t, abs('w.txt')), { lines: ['user w'], modified: true });
      assert.deepEqual(await bufferOf(e.t, abs('e.txt')), { lines: ['user e'], modified: true });
      assert.deepEqual(await bufferOf(e.t, abs('p.txt')), { lines: ['one', 'two', 'three', 'user p'], modified: true });
      assert.equal(file('w.txt'), 'disk w\n');
      assert.equal(file('e.txt'), 'disk e\n');
      assert.equal(file('p.txt'), 'one\ntwo\nthree\n');
    });

    it('a file changed after the agent wrote it is not clobbered: the rewind names it and waits for a yes', async () => {
      await e.start({ initLua: INIT });
      put('a.txt', 'orig a\n');
      put('b.txt', 'orig b\n');
      put('c.txt', 'orig c\n');
      await e.t.cmd('edit b.txt');
      await turn('edit three', [
        { name: 'write_file', arguments: { path: 'a.txt', content: 'agent a\n', expectedSha256: sha('orig a\n') } },
        { name: 'write_file', arguments: { path: 'b.txt', content: 'agent b\n', expectedSha256: sha('orig b\n') } },
        { name: 'write_file', arguments: { path: 'c.txt', content: 'agent c\n', expectedSha256: sha('orig c\n') } },
      ]);
      // Another program changes a.txt; the user types in b.txt's buffer.
      put('a.txt', 'someone else\n');
      await e.t.lua("vim.api.nvim_buf_set_lines(vim.fn.bufnr('b.txt'), 0, -1, false, { 'user typing' })");
      await e.t.lua("_G.answer = 'Cancel'");
      await e.t.cmd('CabooseUndo');
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return _G.prompts')).length === 1, 'the question');
      assert.deepEqual(await e.t.lua('return _G.prompts'), ['2 files changed since the agent wrote them: a.txt, b.txt. Rewind anyway?']);
      assert.equal(file('a.txt'), 'someone else\n');
      assert.equal(file('c.txt'), 'agent c\n', 'nothing was rewound');
      assert.deepEqual(await bufferOf(e.t, abs('b.txt')), { lines: ['user typing'], modified: true });
      assert.deepEqual(await e.t.lua('return _G.rewound'), []);
      // Yes: everything is rewound; the unsaved buffer gets the old text in the buffer only.
      await e.t.lua("_G.answer = 'Rewind'");
      await e.t.cmd('CabooseUndo');
      await notified(/rewound "edit three"/);
      assert.equal(file('a.txt'), 'orig a\n');
      assert.equal(file('c.txt'), 'orig c\n');
      assert.deepEqual(await bufferOf(e.t, abs('b.txt')), { lines: ['orig b'], modified: true });
      assert.equal(file('b.txt'), 'agent b\n');
    });

    it(':CabooseCheckpoints lists the messages with a diff preview and rewinds two turns at once', async () => {
      await e.start({ initLua: INIT });
      put('a.txt', 'v0\n');
      await turn('first change', [{ name: 'write_file', arguments: { path: 'a.txt', content: 'v1\n', expectedSha256: sha('v0\n') } }]);
      await turn('second change', [
        { name: 'write_file', arguments: { path: 'a.txt', content: 'v2\n', expectedSha256: sha('v1\n') } },
        { name: 'create_file', arguments: { path: 'b.txt', content: 'bee\n' } },
      ]);
      await e.t.cmd('CabooseCheckpoints');
      const picker = await e.t.waitFor(
        () => e.t.lua<{ list_win: number; list_buf: number; preview_buf: number } | null>("return require('caboose.ui.checkpoints').picker()"),
        'the picker',
      );
      assert.equal(await e.t.lua('return vim.api.nvim_get_current_win()'), picker.list_win);
      const list = await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(..., 0, -1, false)', [picker.list_buf]);
      assert.equal(list.length, 2);
      assert.match(list[0], /^(\d{4}-\d\d-\d\d )?\d\d:\d\d {2}2 files {3}second change {2}· a\.txt, b\.txt$/, "today's checkpoints show the hour (the date only past midnight)");
      assert.match(list[1], /1 file .*first change {2}· a\.txt$/);
      const preview = () => e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(..., 0, -1, false)', [picker.preview_buf]);
      let text = (await e.t.waitFor(async () => ((await preview()).join('\n').includes('@@') ? preview() : null), 'the preview')).join('\n');
      assert.match(text, /<CR> rewinds 1 message:\n {2}second change/);
      assert.match(text, /--- a\/a\.txt\n\+\+\+ b\/a\.txt\n@@ -1,1 \+1,1 @@\n-v1\n\+v2/);
      assert.match(text, /\+\+\+ b\/b\.txt\n@@ -0,0 \+1,1 @@\n\+bee/);
      // The older entry: rewinding to it undoes both messages.
      await e.t.nvim.input('j');
      text = (await e.t.waitFor(async () => ((await preview()).join('\n').includes('2 messages') ? preview() : null), 'the older preview')).join('\n');
      assert.match(text, /-v0\n\+v2/);
      await e.t.nvim.input('<CR>');
      await notified(/rewound "first change" and 1 later message/);
      assert.deepEqual(await e.t.lua('return _G.prompts'), ['Rewind 2 messages (2 files) to before "first change"?']);
      assert.equal(await e.t.lua("return require('caboose.ui.checkpoints').picker()"), null);
      assert.equal(file('a.txt'), 'v0\n');
      assert.equal(file('b.txt'), null);
      const ev = await e.t.lua<{ checkpoints: { message: string }[] }[]>('return _G.rewound');
      assert.deepEqual(ev[0].checkpoints.map((c) => c.message), ['second change', 'first change']);
      // Both are marked rewound; q closes the picker.
      await e.t.cmd('CabooseCheckpoints');
      const p2 = await e.t.waitFor(() => e.t.lua<{ list_buf: number } | null>("return require('caboose.ui.checkpoints').picker()"), 'the picker again');
      const again = await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(..., 0, -1, false)', [p2.list_buf]);
      assert.ok(again.every((l) => l.endsWith('(rewound)')), again.join('\n'));
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await e.t.lua("return require('caboose.ui.checkpoints').picker()")) === null, 'closed');
    });

    it('files a bash command created, changed or deleted are rewound too', async () => {
      await e.start({ initLua: INIT });
      put('keep.txt', 'keep\n');
      put('old.txt', 'old\n');
      await turn('tidy up with a script', [{ name: 'bash', arguments: { command: 'echo new > made.txt; echo more >> keep.txt; rm old.txt' } }]);
      assert.equal(file('made.txt'), 'new\n');
      assert.equal(file('keep.txt'), 'keep\nmore\n');
      assert.equal(file('old.txt'), null);
      await e.t.cmd('CabooseUndo');
      const n = await notified(/rewound "tidy up with a script"/);
      assert.match(n.msg, /made\.txt removed/);
      assert.equal(file('made.txt'), null);
      assert.equal(file('keep.txt'), 'keep\n');
      assert.equal(file('old.txt'), 'old\n');
    });

    it('no rewind while the agent works', async () => {
      await e.start({ initLua: INIT });
      put('a.txt', 'v0\n');
      await turn('first change', [{ name: 'write_file', arguments: { path: 'a.txt', content: 'v1\n', expectedSha256: sha('v0\n') } }]);
      e.fake.script({ hang: true });
      await e.t.cmd('Caboose keep going');
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state !== 'idle', 'busy');
      await e.t.cmd('CabooseUndo');
      await notified(/the agent is working; :CabooseStop it first/);
      assert.equal(file('a.txt'), 'v1\n');
      await e.t.cmd('CabooseStop');
      await idle();
    });
  });
});
