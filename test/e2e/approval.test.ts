import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';
import { firstToolResult } from '../support/chat-requests';

const SETUP = (extra = '') => `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = 'float' } ${extra} })`;

/** Records what Lua asks the host (method and approval id) and what vim.ui.select is asked. */
const SPY = `
  _G.sent = {}
  local caboose = require('caboose')
  local request = caboose._request
  caboose._request = function(method, params, ...)
    table.insert(_G.sent, { method = method, id = params and params.id, decision = params and params.decision })
    return request(method, params, ...)
  end
  _G.selects, _G.pick = {}, 1
  vim.ui.select = function(items, opts, cb)
    table.insert(_G.selects, { prompt = opts.prompt, items = items })
    cb(items[_G.pick], _G.pick)
  end`;

type Sent = { method: string; id?: string; decision?: string };

forEachNvim((bin) => {
  describe(`the approval float (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const start = (extra = '') => e.start({ initLua: SETUP(extra) });
    const chatHas = (text: string) => e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(text), text);
    const resolves = async () => (await e.t.lua<Sent[]>('return _G.sent')).filter((x) => x.method === 'approval.resolve');
    const pendingCount = () => e.t.lua<number>("return #require('caboose.ui.approval').pending()");
    const bufferText = () => e.t.lua<string>("return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('notes.txt'), 0, -1, false), '\\n')");
    const waitText = (want: string) => e.t.waitFor(async () => (await bufferText()) === want, `buffer text ${JSON.stringify(want)}`);
    const mode = async () => ((await e.t.nvim.mode) as { mode: string }).mode;
    /** Starts a turn whose bash call is held back until the returned function is called. */
    const heldBash = async (command: string, answer: string) => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const n = e.fake.requests.length;
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command } }], gate }, { text: answer });
      await e.t.cmd(`Caboose run ${command}`);
      await e.fake.waitForRequest(n + 1);
      return release;
    };
    /** A normal file buffer, current, as where the user works. */
    const editNotes = async (text: string) => {
      fs.writeFileSync(path.join(e.t.cwd, 'notes.txt'), text);
      await e.t.cmd('edit notes.txt');
    };

    it('keys typed in insert mode while a request arrives stay in the buffer; <Plug>(CabooseApproval) jumps in', async () => {
      await start();
      await e.t.lua(SPY);
      await e.t.lua("vim.keymap.set({ 'n', 'i' }, '<F2>', '<Plug>(CabooseApproval)')");
      await editNotes('');
      const release = await heldBash('echo typed', 'ran it');
      assert.equal(await e.t.lua("return vim.fn.expand('%:t')"), 'notes.txt', 'the chat opened without taking the cursor');
      await e.t.nvim.input('ihello ');
      await waitText('hello ');
      release(); // the approval arrives while the user types
      const f = await waitApprovalFloat(e.t, 'bash');
      assert.equal(f.focused, false);
      await e.t.nvim.input('world, still typing');
      await waitText('hello world, still typing');
      assert.equal(await mode(), 'i', 'still in insert mode');
      assert.equal(await e.t.lua("return vim.fn.expand('%:t')"), 'notes.txt');
      assert.ok(await approvalFloat(e.t), 'the float is still shown');
      assert.deepEqual(await resolves(), [], 'no decision was taken');
      assert.equal(await pendingCount(), 1);
      // The request reaches Lua just before the pending_approval state does.
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'pending_approval', 'pending_approval');

      await e.t.nvim.input('<F2>'); // from insert mode: into the float, in normal mode
      await e.t.waitFor(async () => (await approvalFloat(e.t))?.focused, 'float focused');
      await e.t.waitFor(async () => (await mode()) === 'n', 'normal mode');
      await e.t.nvim.input('o');
      await chatHas('ran it');
      assert.deepEqual((await resolves()).map((r) => r.decision), ['once']);
      assert.equal(await bufferText(), 'hello world, still typing');
    });

    it('a normal-mode `a` in the user\'s buffer appends there: it never approves', async () => {
      await start();
      await e.t.lua(SPY);
      await editNotes('x\n');
      const release = await heldBash('echo normal', 'unused');
      release();
      await waitApprovalFloat(e.t, 'bash');
      await e.t.nvim.input('ayz<Esc>');
      await waitText('xyz');
      assert.equal(await mode(), 'n');
      assert.ok(await approvalFloat(e.t), 'the float is still shown');
      assert.deepEqual(await resolves(), [], 'nothing was approved');
      assert.deepEqual(await e.t.lua('return _G.selects'), [], 'no confirmation was even asked');
      assert.deepEqual(await e.t.lua("return require('caboose').state().grants"), []);
      assert.equal(await pendingCount(), 1);
    });

    it('`a` in the float asks to confirm (default no) before allowing the tool for the session', async () => {
      await start();
      await e.t.lua(SPY);
      e.fake.script(
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo first' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo second' } }] },
        { text: 'both ran' },
      );
      await e.t.cmd('Caboose go');
      await waitApprovalFloat(e.t, 'bash');
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('a'); // the recorder picks the first item
      await e.t.waitFor(async () => (await e.t.lua<unknown[]>('return _G.selects')).length === 1, 'confirmation asked');
      const [ask] = await e.t.lua<{ prompt: string; items: string[] }[]>('return _G.selects');
      assert.deepEqual(ask.items, ['No', 'Yes, always allow bash'], 'no is the first (default) item');
      assert.match(ask.prompt, /bash without asking for the rest of this session/);
      assert.deepEqual(await resolves(), [], '"No" sends nothing');
      assert.ok((await approvalFloat(e.t))?.focused, 'the request is still shown');

      await e.t.lua('_G.pick = 2');
      await e.t.nvim.input('a');
      await chatHas('both ran');
      assert.deepEqual((await resolves()).map((r) => r.decision), ['always'], 'the second bash ran without asking');
      assert.deepEqual(await e.t.lua("return require('caboose').state().grants"), ['bash']);
    });

    it('a new request replacing the one in the focused float ignores the decision keys for approval.grace_ms', async () => {
      await start(', approval = { grace_ms = 1500 }');
      await e.t.lua(SPY);
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo one' } }] }, { text: 'one ran' });
      await e.t.cmd('Caboose go');
      const first = await waitApprovalFloat(e.t, 'bash');
      // A second request waits in the queue behind the first (as the host sends it: summary and preview).
      await e.t.lua(`require('caboose.rpc').on_event('approval_request', {
        id = 'second', tool = 'create_file', mode = 'create', summary = { 'path: second.txt' },
        preview = { kind = 'diff', path = 'second.txt', diff = '+second' } })`);
      assert.equal(await pendingCount(), 2);
      assert.deepEqual((await approvalFloat(e.t))!.lines, first.lines, 'the first request is still shown');
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('o'); // answers the first…
      await waitApprovalFloat(e.t, 'create_file'); // …and the second replaces it under the cursor
      await e.t.nvim.input('o'); // the double press
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => /new approval request just appeared/.test(n.msg)), 'the press is ignored');
      const sent = await resolves();
      assert.equal(sent.length, 1, 'only the first request was answered');
      assert.notEqual(sent[0].id, 'second');
      assert.equal(await pendingCount(), 1);
      await chatHas('one ran');
      // After the grace period the keys answer again.
      await e.t.waitFor(async () => {
        await e.t.nvim.input('o');
        return (await resolves()).some((r) => r.id === 'second');
      }, 'answered after the grace period', 5000);
    });

    it('<Esc> at the reject reason prompt cancels (back in the float, still pending); an empty <CR> rejects without a reason', async () => {
      await start();
      await e.t.lua(SPY);
      const release = await heldBash('echo maybe', 'rejected it');
      release();
      await waitApprovalFloat(e.t, 'bash');
      await e.t.cmd('CabooseApproval');
      await e.t.nvim.input('r');
      await e.t.waitFor(async () => (await mode()) === 'c', 'the reason prompt');
      await e.t.nvim.input('<Esc>');
      await e.t.waitFor(async () => (await mode()) === 'n', 'the prompt is gone');
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(await resolves(), [], '<Esc> answers nothing');
      assert.equal(await pendingCount(), 1);
      assert.ok((await approvalFloat(e.t))?.focused, 'back in the float');
      await e.t.nvim.input('r');
      await e.t.waitFor(async () => (await mode()) === 'c', 'the reason prompt again');
      await e.t.nvim.input('<CR>');
      await chatHas('rejected it');
      assert.deepEqual((await resolves()).map((r) => r.decision), ['reject']);
      const result = firstToolResult(e.fake.chatRequests[e.fake.chatRequests.length - 1]);
      assert.equal(result.error!.kind, 'rejected_by_user');
    });

    it('at 80x24 the float never covers the message area (nor the last transcript lines), also after a resize', async () => {
      await start();
      await e.t.nvim.uiAttach(80, 24, { ext_linegrid: true });
      const content = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'big.txt', content } }] }, { text: 'made' });
      await e.t.cmd('Caboose make big');
      await waitApprovalFloat(e.t, 'create_file');
      type Rect = { row: number; col: number; height: number; width: number };
      const input = () =>
        e.t.lua<Rect>(`local w = vim.fn.bufwinid(require('caboose.chat').input_buf())
          local p = vim.api.nvim_win_get_position(w)
          return { row = p[1], col = p[2], height = vim.api.nvim_win_get_height(w) + 1, width = vim.api.nvim_win_get_width(w) }`);
      const check = async (lines: number, cols: number) => {
        const f = (await approvalFloat(e.t))!;
        const i = await input();
        const overlaps = (a: Rect, b: Rect) => a.row < b.row + b.height && b.row < a.row + a.height && a.col < b.col + b.width && b.col < a.col + a.width;
        // The message area with its winbar (one row above the text) and two transcript lines above it.
        const area = { row: i.row - 2, col: i.col, height: i.height + 2, width: i.width };
        assert.ok(!overlaps(f, area), `float ${JSON.stringify(f)} over the message area ${JSON.stringify(i)} at ${cols}x${lines}`);
        assert.ok(f.row >= 0 && f.row + f.height <= lines - 1 && f.col >= 0 && f.col + f.width <= cols, `fits ${cols}x${lines}: ${JSON.stringify(f)}`);
        assert.ok(f.height >= 5, 'still shows some text');
      };
      await check(24, 80);
      await e.t.lua("require('caboose.chat').focus_input(true)");
      await check(24, 80);
      await e.t.nvim.uiTryResize(100, 30);
      await e.t.waitFor(async () => (await e.t.lua<number>('return vim.o.lines')) === 30, 'resized');
      await new Promise((r) => setTimeout(r, 100));
      await check(30, 100);
      await e.t.nvim.uiTryResize(80, 24);
      await e.t.waitFor(async () => (await e.t.lua<number>('return vim.o.lines')) === 24, 'resized back');
      await new Promise((r) => setTimeout(r, 100));
      await check(24, 80);
    });

    it('fits an 80x24 screen: keys in the footer, long lines wrapped, the body scrolls with <C-d>/<C-u>', async () => {
      await start();
      await e.t.cmd('set columns=80 lines=24');
      const long = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ');
      const content = [long, ...Array.from({ length: 80 }, (_, i) => `line ${i + 1}`)].join('\n') + '\n';
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'big.txt', content } }] }, { text: 'created' });
      await e.t.cmd('Caboose make big');
      assert.match((await waitApprovalFloat(e.t, 'create_file')).footer, /answer: :CabooseApproval \(gA in the chat\)/);
      await e.t.cmd('CabooseApproval');
      const f = await e.t.waitFor(async () => {
        const g = await waitApprovalFloat(e.t, 'create_file');
        return /\[o/.test(g.footer) ? g : null;
      }, 'the keys in the footer once focused');
      assert.deepEqual(f.lines.slice(0, 2), ['path: big.txt', `content: 81 lines, ${Buffer.byteLength(content)} bytes`]);
      assert.match(f.footer, /\[o\/<CR>\] once +\[a\] always +\[r\] reject +\[q\] hide/);
      assert.ok(!f.text.includes('[o/<CR>]'), 'the keys are not a buffer line one has to scroll to');
      assert.ok(f.row >= 0 && f.row + f.height <= 24 - 1, `fits the rows above the command line: row ${f.row} height ${f.height}`);
      assert.ok(f.col >= 0 && f.col + f.width <= 80, `fits the columns: col ${f.col} width ${f.width}`);
      const wo = await e.t.lua<{ wrap: boolean; linebreak: boolean; focusable: boolean }>(
        'local w = ... return { wrap = vim.wo[w].wrap, linebreak = vim.wo[w].linebreak, focusable = vim.api.nvim_win_get_config(w).focusable }',
        [f.win],
      );
      assert.deepEqual(wo, { wrap: true, linebreak: true, focusable: true });
      assert.ok(f.lines.length > f.height, 'the body is longer than the float');
      await e.t.cmd('set columns=64 lines=20 | doautocmd VimResized');
      const r = await e.t.waitFor(async () => {
        const g = await waitApprovalFloat(e.t, 'create_file');
        return g.col + g.width <= 64 && g.row + g.height <= 20 - 1 ? g : null;
      }, 'the float fits the resized screen');
      assert.ok(r.col >= 0 && r.row >= 0);
      await e.t.cmd('set columns=80 lines=24 | doautocmd VimResized');

      await e.t.cmd('CabooseApproval');
      const top = () => e.t.lua<number>("return vim.fn.line('w0')");
      assert.equal(await top(), 1);
      await e.t.nvim.input('<C-d>');
      await e.t.waitFor(async () => (await top()) > 1, 'scrolled down');
      await e.t.nvim.input('<C-u>');
      await e.t.waitFor(async () => (await top()) === 1, 'scrolled back up');
      await e.t.nvim.input('o');
      await chatHas('created');
      assert.equal(fs.readFileSync(path.join(e.t.cwd, 'big.txt'), 'utf8'), content);
    });
  });
});
