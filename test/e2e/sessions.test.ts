import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { processAlive as alive } from '../support/processes';
import { useE2E } from '../support/e2e';
import { UI_STUB } from '../support/ui-stub';
import type { FakeMessage } from '../support/fake-openai';


const chatText = async (t: TestNvim) => (await t.chatLines()).join('\n');
const idle = (t: TestNvim) => t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');
const sessionId = (t: TestNvim) => t.lua<string>("return require('caboose').state().session");

async function pickSession(t: TestNvim, choice: string, query = ''): Promise<void> {
  const before = await t.lua<number>('return #_G.ui.selects');
  await t.lua('table.insert(_G.ui.pick, ...)', [choice]);
  await t.cmd(`CabooseSessions ${query}`);
  await t.waitFor(async () => (await t.lua<number>('return #_G.ui.selects')) > before, 'the session picker');
}

function contents(msgs: FakeMessage[] | undefined): string[] {
  return (msgs ?? []).map((m) => `${m.role}: ${typeof m.content === 'string' ? m.content : ''}`);
}

forEachNvim((bin) => {
  describe(`sessions in Neovim ${bin.version}`, () => {
    const e2e = useE2E(bin);

    it('SIGKILL of Neovim and the host mid-stream: the reopened session shows what was flushed and the next request carries it', async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-home-'));
      const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-ws-'));
      try {
        const t1 = await startNvim({ nvim: bin, home, cwd, env: { OPENAI_BASE_URL: e2e.fake.url, CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
        const never = new Promise<void>(() => undefined);
        e2e.fake.script(
          { text: 'The answer is forty-two.' },
          { text: 'Streaming part one, streaming part two, and a part that never arrives.', chunks: ['Streaming part one, ', 'streaming part two, ', 'and a part that never arrives.'], gate: never, gateAfterChunks: 2 },
        );
        await t1.cmd('Caboose what is the answer');
        await t1.waitFor(async () => (await chatText(t1)).includes('forty-two'), 'the first reply');
        await idle(t1);
        await t1.cmd('Caboose tell me more');
        await t1.waitFor(async () => (await chatText(t1)).includes('streaming part two'), 'the partial second reply');
        // The last delta is flushed within 500 ms.
        await new Promise((r) => setTimeout(r, 600));
        const hostPid = await t1.lua<number>("return require('caboose.rpc').host_pid()");
        process.kill(hostPid, 'SIGKILL');
        t1.proc.kill('SIGKILL');
        await t1.waitFor(async () => !alive(hostPid) && t1.proc.exitCode !== null || t1.proc.signalCode !== null, 'both processes gone');

        const t2 = await startNvim({ nvim: bin, home, cwd, env: { OPENAI_BASE_URL: e2e.fake.url, CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
        try {
          // Found by words only the cut reply holds (its partial rows were never indexed while it streamed:
          // the search indexes them first), and reopened from the search.
          await pickSession(t2, '4 messages', 'streaming part');
          await t2.waitFor(async () => (await chatText(t2)).includes('streaming part two'), 'the reopened transcript');
          const shown = await t2.lua<{ items: string[] }[]>('return _G.ui.selects');
          assert.match(shown[0].items[0], /what is the answer · just now · 4 messages|Fake session title · just now · 4 messages/);
          assert.match(shown[0].items[0], /«streaming» «part» two/i, 'the snippet is from the cut reply');
          await t2.waitFor(async () => (await chatText(t2)).includes('streaming part two'), 'the reopened transcript');
          const text = await chatText(t2);
          assert.match(text, /## You\n\nwhat is the answer\n\n## Caboose\n\nThe answer is forty-two\.\n\n## You\n\ntell me more\n\n## Caboose\n\nStreaming part one, streaming part two, \n\n_\[response interrupted\]_/);
          assert.ok(!text.includes('never arrives'));

          e2e.fake.script({ text: 'Continuing.' });
          const n = e2e.fake.requests.length;
          await t2.cmd('Caboose go on');
          const req = await e2e.fake.waitForRequest(n + 1, 10_000);
          assert.deepEqual(contents(req.body?.messages).slice(1), [
            'user: what is the answer',
            'assistant: The answer is forty-two.',
            'user: tell me more',
            'assistant: Streaming part one, streaming part two, \n\n[response interrupted]',
            'user: go on',
          ]);
          await t2.waitFor(async () => (await chatText(t2)).includes('Continuing.'), 'the reply after resuming');
        } finally {
          await t2.close();
        }
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
        fs.rmSync(cwd, { recursive: true, force: true });
      }
    });

    it(':CabooseNew while a reply streams: the new chat shows nothing of the old turn; the old session keeps it; deleting the open session empties the chat', async () => {
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
      const words = Array.from({ length: 300 }, (_, i) => `word${i} `);
      e2e.fake.script({ text: words.join(''), chunks: words, delayMs: 10 }, { text: 'Fresh start.' });
      await t.cmd('Caboose write a lot');
      await t.waitFor(async () => (await chatText(t)).includes('word20 '), 'the reply streaming');
      const first = await sessionId(t);
      await t.cmd('CabooseNew');
      await t.waitFor(async () => (await sessionId(t)) !== first, 'a new session');
      await idle(t);
      // Longer than a few frames: whatever the old turn still sends while it winds down.
      await new Promise((r) => setTimeout(r, 400));
      const fresh = await chatText(t);
      assert.ok(!/word\d|interrupted|stopped|## Caboose/.test(fresh), `the new chat shows nothing of the old turn:\n${fresh}`);
      await t.cmd('Caboose begin again');
      await t.waitFor(async () => (await chatText(t)).includes('Fresh start.'), 'the new reply');
      await idle(t);
      assert.match(await chatText(t), /^## You\n\nbegin again\n\n## Caboose\n\nFresh start\.$/m);
      assert.ok(!/word\d|interrupted/.test(await chatText(t)));

      // The old session kept what was said, and its interruption.
      await pickSession(t, 'write a lot');
      await t.waitFor(async () => (await sessionId(t)) === first, 'the first session reopened');
      await t.waitFor(async () => /word20 [\s\S]*_\[response interrupted\]_/.test(await chatText(t)), 'the old transcript');
      assert.ok(!(await chatText(t)).includes('Fresh start.'));

      // Deleting the session the chat shows: the chat starts a new, empty one.
      await t.lua("for _, p in ipairs({ 'write a lot', 'Delete' }) do table.insert(_G.ui.pick, p) end");
      await t.cmd('CabooseSessions!');
      await t.waitFor(async () => (await t.notifications()).some((m) => /deleted session/.test(m.msg)), 'deleted');
      await t.waitFor(async () => ![first, null, undefined].includes(await sessionId(t)), 'a new session after deleting the open one');
      assert.ok(!/word\d|## You/.test(await chatText(t)), 'the chat no longer shows the deleted session');
    });

    it('the winbar shows the first words as the title at once; a model title under 3 words does not replace them', async () => {
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: UI_STUB });
      await t.cmd('set columns=200');
      e2e.fake.setTitle('Pelicans');
      e2e.fake.script({ text: 'Pelicans have a throat pouch.' });
      await t.cmd('Caboose tell me about pelicans');
      await t.waitFor(async () => /tell me about pelicans/.test((await t.lua<string>("return require('caboose.chat').status_text()")) ?? ''), 'the first words in the winbar');
      await t.waitFor(async () => e2e.fake.titleRequests.length === 1, 'the title request');
      await idle(t);
      await new Promise((r) => setTimeout(r, 200));
      assert.match((await t.lua<string>("return require('caboose.chat').status_text()")) ?? '', /tell me about pelicans/);
    });

    it(':CabooseNew keeps the old session; full-text search finds it, reopening restores it; titles, :CabooseRename, delete asks', async () => {
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: `vim.o.columns = 160 ${UI_STUB}` }); // room for whole titles in the winbar
      e2e.fake.setTitle('Pelican facts overview');
      e2e.fake.script({ text: 'Pelicans have a throat pouch.' }, { text: 'Widgets are quantized.' });
      await t.cmd('Caboose tell me about pelicans');
      await t.waitFor(async () => (await chatText(t)).includes('throat pouch'), 'first reply');
      await idle(t);
      const first = await sessionId(t);
      await t.waitFor(async () => e2e.fake.titleRequests.length === 1, 'the title request');
      const titleReq = e2e.fake.titleRequests[0].body!;
      assert.match(String(titleReq.messages?.[1]?.content), /tell me about pelicans/);
      assert.equal(titleReq.tools, undefined, 'the title request offers no tools');
      await t.waitFor(async () => /Pelican facts overview/.test((await t.lua<string>("return require('caboose.chat').status_text()")) ?? ''), 'the title in the winbar');

      e2e.fake.setTitle('Quantum widget questions');
      await t.cmd('CabooseNew');
      await t.waitFor(async () => (await sessionId(t)) !== first, 'a new session');
      assert.ok(!(await chatText(t)).includes('pelican'));
      await t.cmd('Caboose quantum widgets please');
      await t.waitFor(async () => (await chatText(t)).includes('quantized'), 'second session reply');
      await idle(t);
      const second = await sessionId(t);

      // Full-text search (words in the reply, a prefix) finds only the first session.
      await t.lua("table.insert(_G.ui.answer, 'pouch')");
      await pickSession(t, '🔍 Search');
      await t.waitFor(async () => (await t.lua<number>('return #_G.ui.selects')) === 2, 'the search results');
      const results = await t.lua<{ prompt: string; items: string[] }[]>('return _G.ui.selects');
      assert.match(results[1].prompt, /matching “pouch”/);
      assert.equal(results[1].items.length, 2, 'one match and the search entry');
      assert.match(results[1].items[0], /Pelican facts overview · .* · 2 messages .*«throat»|«pouch»/);

      // The list: both sessions, the current one marked; choosing the first reopens it.
      await pickSession(t, 'Pelican facts overview');
      await t.waitFor(async () => (await sessionId(t)) === first, 'the first session reopened');
      const list = (await t.lua<{ items: string[] }[]>('return _G.ui.selects')).at(-1)!.items;
      assert.equal(list.length, 3);
      assert.match(list[0], /^● Quantum widget questions/);
      assert.match(list[1], /^ {2}Pelican facts overview/);
      assert.match(await chatText(t), /## You\n\ntell me about pelicans\n\n## Caboose\n\nPelicans have a throat pouch\./);
      assert.ok(!(await chatText(t)).includes('quantized'));

      // The conversation continues with its history.
      e2e.fake.script({ text: 'They also fly.' });
      const n = e2e.fake.requests.length;
      await t.cmd('Caboose and what else');
      const req = await e2e.fake.waitForRequest(n + 1);
      assert.deepEqual(contents(req.body?.messages).slice(1), ['user: tell me about pelicans', 'assistant: Pelicans have a throat pouch.', 'user: and what else']);
      await idle(t);

      await t.cmd('CabooseRename Birds of the sea');
      await t.waitFor(async () => /Birds of the sea/.test((await t.lua<string>("return require('caboose.chat').status_text()")) ?? ''), 'the new title');
      await t.lua("table.insert(_G.ui.answer, 'Renamed by prompt')");
      await t.cmd('CabooseRename');
      await t.waitFor(async () => /Renamed by prompt/.test((await t.lua<string>("return require('caboose.chat').status_text()")) ?? ''), 'the prompted title');
      const inputs = await t.lua<{ default: string }[]>('return _G.ui.inputs');
      assert.equal(inputs.at(-1)!.default, 'Birds of the sea');

      // Delete asks first: "Keep" keeps it, "Delete" deletes it.
      await t.lua("for _, p in ipairs({ 'Quantum widget', 'Keep' }) do table.insert(_G.ui.pick, p) end");
      await t.cmd('CabooseSessions!');
      await t.waitFor(async () => (await t.lua<{ prompt: string }[]>('return _G.ui.selects')).some((s) => /^Delete session “Quantum widget questions” \(2 messages\)\?/.test(s.prompt)), 'the confirmation');
      await t.lua("for _, p in ipairs({ 'Quantum widget', 'Delete' }) do table.insert(_G.ui.pick, p) end");
      // On a narrow screen the message is cut to the command line (a longer one is a hit-enter prompt).
      await t.cmd('set columns=64');
      await t.cmd('CabooseSessions!');
      const gone = await t.waitFor(async () => (await t.notifications()).find((m) => /deleted session “Quantum/.test(m.msg)), 'deleted');
      assert.match(gone.msg, /^\(caboose\) deleted session “Quantum[^”]*…” \(2 messages\)$/);
      assert.ok(gone.msg.length <= (await t.lua<number>('return vim.v.echospace')), gone.msg);
      await t.cmd('set columns=80');
      const before = await t.lua<number>('return #_G.ui.selects');
      await t.lua("table.insert(_G.ui.pick, 'nothing matches this')");
      await t.cmd('CabooseSessions');
      const final = await t.waitFor(async () => {
        const s = await t.lua<{ items: string[] }[]>('return _G.ui.selects');
        return s.length > before ? s.at(-1)!.items : null;
      }, 'the list after deleting');
      assert.equal(final.length, 2);
      assert.match(final[0], /Renamed by prompt/);
      assert.notEqual(second, first);
    });
  });
});
