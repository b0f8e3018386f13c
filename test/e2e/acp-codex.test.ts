/**
 * A real ACP agent in the chat: Codex's ACP adapter (@zed-industries/codex-acp 0.8.2, installed from npm on
 * first use) talking to the project's fake model server. What the fake model asks it to do goes through
 * our hands: its reads see unsaved buffers, its patches are reviewed hunk by hunk, its escalations are
 * answered from our float, :CabooseStop cancels its turn.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { defaultNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { waitApprovalFloat } from '../support/approval';
import { codexAcp, codexHome } from '../support/acp-agents';
import type { FakeRequest } from '../support/fake-openai';

const ORIG = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'].join('\n') + '\n';
const lastMessage = (req: FakeRequest) => {
  const m = req.body?.messages ?? [];
  return String(m[m.length - 1]?.content ?? '');
};

// One Neovim version: the agent is what is tested here (the ACP paths run on both in acp.test.ts).
describe('a real ACP agent: codex-acp against the fake model', () => {
  let agent: { bin: string } | { skip: string } = { skip: 'not installed yet' };
  before(() => {
    agent = codexAcp();
  });
  const e = useE2E(defaultNvim());
  const chatHas = (text: string | RegExp, timeoutMs = 60_000) =>
    e.t.waitFor(async () => {
      const c = (await e.t.chatLines()).join('\n');
      return typeof text === 'string' ? c.includes(text) : text.test(c);
    }, String(text), timeoutMs);
  const idle = () => e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle', 60_000);
  const bufLines = () => e.t.lua<string[]>("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('a.txt'), 0, -1, false)");
  const review = () => e.t.lua<{ win: number; path: string } | null>("return require('caboose.ui.review').state()");
  const send = (text: string) => e.t.lua(`require('caboose').send(...)`, [text]);

  /** Neovim with codex as `codex`, a.txt open with an unsaved first line; the chat runs codex. */
  async function startWithCodex(t: { skip(msg: string): void }, approvalPolicy?: string): Promise<string | null> {
    if ('skip' in agent) {
      t.skip(agent.skip);
      return null;
    }
    const home = codexHome(e.fake.url, approvalPolicy);
    e.fake.setDefaultReply({ text: 'default reply' });
    await e.start({
      initLua: `require('caboose').setup({ mode = 'create', acp = { agents = { codex = {
        command = { ${JSON.stringify(process.execPath)}, ${JSON.stringify(agent.bin)} },
        env = { CODEX_HOME = ${JSON.stringify(home)}, FAKE_API_KEY = 'sk-fake-codex' } } } } })`,
    });
    const file = path.join(e.t.cwd, 'a.txt');
    fs.writeFileSync(file, ORIG);
    await e.t.cmd('edit a.txt');
    await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'one (unsaved)' })");
    await e.t.cmd('CabooseAgent codex');
    await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === 'codex', 'the chat runs codex');
    return file;
  }

  const patch = (file: string) => `*** Begin Patch\n*** Update File: ${file}\n@@\n-two\n+TWO\n@@\n-seven\n+SEVEN\n*** End Patch\n`;

  it('reads the unsaved buffer (its text reaches the model); a two-hunk patch is reviewed, hunk 1 lands alone as one undo step', async (t) => {
    const file = await startWithCodex(t);
    if (!file) return;
    e.fake.script({ toolCalls: [{ name: 'read_file', arguments: { file_path: file } }] }, (req) => ({ text: `SAW ${lastMessage(req).split('\n')[0]}` }));
    await send('read a.txt');
    await chatHas('SAW L1: one (unsaved)');
    await idle();
    const sawRequest = e.fake.chatRequests[e.fake.chatRequests.length - 1];
    assert.match(lastMessage(sawRequest), /one \(unsaved\)/, 'the unsaved text reached the model');

    await e.t.cmd('silent write');
    const undoBefore = await e.t.lua<number>("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last");
    e.fake.script({ toolCalls: [{ name: 'apply_patch', arguments: { input: patch(file) } }] }, (req) => ({ text: `PATCHED ${lastMessage(req).slice(0, 200)}` }));
    await send('patch a.txt');
    const r = await e.t.waitFor(review, 'the inline review', 60_000);
    assert.equal(r!.path, 'a.txt');
    await e.t.lua('vim.api.nvim_set_current_win(...)', [r!.win]);
    await e.t.nvim.input('ga');
    await e.t.nvim.input('gX');
    await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'the reason prompt');
    await e.t.nvim.input('keep seven<CR>');
    await chatHas('PATCHED');
    await idle();
    const want = ORIG.replace('one', 'one (unsaved)').replace('two', 'TWO');
    assert.equal(fs.readFileSync(file, 'utf8'), want, 'exactly hunk 1 is on disk');
    assert.deepEqual(await bufLines(), want.trimEnd().split('\n'));
    assert.equal(await e.t.lua<number>("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last"), undoBefore + 1, 'one undo step');
  });

  it('typing in the buffer during the review makes the write stale: refused, and the agent is told', async (t) => {
    const file = await startWithCodex(t);
    if (!file) return;
    e.fake.script({ toolCalls: [{ name: 'apply_patch', arguments: { input: patch(file) } }] }, (req) => ({ text: `TOLD ${lastMessage(req).slice(0, 300)}` }));
    await send('patch a.txt');
    const r = await e.t.waitFor(review, 'the inline review', 60_000);
    await e.t.lua("vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.txt'), 7, 8, false, { 'eight typed meanwhile' })");
    await e.t.lua('vim.api.nvim_set_current_win(...)', [r!.win]);
    await e.t.nvim.input('gA');
    // Our refusal says why (the chat shows it); codex passes the model only that the write failed.
    await chatHas(/write to a\.txt was refused: "a\.txt" changed since you read it: the Neovim buffer changed/);
    await chatHas(/TOLD .*Failed to write file/s);
    await idle();
    assert.equal(fs.readFileSync(file, 'utf8'), ORIG, 'the disk is untouched');
    assert.deepEqual(await bufLines(), ['one (unsaved)', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight typed meanwhile'], "the user's text stays");
  });

  it('a command asks through our float (approval_policy untrusted); :CabooseStop cancels a running turn', async (t) => {
    const file = await startWithCodex(t, 'untrusted');
    if (!file) return;
    e.fake.script(
      { toolCalls: [{ name: 'shell_command', arguments: { command: 'touch made-by-codex && echo escalated-ran', workdir: e.t.cwd } }] },
      (req) => ({ text: `RAN ${lastMessage(req).slice(0, 200)}` }),
    );
    await send('run it');
    const f = await waitApprovalFloat(e.t);
    assert.match(f.text, /echo escalated-ran/);
    assert.match(f.text, /the agent's options: .*allow once/);
    await e.t.lua("require('caboose').approval_respond('once')");
    await chatHas(/RAN .*escalated-ran/s);
    await idle();
    assert.ok(fs.existsSync(path.join(e.t.cwd, 'made-by-codex')), 'the approved command ran');

    const n = e.fake.requests.length;
    e.fake.script({ hang: true });
    await send('take your time');
    await e.fake.waitForRequest(n + 1, 60_000);
    await e.t.cmd('CabooseStop');
    await e.fake.waitForClientClose(n + 1, 60_000);
    await idle();
  });
});
