import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import type { FakeMessage, FakeRequest } from '../support/fake-openai';
import { SUMMARIZE_INSTRUCTION, SUMMARY_PREFIX } from '../../src/agent/context';

const chatText = async (t: TestNvim) => (await t.chatLines()).join('\n');
const idle = (t: TestNvim) => t.waitFor(async () => (await t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'idle');

const lastUser = (r: FakeRequest) => {
  const msgs = r.body?.messages ?? [];
  return String(msgs[msgs.length - 1]?.content ?? '');
};
const toolContents = (msgs: FakeMessage[] | undefined) => (msgs ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));

async function say(t: TestNvim, text: string, expect: string): Promise<void> {
  await t.cmd(`Caboose ${text}`);
  await t.waitFor(async () => (await chatText(t)).includes(expect), `the reply to “${text}”`);
  await idle(t);
}

forEachNvim((bin) => {
  describe(`context management in Neovim ${bin.version}`, () => {
    const e2e = useE2E(bin);

    it('old tool outputs become stubs naming their stored id; recall returns them in slices', async () => {
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' } });
      const body = Array.from({ length: 120 }, (_, i) => `line ${i + 1}: the quick brown fox`).join('\n') + '\n';
      fs.writeFileSync(path.join(t.cwd, 'big.txt'), body);
      const { fake } = e2e;
      fake.script(
        { toolCalls: [{ id: 'read1', name: 'read_file', arguments: { path: 'big.txt' } }] },
        { text: 'Read it.' },
        { text: 'Two.' },
        { text: 'Three.' },
        { text: 'Four.' },
      );
      await say(t, 'read big.txt', 'Read it.');
      await say(t, 'second', 'Two.');
      await say(t, 'third', 'Three.');
      const before = fake.chatRequests.length;
      await say(t, 'fourth', 'Four.');
      const req = fake.chatRequests[before];
      const [stub] = toolContents(req.body?.messages);
      const m = /^\[read_file output \(([\d.]+ KB)\) moved out of the prompt; stored as #(\d+) — call recall with id \2 to read it\]$/.exec(stub);
      assert.ok(m, `a stub, got: ${stub}`);
      const id = Number(m[2]);
      // The third turn still had the output verbatim (newest results are kept).
      assert.match(toolContents(fake.chatRequests[before - 1].body?.messages)[0], /line 120: the quick brown fox/);

      fake.script({ toolCalls: [{ id: 'rc1', name: 'recall', arguments: { id, startLine: 102, lineCount: 30 } }] }, { text: 'Recalled.' });
      const n = fake.chatRequests.length;
      await say(t, 'what was on line 110?', 'Recalled.');
      const result = JSON.parse(toolContents(fake.chatRequests[n + 1].body?.messages).at(-1)!) as { ok: boolean; data: { text: string; startLine: number; endLine: number; totalLines: number } };
      assert.equal(result.ok, true);
      // Line 1 holds the result's small fields, line 2 names the text field; the file's lines follow.
      assert.equal(result.data.startLine, 102);
      assert.ok(result.data.text.startsWith('line 100: the quick brown fox\nline 101'), result.data.text.slice(0, 200));
      assert.ok(result.data.text.includes('line 110: the quick brown fox'));
      assert.equal(result.data.endLine, result.data.totalLines);
      assert.equal(result.data.text.split('\n').length, 21);
      // recall is offered to the model with a schema from zod.
      const spec = (fake.chatRequests[n].body?.tools ?? []).find((x) => x.function.name === 'recall');
      assert.ok(spec);
      assert.deepEqual((spec.function.parameters as { required: string[] }).required, ['id']);
    });

    it('compaction at a small configured window: the summary request reaches the server, the user sees it, recall reads the archive', async () => {
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: "require('caboose').setup({ provider = { context_window = 600 } })" });
      const { fake } = e2e;
      const long = 'Pelicans are large water birds. '.repeat(70);
      const summary = '## Intent\nLearn about pelicans.\n## Files touched\nnone\n## Decisions\nnone\n## Progress\nExplained pelicans.\n## Next steps\nAnswer follow-ups.';
      fake.script({ text: long }, { text: summary }, { text: 'Here is more.' });
      await say(t, 'tell me about pelicans', 'large water birds');
      const n = fake.chatRequests.length;
      await say(t, 'and more', 'Here is more.');
      const summaryReq = fake.chatRequests[n];
      assert.equal(lastUser(summaryReq), SUMMARIZE_INSTRUCTION);
      assert.match(SUMMARIZE_INSTRUCTION, /## Intent[\s\S]*## Files touched[\s\S]*## Decisions[\s\S]*## Progress[\s\S]*## Next steps/);
      assert.equal(summaryReq.body?.tools, undefined);
      assert.ok(JSON.stringify(summaryReq.body?.messages).includes('Pelicans are large water birds'));
      const next = fake.chatRequests[n + 1].body!.messages!;
      assert.equal(next.length, 4, 'system, summary, acknowledgement, the new message');
      const sum = String(next[1].content);
      assert.ok(sum.startsWith(SUMMARY_PREFIX));
      assert.ok(sum.includes('Learn about pelicans.'));
      const archived = Number(/archived as #(\d+)/.exec(sum)?.[1]);
      assert.ok(archived > 0);
      assert.equal(next[3].content, 'and more');
      assert.match(await chatText(t), /compacting the conversation[\s\S]*compacted 2 earlier messages into a summary/);
      // The chat still shows everything that was said.
      assert.match(await chatText(t), /## You\n\ntell me about pelicans/);

      // The recalled archive is long for this tiny window: the conversation is compacted once more before the answer.
      fake.script({ toolCalls: [{ id: 'rc', name: 'recall', arguments: { id: archived } }] }, { text: '## Intent\nsecond summary' }, { text: 'Got it.' });
      const m = fake.chatRequests.length;
      await say(t, 'what did you say first?', 'Got it.');
      const withResult = fake.chatRequests.slice(m).find((r) => (r.body?.messages ?? []).some((x) => x.role === 'tool' && x.tool_call_id === 'rc'))!;
      const res = JSON.parse(toolContents(withResult.body?.messages).at(-1)!) as { ok: boolean; data: { kind: string; text: string } };
      assert.equal(res.data.kind, 'conversation');
      assert.match(res.data.text, /\[user\]\ntell me about pelicans\n\n\[assistant\]\nPelicans are large water birds/);
    });

    it("after a compaction, the current turn's tool outputs never push a request over the window: they leave the prompt (recall keeps them) and the chat says so (issue 17, defect 14)", async () => {
      const WINDOW = 12_000;
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' }, initLua: `require('caboose').setup({ mode = 'chug', provider = { context_window = ${WINDOW} } })` });
      const { fake } = e2e;
      for (const n of [1, 2, 3]) fs.writeFileSync(path.join(t.cwd, `big${n}.txt`), Array.from({ length: 900 }, (_, i) => `file ${n} line ${i + 1}: ${'z'.repeat(30)}`).join('\n') + '\n');
      // The server reports a nearly full window: the next message compacts first.
      fake.script({ text: 'An early answer.', usage: { prompt_tokens: 11_000, completion_tokens: 100 } });
      await say(t, 'start', 'An early answer.');
      const n = fake.chatRequests.length;
      fake.script(
        { text: '## Intent\nread files' },
        { toolCalls: [{ id: 'r1', name: 'read_file', arguments: { path: 'big1.txt' } }, { id: 'r2', name: 'read_file', arguments: { path: 'big2.txt' } }] },
        { toolCalls: [{ id: 'r3', name: 'read_file', arguments: { path: 'big3.txt' } }] },
        { text: 'Read them all.' },
      );
      await say(t, 'read the three files', 'Read them all.');
      const reqs = fake.chatRequests.slice(n);
      assert.equal(lastUser(reqs[0]), SUMMARIZE_INSTRUCTION, 'precondition: the conversation was compacted first');
      assert.equal(reqs.length, 4);
      for (const r of reqs.slice(1)) {
        const chars = JSON.stringify(r.body?.messages ?? []).length + JSON.stringify(r.body?.tools ?? []).length;
        assert.ok(chars / 4 <= WINDOW, `a request of ~${Math.round(chars / 4)} tokens exceeds the ${WINDOW}-token window`);
      }
      const last = toolContents(reqs[3].body?.messages);
      assert.equal(last.length, 3);
      const stubs = last.map((c) => /stored as #(\d+) — call recall with id \1/.exec(c)).filter((m) => m !== null);
      assert.ok(stubs.length >= 2, last.map((c) => c.slice(0, 100)).join('\n'));
      assert.match(await chatText(t), /this turn's tool outputs did not fit the context window \(12000 tokens\): \d+ moved out of the prompt \(stored as #\d+/);

      // recall still reaches a stubbed output.
      fake.script({ toolCalls: [{ id: 'rc', name: 'recall', arguments: { id: Number(stubs[0]![1]), startLine: 1, lineCount: 5 } }] }, { text: 'Recalled it.' });
      const m = fake.chatRequests.length;
      await say(t, 'show the start again', 'Recalled it.');
      const withResult = fake.chatRequests.slice(m).find((r) => (r.body?.messages ?? []).some((x) => x.role === 'tool' && x.tool_call_id === 'rc'))!;
      assert.match(toolContents(withResult.body?.messages).at(-1)!, /file \d line \d+: z+/);
    });

    it('a context-length error from the server compacts and retries once instead of ending the turn', async () => {
      const t = await e2e.start({ env: { CABOOSE_MODEL: 'fake-model' } });
      const { fake } = e2e;
      fake.script(
        { text: 'First answer.' },
        { status: 400, body: { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } } },
        { text: '## Intent\nsummary text' },
        { text: 'Answered after compacting.' },
      );
      await say(t, 'first question', 'First answer.');
      const n = fake.chatRequests.length;
      await say(t, 'second question', 'Answered after compacting.');
      assert.equal(fake.chatRequests.length, n + 3);
      assert.equal(lastUser(fake.chatRequests[n + 1]), SUMMARIZE_INSTRUCTION);
      const retry = fake.chatRequests[n + 2].body!.messages!;
      assert.ok(String(retry[1].content).includes('summary text'));
      assert.equal(retry.at(-1)!.content, 'second question');
      const text = await chatText(t);
      assert.match(text, /context is full: compacting/);
      assert.ok(!/\*\*Error:\*\*/.test(text), text);
    });
  });
});
