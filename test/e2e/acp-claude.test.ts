/**
 * A real ACP agent that uses the client's file system for every read and write: Claude Code through
 * @zed-industries/claude-code-acp 0.16.2 (installed from npm on first use), against a fake Anthropic
 * Messages API (test/support/fake-anthropic.ts). Its Read/Write tools go through our hands.
 */
import { afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat } from '../support/approval';
import { claudeCodeAcp } from '../support/acp-agents';
import { contentText, startFakeAnthropic, type AnthropicRequest, type FakeAnthropic } from '../support/fake-anthropic';

const ORIG = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'].join('\n') + '\n';
const lastUserText = (r: AnthropicRequest) => {
  const m = (r.body?.messages ?? []).filter((x) => x.role === 'user');
  return contentText(m[m.length - 1]?.content);
};

describe('a real ACP agent: claude-code-acp against a fake Anthropic API', () => {
  let agent: { bin: string } | { skip: string } = { skip: 'not installed yet' };
  let fa: FakeAnthropic | undefined;
  before(() => {
    agent = claudeCodeAcp();
  });
  afterEach(async () => {
    await fa?.close();
    fa = undefined;
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

  async function startWithClaude(t: { skip(msg: string): void }): Promise<string | null> {
    if ('skip' in agent) {
      t.skip(agent.skip);
      return null;
    }
    fa = await startFakeAnthropic();
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-claude-home-'));
    const env = {
      ANTHROPIC_BASE_URL: fa.url,
      ANTHROPIC_API_KEY: 'sk-ant-fake',
      IS_SANDBOX: '1', // it refuses to run as root otherwise
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      HOME: home,
      CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    };
    await e.start({
      initLua: `require('caboose').setup({ mode = 'create', acp = { agents = { claude = {
        command = { ${JSON.stringify(process.execPath)}, ${JSON.stringify(agent.bin)} },
        env = vim.json.decode(${JSON.stringify(JSON.stringify(env))}) } } } })`,
    });
    const file = path.join(e.t.cwd, 'a.txt');
    fs.writeFileSync(file, ORIG);
    await e.t.cmd('edit a.txt');
    await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'one (unsaved)' })");
    await e.t.cmd('CabooseAgent claude');
    await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === 'claude', 'the chat runs claude');
    return file;
  }

  it('Read sees the unsaved buffer; Write asks from our float and lands hunk 1 of 2 as one undo step', async (t) => {
    const file = await startWithClaude(t);
    if (!file) return;
    fa!.script({ toolUses: [{ name: 'mcp__acp__Read', input: { file_path: file } }] }, (r) => ({ text: `SAW ${/one \(unsaved\)/.test(lastUserText(r)) ? 'unsaved' : lastUserText(r).slice(0, 200)}` }));
    await send('read a.txt');
    await chatHas('SAW unsaved');
    await idle();

    await e.t.cmd('silent write');
    const undoBefore = await e.t.lua<number>("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last");
    const next = ORIG.replace('one', 'one (unsaved)').replace('two', 'TWO').replace('seven', 'SEVEN');
    fa!.script({ toolUses: [{ name: 'mcp__acp__Write', input: { file_path: file, content: next } }] }, (r) => ({ text: `WROTE ${lastUserText(r).slice(0, 200)}` }));
    await send('write a.txt');
    // Claude Code asks before writing (its permission request, in our float) …
    const f = await e.t.waitFor(async () => {
      const fl = await approvalFloat(e.t);
      return fl && /the agent's options/.test(fl.text) ? fl : null;
    }, "the agent's permission request", 60_000);
    assert.match(f.text, /allow/i);
    await e.t.lua("require('caboose').approval_respond('once')");
    // … then the write itself is reviewed hunk by hunk.
    const r = await e.t.waitFor(review, 'the inline review', 60_000);
    assert.equal(r!.path, 'a.txt');
    await e.t.lua('vim.api.nvim_set_current_win(...)', [r!.win]);
    await e.t.nvim.input('ga');
    await e.t.nvim.input('gX');
    await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'the reason prompt');
    await e.t.nvim.input('keep seven<CR>');
    await chatHas('WROTE');
    await idle();
    const want = ORIG.replace('one', 'one (unsaved)').replace('two', 'TWO');
    assert.equal(fs.readFileSync(file, 'utf8'), want, 'exactly hunk 1 is on disk');
    assert.deepEqual(await bufLines(), want.trimEnd().split('\n'));
    assert.equal(await e.t.lua<number>("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last"), undoBefore + 1, 'one undo step');
  });

  it('a write after the user typed in the buffer is refused, and the model learns why', async (t) => {
    const file = await startWithClaude(t);
    if (!file) return;
    fa!.script({ toolUses: [{ name: 'mcp__acp__Read', input: { file_path: file } }] }, { text: 'READ DONE' });
    await send('read a.txt');
    await chatHas('READ DONE');
    await idle();
    await e.t.lua("vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.txt'), 7, 8, false, { 'eight typed by the user' })");
    fa!.script({ toolUses: [{ name: 'mcp__acp__Write', input: { file_path: file, content: ORIG.replace('one', 'one (unsaved)').replace('two', 'TWO') } }] }, (r) => ({ text: `TOLD ${lastUserText(r).slice(0, 400)}` }));
    await send('write a.txt');
    await e.t.waitFor(async () => {
      const fl = await approvalFloat(e.t);
      return fl && /the agent's options/.test(fl.text) ? fl : null;
    }, "the agent's permission request", 60_000);
    await e.t.lua("require('caboose').approval_respond('once')");
    await chatHas(/TOLD .*changed since you read it/s);
    await idle();
    assert.equal((await bufLines())[7], 'eight typed by the user', "the user's text stays");
    assert.equal(fs.readFileSync(file, 'utf8'), ORIG, 'the disk is untouched');
  });

  it(':CabooseStop cancels a running turn', async (t) => {
    const file = await startWithClaude(t);
    if (!file) return;
    fa!.script({ hang: true });
    await send('take your time');
    await e.t.waitFor(async () => fa!.turnRequests.length > 0, 'the model request', 60_000);
    await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) !== 'idle', 'busy');
    await e.t.cmd('CabooseStop');
    await idle();
    await e.t.waitFor(async () => fa!.turnRequests[0].clientClosed === true, 'the model request was abandoned', 30_000);
  });
});
