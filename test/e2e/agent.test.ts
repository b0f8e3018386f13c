import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { processAlive as alive } from '../support/processes';
import { useE2E } from '../support/e2e';
import { firstToolResult, lastToolResults } from '../support/chat-requests';
import { approvalFloat as approvalFloatOf, waitApprovalFloat } from '../support/approval';

const FAST = (mode = 'create', extra = '') =>
  `require('caboose').setup({ mode = '${mode}', provider = { max_retries = 2, retry_base_delay_ms = 1 }, approval = { style = 'float' } ${extra} })`;

type State = { state: string; mode: string };

forEachNvim((bin) => {
  describe(`agent turns in Neovim ${bin.version}`, () => {
    const e = useE2E(bin);

    const start = (mode = 'create', extra = '') => e.start({ initLua: FAST(mode, extra) });
    const state = () => e.t.lua<State>("return require('caboose').state()");
    const waitState = (s: string) => e.t.waitFor(async () => (await state()).state === s, `state ${s}`);
    const approvalFloat = () => approvalFloatOf(e.t);
    const waitFloat = () => waitApprovalFloat(e.t);
    const waitFloatFor = (tool: string) => waitApprovalFloat(e.t, tool);

    it('read → edit (approved in the float with <CR>) → bash (approved) → final answer', async () => {
      await start('create');
      fs.writeFileSync(path.join(e.t.cwd, 'a.txt'), 'one\ntwo\n');
      const n = e.fake.requests.length;
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
        (req) => {
          const read = firstToolResult(req);
          return { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', expectedSha256: read.data!.sha256 as string, edits: [{ oldText: 'two', newText: 'TWO' }] } }] };
        },
        { toolCalls: [{ name: 'bash', arguments: { command: 'cat a.txt; echo done-bash' } }] },
        { text: 'All done.' },
      );
      await e.t.cmd('Caboose change two to TWO');
      const float = await waitFloat();
      const text = float.text;
      assert.match(float.title, /approve edit_file\? \(create mode\)/, 'the title names the tool and the mode');
      assert.deepEqual(float.lines.slice(0, 2), ['path: a.txt', '1 edit'], 'a readable summary of the arguments');
      assert.doesNotMatch(text, /[0-9a-f]{64}|expectedSha256|\{/, 'no sha256, no raw tables');
      assert.match(text, /-two\n\+TWO/, 'the float shows a unified diff');
      assert.match(float.footer, /answer: :CabooseApproval/, 'unfocused, the footer says how to get in');
      await waitState('pending_approval');
      assert.equal(await e.t.lua("return require('caboose').statusline()"), 'caboose: pending approval');
      const marks = await e.t.lua<[number, number, number, { hl_group: string }][]>(`
        for _, w in ipairs(vim.api.nvim_list_wins()) do
          local b = vim.api.nvim_win_get_buf(w)
          if vim.bo[b].filetype == 'caboose_approval' then
            return vim.api.nvim_buf_get_extmarks(b, -1, 0, -1, { details = true })
          end
        end`);
      const groups = marks.map((m) => m[3].hl_group);
      assert.ok(groups.includes('CabooseDiffAdd') && groups.includes('CabooseDiffDelete'), groups.join(','));
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'a.txt'), 'utf8'), 'one\ntwo\n', 'nothing written before approval');
      assert.equal(float.focused, false, 'the float does not take the focus');
      await e.t.cmd('CabooseApproval'); // jump in
      await e.t.nvim.input('<CR>'); // the default choice is "once"
      const bashFloat = await waitFloatFor('bash');
      // Where it runs (issue 19): inside the sandbox where one runs, OUTSIDE it otherwise.
      const where = bashFloat.lines[2];
      assert.match(where, /^runs inside the sandbox workspace-write|^⚠ runs OUTSIDE any sandbox: no sandbox available/);
      assert.deepEqual([...bashFloat.lines.slice(0, 2), ...bashFloat.lines.slice(3)], [`cwd: ${e.t.cwd}`, '', '$ cat a.txt; echo done-bash'], 'the folder, then the command');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('All done.'), 'final answer');
      await waitState('idle');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'a.txt'), 'utf8'), 'one\nTWO\n');
      const bashReq = e.fake.requests.slice(n).filter((r) => r.path === '/v1/chat/completions')[3];
      const bashResult = firstToolResult(bashReq);
      assert.equal(bashResult.ok, true);
      assert.equal(bashResult.data!.exitCode, 0);
      assert.match(String(bashResult.data!.output), /one\nTWO\ndone-bash/);
      const events = (await e.t.stateEvents()).map((e) => e.state);
      for (const s of ['streaming', 'pending_approval', 'executing_tools', 'idle']) assert.ok(events.includes(s), `saw ${s}`);
      const chat = (await e.t.chatLines()).join('\n');
      assert.match(chat, /read_file a\.txt/);
      assert.match(chat, /edit_file a\.txt/);
    });

    it('always allows the tool for the session; reject sends the reason to the model', async () => {
      await start('create');
      e.fake.script(
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo first' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo second' } }] },
        { toolCalls: [{ name: 'create_file', arguments: { path: 'x.txt', content: 'x' } }] },
        { text: 'ok then' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose go');
      await waitFloat();
      await e.t.lua("require('caboose').approval_respond('always')");
      // The second bash runs without asking; the create_file asks.
      const cf = await waitFloatFor('create_file');
      assert.match(cf.text, /^path: x\.txt\ncontent: 1 line, 1 byte/);
      await e.t.lua("require('caboose').approval_respond('reject', 'not that file')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('ok then'), 'final');
      const reqs = e.fake.chatRequests.slice(n);
      assert.equal(firstToolResult(reqs[2]).data!.output, 'second\n');
      const rejected = firstToolResult(reqs[3]);
      assert.equal(rejected.ok, false);
      assert.equal(rejected.error!.kind, 'rejected_by_user');
      assert.match(rejected.error!.message, /not that file/);
      assert.equal(fs.existsSync(path.join(e.t.cwd, 'x.txt')), false);
    });

    it('standing grants: in state(), the winbar and :CabooseMode; :CabooseRevoke withdraws them', async () => {
      await e.start({ initLua: `vim.o.columns = 200 ${FAST('create', '')}` }); // room in the winbar for every grant
      const grants = () => e.t.lua<string[]>("return require('caboose').state().grants");
      const waitGrants = (want: string[]) => e.t.waitFor(async () => JSON.stringify(await grants()) === JSON.stringify(want), `grants ${want.join(',')}`);
      const answered = (text: string) => e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(text), text);
      assert.deepEqual(await grants(), []);
      e.fake.script(
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo one' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo two' } }] },
        { toolCalls: [{ name: 'create_file', arguments: { path: 'g.txt', content: 'g' } }] },
        { text: 'granted twice' },
      );
      await e.t.cmd('Caboose go');
      await waitFloat();
      await e.t.lua("require('caboose').approval_respond('always')");
      await waitFloatFor('create_file'); // the second bash ran without asking
      await e.t.lua("require('caboose').approval_respond('always')");
      await answered('granted twice');
      await waitGrants(['bash', 'create_file']);
      await waitState('idle'); // while 'streaming' also shows, a 40-column bar shortens the grants to a count
      assert.match(await e.t.lua<string>("return require('caboose.chat').status_text()"), /always: bash, create_file/);
      await e.t.cmd('CabooseMode');
      assert.ok((await e.t.notifications()).some((n) => n.msg === '(caboose) mode: create; always allowed this session: bash, create_file'));
      assert.deepEqual(await e.t.lua("return vim.fn.getcompletion('CabooseRevoke ', 'cmdline')"), ['bash', 'create_file']);
      assert.deepEqual(await e.t.lua("return vim.fn.getcompletion('CabooseRevoke c', 'cmdline')"), ['create_file']);

      await e.t.cmd('CabooseRevoke nope');
      assert.ok((await e.t.notifications()).some((n) => /nope is not always allowed/.test(n.msg) && n.level === 3));
      await e.t.cmd('CabooseRevoke bash');
      await waitGrants(['create_file']);
      assert.match(await e.t.lua<string>("return require('caboose.chat').status_text()"), /always: create_file%\*( │|$)/);
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo three' } }] }, { text: 'asked again' });
      await e.t.cmd('Caboose again');
      await waitFloat(); // bash asks again
      await e.t.lua("require('caboose').approval_respond('once')");
      await answered('asked again');

      await e.t.cmd('CabooseRevoke');
      await waitGrants([]);
      assert.doesNotMatch(await e.t.lua<string>("return require('caboose.chat').status_text()"), /always/);
      await e.t.cmd('CabooseMode');
      assert.ok((await e.t.notifications()).some((n) => n.msg === '(caboose) mode: create; no tool is always allowed'));
      await e.t.cmd('CabooseRevoke');
      assert.ok((await e.t.notifications()).some((n) => n.msg === '(caboose) no tool is always allowed in this session'));

      // A new conversation starts without grants.
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo four' } }] }, { text: 'granted again' });
      await e.t.cmd('Caboose once more');
      await waitFloat();
      await e.t.lua("require('caboose').approval_respond('always')");
      await answered('granted again');
      await waitGrants(['bash']);
      await e.t.cmd('CabooseNew');
      await waitGrants([]);
    });

    it('plan mode blocks writes; auto-edit runs edits and asks for bash; chug runs everything', async () => {
      // Unsandboxed: a sandboxed command runs without asking in auto-edit (test/e2e/sandbox.test.ts).
      await start('plan', ", sandbox = { mode = 'off' }");
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'p.txt', content: 'p' } }] }, { text: 'planned' });
      let n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose make p');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('planned'), 'plan answer');
      const blocked = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(blocked.error!.kind, 'blocked_by_mode');
      assert.equal(fs.existsSync(path.join(e.t.cwd, 'p.txt')), false);

      await e.t.cmd('CabooseMode auto-edit');
      assert.equal((await state()).mode, 'auto-edit');
      assert.match(await e.t.lua<string>("return require('caboose.chat').status_text()"), /auto-edit/, 'the mode is visible in the chat winbar');
      const modeEvents = (await e.t.stateEvents()).filter((e) => (e as unknown as State).mode === 'auto-edit');
      assert.ok(modeEvents.length > 0, 'mode change fires CabooseStateChanged');
      e.fake.script(
        { toolCalls: [{ name: 'create_file', arguments: { path: 'q.txt', content: 'q' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] },
        { text: 'auto done' },
      );
      n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose make q');
      await waitFloat(); // bash asks
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'q.txt'), 'utf8'), 'q', 'edit ran without approval');
      assert.match((await approvalFloat())!.title, /approve bash\?/);
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('auto done'), 'auto answer');

      await e.t.lua("require('caboose').set_mode('chug')");
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo chug > r.txt' } }] }, { text: 'chugged' });
      await e.t.cmd('Caboose chug');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('chugged'), 'chug answer');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'r.txt'), 'utf8'), 'chug\n');
      const completion = await e.t.lua<string[]>("return vim.fn.getcompletion('CabooseMode ', 'cmdline')");
      assert.deepEqual(completion, ['plan', 'create', 'auto-edit', 'chug']);
    });

    it('approval_respond works from a CabooseStateChanged autocmd the moment the state is pending_approval', async () => {
      await start('create');
      await e.t.lua(`
        _G.answers = {}
        vim.api.nvim_create_autocmd('User', {
          pattern = 'CabooseStateChanged',
          callback = function(ev)
            if ev.data.state == 'pending_approval' then
              table.insert(_G.answers, require('caboose').approval_respond('once'))
            end
          end,
        })`);
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'auto.txt', content: 'a' } }] }, { text: 'auto-approved' });
      await e.t.cmd('Caboose make auto');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('auto-approved'), 'answer');
      assert.deepEqual(await e.t.lua('return _G.answers'), [true]);
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'auto.txt'), 'utf8'), 'a');
    });

    it('the float is not modal: jump in, hide it, move away, come back, answer', async () => {
      await start('create');
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'm.txt', content: 'm' } }] }, { text: 'made' });
      await e.t.cmd('Caboose make m');
      await waitFloat();
      await e.t.cmd('CabooseApproval');
      assert.equal(await e.t.lua('return vim.bo.filetype'), 'caboose_approval');
      await e.t.nvim.input('q'); // hide: nothing is answered
      await e.t.waitFor(async () => (await approvalFloat()) === null, 'float hidden');
      await e.t.cmd('enew');
      assert.notEqual(await e.t.lua('return vim.bo.filetype'), 'caboose_approval');
      await waitState('pending_approval');
      await e.t.cmd('CabooseApproval');
      assert.equal(await e.t.lua("return vim.bo.filetype"), 'caboose_approval');
      await e.t.nvim.input('o');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('made'), 'answer');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'm.txt'), 'utf8'), 'm');
    });

    it('the approval preview diffs against what the agent saw: the unsaved buffer, not the disk', async () => {
      await start('create');
      fs.writeFileSync(path.join(e.t.cwd, 'u.txt'), 'disk line\n');
      await e.t.cmd('edit u.txt');
      await e.t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, {'buffer line'})");
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'u.txt' } }] },
        (req) => {
          const read = firstToolResult(req);
          return { toolCalls: [{ name: 'edit_file', arguments: { path: 'u.txt', expectedSha256: read.data!.sha256 as string, edits: [{ oldText: 'buffer line', newText: 'agent line' }] } }] };
        },
        { text: 'edited' },
      );
      await e.t.cmd('Caboose edit u');
      const text = (await waitFloat()).text;
      assert.match(text, /-buffer line\n\+agent line/);
      assert.doesNotMatch(text, /disk line/);
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('edited'), 'answer');
      assert.deepEqual(await e.t.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr('u.txt'), 0, -1, false)"), ['agent line']);
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'u.txt'), 'utf8'), 'disk line\n', 'unsaved buffer: nothing written to disk');
    });

    it('an edit that cannot apply fails before asking: no float, the model gets old_text_not_found', async () => {
      await start('create');
      await e.t.lua(`
        _G.shown = 0
        vim.api.nvim_create_autocmd('User', { pattern = 'CabooseApprovalShown', callback = function() _G.shown = _G.shown + 1 end })`);
      fs.writeFileSync(path.join(e.t.cwd, 'n.txt'), 'alpha\nbeta\n');
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'n.txt' } }] },
        (req) => {
          const read = firstToolResult(req);
          return { toolCalls: [{ name: 'edit_file', arguments: { path: 'n.txt', expectedSha256: read.data!.sha256 as string, edits: [{ oldText: 'gamma', newText: 'GAMMA' }] } }] };
        },
        { text: 'it is not there' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose change gamma');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('it is not there'), 'final answer');
      await waitState('idle');
      const result = firstToolResult(e.fake.chatRequests[n + 2]);
      assert.equal(result.ok, false);
      assert.equal(result.error!.kind, 'old_text_not_found');
      assert.equal(await e.t.lua('return _G.shown'), 0, 'no approval float was shown');
      assert.equal(await approvalFloat(), null);
      assert.ok(!(await e.t.stateEvents()).some((ev) => ev.state === 'pending_approval'), 'never pending_approval');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'n.txt'), 'utf8'), 'alpha\nbeta\n');
    });

    it(':CabooseStop while an approval is pending closes the float, tells the model, returns to idle', async () => {
      await start('create');
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 's.txt', content: 's' } }] }, { text: 'after stop' });
      await e.t.cmd('Caboose make s');
      await waitFloat();
      await e.t.cmd('CabooseStop');
      await waitState('idle');
      await e.t.waitFor(async () => (await approvalFloat()) === null, 'float closed');
      assert.equal(fs.existsSync(path.join(e.t.cwd, 's.txt')), false);
      await e.t.cmd('Caboose next');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('after stop'), 'next turn');
      const msgs = e.fake.chatRequests[1].body!.messages!;
      const tool = msgs.find((m) => m.role === 'tool');
      assert.match(String(tool?.content), /rejected_by_user|cancelled/);
    });

    it('parallel tool calls, malformed arguments and an unknown tool go back to the model in order', async () => {
      await start('create');
      fs.writeFileSync(path.join(e.t.cwd, 'b.txt'), 'bee\n');
      e.fake.script(
        {
          toolCalls: [
            { id: 'c1', name: 'read_file', arguments: { path: 'b.txt' } },
            { id: 'c2', name: 'read_file', arguments: '{"path": "b.txt"' },
            { id: 'c3', name: 'no_such_tool', arguments: {} },
            { id: 'c4', name: 'read_file', arguments: { path: 42 } },
            { id: 'c5', name: 'list_directory', arguments: { path: '.' } },
          ],
        },
        { text: 'handled' },
      );
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose many');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('handled'), 'answer');
      const results = lastToolResults(e.fake.chatRequests[n + 1]);
      assert.deepEqual([...results.keys()], ['c1', 'c2', 'c3', 'c4', 'c5']);
      assert.equal(results.get('c1')!.ok, true);
      assert.equal(results.get('c2')!.error!.kind, 'invalid_arguments');
      assert.equal(results.get('c3')!.error!.kind, 'invalid_arguments');
      assert.match(results.get('c3')!.error!.message, /Unknown tool "no_such_tool"/);
      assert.equal(results.get('c4')!.error!.kind, 'invalid_arguments');
      assert.equal(results.get('c5')!.ok, true);
      assert.equal(alive(await e.t.lua<number>("return require('caboose.rpc').host_pid()")), true, 'host still alive');
    });

    it('a 429 then success', async () => {
      await start('create');
      e.fake.script({ status: 429, headers: { 'retry-after': '0' } }, { text: 'after retry' });
      await e.t.cmd('Caboose retry please');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('after retry'), 'answer');
      assert.doesNotMatch((await e.t.chatLines()).join('\n'), /Error/);
    });

    it(':CabooseStop during `bash sleep 30` kills the process group and returns to idle', async () => {
      // Unsandboxed: in the sandbox $$ and $! are pids of its own namespace (test/unit/sandbox.test.ts
      // checks that a stopped sandboxed command leaves nothing).
      await start('chug', ", sandbox = { mode = 'off' }");
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo $$ > pids; (sleep 30 & echo $! >> pids; wait) & echo $! >> pids; sleep 30' } }] }, { text: 'never' });
      await e.t.cmd('Caboose sleep');
      const pidFile = path.join(e.t.cwd, 'pids');
      const pids = await e.t.waitFor(async () => {
        const txt = fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').trim().split('\n') : [];
        return txt.length >= 3 ? txt.map(Number) : null;
      }, 'bash started');
      await waitState('executing_tools');
      await e.t.cmd('CabooseStop');
      await waitState('idle');
      await e.t.waitFor(async () => pids.every((p) => !alive(p)), 'all children gone', 5000);
      const chat = (await e.t.chatLines()).join('\n');
      assert.match(chat, /stopped/i);
    });

    it('<C-c> in the chat stops a stream; the step limit stops a runaway loop', async () => {
      await start('chug', ", step_limit = 3");
      e.fake.script({ hang: true });
      const n = e.fake.requests.length;
      await e.t.cmd('Caboose hang');
      await e.fake.waitForRequest(n + 1);
      await waitState('streaming');
      // Typed <C-c> doubles as Neovim's interrupt, so run the chat buffer's mapping itself.
      await e.t.lua(`
        vim.api.nvim_set_current_win(vim.fn.win_findbuf(require('caboose.chat').buf())[1])
        vim.fn.maparg('<C-c>', 'n', false, true).callback()`);
      await waitState('idle');
      const loop = { toolCalls: [{ name: 'list_directory', arguments: { path: '.' } }] };
      e.fake.script(loop, loop, loop, loop, loop);
      await e.t.cmd('Caboose loop forever');
      await e.t.waitFor(async () => /stopped after 3 steps/.test((await e.t.chatLines()).join('\n')), 'step limit message');
      await waitState('idle');
    });

    it('queues up to 3 messages while busy and processes them in order', async () => {
      await start('create');
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      e.fake.script({ text: 'first reply', chunks: ['first ', 'reply'], gate }, { text: 'r2' }, { text: 'r3' }, { text: 'r4' });
      const n = e.fake.chatRequests.length;
      await e.t.cmd('Caboose m1');
      await waitState('streaming');
      for (const m of ['m2', 'm3', 'm4']) await e.t.cmd(`Caboose ${m}`);
      // The fourth is refused while the reply streams (its answer says so at once). The chat holds notices
      // while a reply streams and shows them when it ends: the refusal's notice is looked for after that.
      await e.t.lua("_G.m5_result = nil; require('caboose').send('m5', { on_done = function(err, res) _G.m5_result = err and { err = err } or res end })");
      await e.t.waitFor(async () => (await e.t.lua<{ status?: string } | null>('return _G.m5_result'))?.status === 'rejected', 'm5 refused');
      release();
      await e.t.waitFor(async () => /3 messages are already queued/.test((await e.t.chatLines()).join('\n')), 'queue-full message');
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes('r4'), 'all replies');
      await waitState('idle');
      const lastUsers = e.fake.chatRequests.slice(n).map((r) => r.body!.messages!.filter((m) => m.role === 'user').at(-1)!.content);
      assert.deepEqual(lastUsers, ['m1', 'm2', 'm3', 'm4']);
    });
  });
});
