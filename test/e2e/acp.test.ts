import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, REPO_ROOT } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';
import { processAlive } from '../support/processes';

const AGENT = path.join(REPO_ROOT, 'test', 'support', 'acp-agent.mjs');

/** setup() with the scripted ACP agent (built on the protocol SDK) as `tester`. */
const SETUP = (mode = 'create', env: Record<string, string> = {}) => `
  require('caboose').setup({
    mode = '${mode}',
    provider = { max_retries = 0 },
    acp = { agents = { tester = { command = { ${JSON.stringify(process.execPath)}, ${JSON.stringify(AGENT)} }, env = vim.json.decode(${JSON.stringify(JSON.stringify(env))}) } } },
  })`;

const ORIG = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'].join('\n') + '\n';

type ReviewState = { id: string; path: string; buf: number; win: number } | null;

forEachNvim((bin) => {
  describe(`ACP agents in the chat (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const chatHas = (text: string | RegExp, timeoutMs = 30_000) =>
      e.t.waitFor(async () => {
        const c = await chat();
        return typeof text === 'string' ? c.includes(text) : text.test(c);
      }, String(text), timeoutMs);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle');
    const bufLines = (name: string) => e.t.lua<string[]>(`return vim.api.nvim_buf_get_lines(vim.fn.bufnr('${name}'), 0, -1, false)`);
    const review = () => e.t.lua<ReviewState>("return require('caboose.ui.review').state()");
    const pick = async () => {
      await e.t.cmd('CabooseAgent tester');
      await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === 'tester', 'the chat runs tester');
      await e.t.waitFor(async () => ((await e.t.lua<string | null>("return require('caboose.chat').status_text()")) ?? '').includes('tester · ACP'), 'the winbar names the agent');
    };
    const send = (text: string) => e.t.lua(`require('caboose').send(...)`, [text]);

    it('reads an unsaved buffer, writes through the inline review (hunk 1 of 2 lands as one undo step), refuses a stale write', async () => {
      await e.start({ initLua: SETUP() });
      const file = path.join(e.t.cwd, 'a.txt');
      fs.writeFileSync(file, ORIG);
      await e.t.cmd('edit a.txt');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, { 'one (unsaved)' })");
      await pick();

      // fs/read_text_file: the buffer's unsaved text, line ranges honoured.
      await send('read a.txt 1 2');
      await chatHas('READ<<one (unsaved)\ntwo>>');
      await idle();
      await send('read a.txt');
      await chatHas('READ<<one (unsaved)\ntwo\nthree');
      await idle();

      // fs/write_text_file: an inline review of two hunks; only hunk 1 is accepted.
      await e.t.cmd('write');
      await send('read a.txt');
      await idle();
      const undoBefore = await e.t.lua<number>("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last");
      await send('edit a.txt two=>TWO eight=>EIGHT');
      const r = await e.t.waitFor(review, 'the review');
      assert.equal(r!.path, 'a.txt');
      await e.t.lua('vim.api.nvim_set_current_win(...)', [r!.win]);
      await e.t.nvim.input('ga');
      await e.t.nvim.input('gX');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.fn.mode()')) === 'c', 'the reason prompt');
      await e.t.nvim.input('not this one<CR>');
      await chatHas('WROTE');
      const want = ORIG.replace('one', 'one (unsaved)').replace('two', 'TWO');
      assert.equal(fs.readFileSync(file, 'utf8'), want, 'exactly hunk 1 is on disk');
      assert.deepEqual(await bufLines('a.txt'), want.trimEnd().split('\n'));
      assert.equal(await e.t.lua<number>("return vim.fn.undotree(vim.fn.bufnr('a.txt')).seq_last"), undoBefore + 1, 'one undo step');
      await idle();

      // The user types in the buffer: the agent's next write (based on its read) is refused, and it is told why.
      await e.t.lua("vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.txt'), 8, 9, false, { 'nine typed by the user' })");
      await send('edit a.txt three=>THREE');
      await chatHas(/WRITE FAILED: .*(changed|stale)/i);
      assert.deepEqual((await bufLines('a.txt'))[8], 'nine typed by the user', "the user's text stays");
      assert.equal(fs.readFileSync(file, 'utf8'), want, 'the disk is untouched');
      await idle();

      // Paths outside the workspace, and denied ones, are refused both ways.
      fs.mkdirSync(path.join(e.t.cwd, '.git'), { recursive: true });
      fs.writeFileSync(path.join(e.t.cwd, '.git', 'config'), 'SECRET=1\n');
      await send('read /etc/passwd');
      await chatHas(/ERROR .*outside/i);
      await idle();
      await send('read .git/config');
      await chatHas(/ERROR .*(denied|deny|\.git folder)/i);
      await idle();
      await send('write ../escape.txt escaped');
      await chatHas(/WRITE FAILED: .*outside/i);
      await idle();
      assert.equal(fs.existsSync(path.join(e.t.cwd, '..', 'escape.txt')), false);
      await send('write .git/hooks/pre-commit evil');
      await chatHas(/WRITE FAILED: .*(denied|deny|\.git folder)/i);
      await idle();
      assert.equal(fs.existsSync(path.join(e.t.cwd, '.git', 'hooks', 'pre-commit')), false);

      // :CabooseUndo rewinds the agent's turn.
      await e.t.lua("vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.txt'), 8, 9, false, { 'nine' })");
      await e.t.cmd('silent write');
      await e.t.cmd('CabooseUndo');
      await e.t.waitFor(async () => !fs.readFileSync(file, 'utf8').includes('TWO'), 'the write is rewound');
    });

    it('permission requests go through our float with the agent options; thoughts fold, plans are the todo list, terminals run our bash', async () => {
      await e.start({ initLua: SETUP() });
      await pick();
      await send('permission');
      const f = await waitApprovalFloat(e.t);
      assert.match(f.text, /Run make test/);
      assert.match(f.text, /Allow \(allow once\) · Always allow \(allow always\) · Reject \(reject once\)/);
      await e.t.lua("require('caboose').approval_respond('once')");
      await chatHas('PERMISSION yes');
      await idle();
      await send('permission');
      await waitApprovalFloat(e.t);
      await e.t.lua("require('caboose').approval_respond('reject', 'not now')");
      await chatHas('PERMISSION no');
      await idle();

      await send('think');
      await chatHas('THOUGHT');
      const c = await chat();
      assert.match(c, /thinking/);
      assert.match(c, /\[x\] look around/);
      assert.match(c, /\[~\] answer/);
      await idle();

      // In create mode the command asks first through the agent's own permission; the terminal runs in our bash.
      await send('term echo hello-from-terminal');
      await chatHas('TERM exit=0 signal= out=hello-from-terminal');
      await chatHas('┆ hello-from-terminal'); // the output, folded under the tool line
      await idle();
    });

    it(':CabooseStop sends session/cancel and answers a pending permission as cancelled; a crash is reported with stderr and the agent restarts', async () => {
      await e.start({ initLua: SETUP() });
      await pick();
      await send('hang');
      await chatHas('HANGING');
      await e.t.cmd('CabooseStop');
      await idle();
      await send('hangperm');
      await waitApprovalFloat(e.t);
      await e.t.cmd('CabooseStop');
      await chatHas('PERMISSION cancelled');
      await idle();
      assert.equal(await approvalFloat(e.t), null, 'the float closed');

      // A running terminal command is killed.
      await send('term sleep 300');
      await chatHas('Run sleep 300');
      await new Promise((r) => setTimeout(r, 300));
      await e.t.cmd('CabooseStop');
      await chatHas(/TERM exit=null signal=SIG/);
      await idle();

      await send('crash');
      await chatHas(/agent 'tester' exited with code 3; its last output:[\s>]*boom: the agent fell over/);
      await idle();
      await send('hello again');
      await chatHas('ECHO hello again');
    });

    it(':checkhealth lists the ACP agents and whether their command exists', async () => {
      await e.start({
        initLua: `require('caboose').setup({ acp = { agents = {
          tester = { command = { ${JSON.stringify(process.execPath)}, ${JSON.stringify(AGENT)} } },
          missing = { command = { 'no-such-acp-agent-xyz' } } } } })`,
      });
      await e.t.cmd('checkhealth caboose');
      const text = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      assert.match(text, /ACP agents/);
      assert.match(text, /tester: .*acp-agent\.mjs \(:CabooseAgent tester\)/);
      assert.match(text, /missing: command not found: no-such-acp-agent-xyz/);
    });

    it('an agent whose command does not exist is reported once; the chat keeps working after switching back', async () => {
      await e.start({ initLua: `require('caboose').setup({ provider = { max_retries = 0 }, acp = { agents = { ghost = { command = { 'no-such-acp-agent-xyz' } } } } })` });
      await e.t.cmd('CabooseAgent ghost');
      await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === 'ghost', 'the chat runs ghost');
      await chatHas(/agent 'ghost' did not start \(no-such-acp-agent-xyz\): spawn no-such-acp-agent-xyz ENOENT/);
      await send('hello?');
      await e.t.waitFor(async () => ((await chat()).match(/did not start/g) ?? []).length >= 2, 'the message tries again and says why', 30_000);
      await idle();
      assert.doesNotMatch(await chat(), /exited with code/);
      e.fake.script({ text: 'built-in here' });
      await e.t.cmd('CabooseAgent caboose');
      await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === null, 'back to the built-in agent');
      await send('hi');
      await chatHas('built-in here');
    });

    it("a message sent right after :CabooseAgent goes to the agent; the agent's process ends with Neovim", async () => {
      await e.start({ initLua: SETUP() });
      await e.t.cmd('CabooseAgent tester');
      await send('pid'); // no wait: the host holds it until the new chat exists
      await chatHas(/PID \d+/);
      const pid = Number(/PID (\d+)/.exec(await chat())![1]);
      assert.ok(processAlive(pid), 'the agent runs');
      await e.t.close();
      const deadline = Date.now() + 20_000; // (Neovim is gone: polled from here)
      while (processAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(processAlive(pid), false, 'the agent ended with Neovim');
    });

    it("reading a file that usually holds secrets asks first, in every mode; a rejection reaches the agent as an error", async () => {
      await e.start({ initLua: SETUP('chug') });
      fs.writeFileSync(path.join(e.t.cwd, '.env'), 'API_TOKEN=hunter2\n');
      fs.writeFileSync(path.join(e.t.cwd, 'plain.txt'), 'plain\n');
      await pick();
      await send('read plain.txt');
      await chatHas('READ<<plain');
      await idle();
      await send('read .env');
      const f = await waitApprovalFloat(e.t);
      assert.match(f.text, /\.env/);
      assert.match(f.text, /secret/);
      await e.t.lua("require('caboose').approval_respond('reject', 'no secrets')");
      await chatHas(/ERROR .*did not allow reading \.env/);
      await idle();
      assert.doesNotMatch(await chat(), /hunter2/, 'the rejected read shows nothing of the file');
      await send('read .env');
      await waitApprovalFloat(e.t);
      await e.t.lua("require('caboose').approval_respond('always')");
      await chatHas('READ<<API_TOKEN=hunter2');
      await idle();
      // "always" covers this file for the session: no second float.
      await send('read .env');
      await e.t.waitFor(async () => (await chat()).split('READ<<API_TOKEN').length === 3, 'the second read, without asking');
      assert.equal(await approvalFloat(e.t), null);
    });

    it('a secret file the user attaches (#file:.env) asks first; refused, nothing of it reaches the agent', async () => {
      await e.start({ initLua: SETUP('chug') });
      fs.writeFileSync(path.join(e.t.cwd, '.env'), 'API_TOKEN=hunter2\n');
      await pick();
      await send('look at #file:.env');
      const f = await waitApprovalFloat(e.t, 'read_file');
      assert.match(f.text, /secret/);
      await e.t.lua("require('caboose').approval_respond('reject')");
      await chatHas(/ECHO look at #file:\.env[\s\S]*could not be read: rejected_by_user/);
      await idle();
      assert.doesNotMatch(await chat(), /hunter2/, 'the refused file is not sent');
    });

    it('plan mode refuses writes; an ACP chat is stored and reopened with session/load', async () => {
      await e.start({ initLua: SETUP('plan', { ACP_TEST_LOAD: '1' }) });
      const file = path.join(e.t.cwd, 'b.txt');
      fs.writeFileSync(file, 'b\n');
      await pick();
      await send('edit b.txt b=>B');
      await chatHas(/WRITE FAILED: .*plan mode/);
      assert.equal(fs.readFileSync(file, 'utf8'), 'b\n');
      await idle();
      const id = await e.t.lua<string>("return require('caboose').state().session");
      await e.t.cmd('CabooseAgent caboose');
      await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === null, 'back to the built-in agent');
      await e.t.lua(`require('caboose.rpc').call(require('caboose.rpc').methods.session_open, { id = ... }, function() end)`, [id]);
      await e.t.waitFor(async () => (await e.t.lua<string | null>("return require('caboose').agent_name()")) === 'tester', 'the reopened chat runs tester again');
      await chatHas(/edit b\.txt b=>B/);
      await chatHas(/✗ Edit b\.txt/); // its tool line is stored too
      await chatHas(/WRITE FAILED: .*plan mode/);
      await send('hello');
      await chatHas('ECHO hello');
      const log = fs.readFileSync(e.t.logFile, 'utf8');
      const started = [...log.matchAll(/acp agent tester started \(pid (\d+), session (\S+)\)/g)].map((m) => [m[1], m[2]]);
      assert.equal(started.length, 2, 'started once per chat');
      assert.notEqual(started[0][0], started[1][0], 'a new process');
      assert.equal(started[1][1], started[0][1], 'which loaded the stored session (session/load) instead of a new one');
      assert.doesNotMatch(await chat(), /REPLAYED/, 'the replayed history is not drawn twice');
    });
  });
});
