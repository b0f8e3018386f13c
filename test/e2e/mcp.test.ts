import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { filetypeLines as linesOf, forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';
import { lastToolResults, firstToolResult } from '../support/chat-requests';
import { startHttpMcpServer, stdioServer, type HttpMcpServer } from '../support/mcp';
import type { FakeRequest } from '../support/fake-openai';

/** setup() with MCP servers; records approval floats and User CabooseMcpChanged events. */
const SETUP = (mode: string, servers: Record<string, unknown>, startTimeoutMs = 10_000) => `
  require('caboose').setup({
    mode = '${mode}',
    provider = { max_retries = 0 },
    approval = { style = 'float' },
    mcp = { servers = vim.json.decode(${JSON.stringify(JSON.stringify(servers))}), start_timeout_ms = ${startTimeoutMs} },
  })
  _G.shown, _G.mcp_events = {}, {}
  local approval = require('caboose.ui.approval')
  local show = approval.show
  approval.show = function(p) table.insert(_G.shown, p.tool) return show(p) end
  vim.api.nvim_create_autocmd('User', { pattern = 'CabooseMcpChanged', callback = function(ev) table.insert(_G.mcp_events, ev.data) end })`;


const toolNames = (r: FakeRequest) => (r.body?.tools ?? []).map((x) => (x as { function: { name: string } }).function.name);
const toolSpec = (r: FakeRequest, name: string) => (r.body?.tools ?? []).map((x) => (x as { function: { name: string; description: string } }).function).find((f) => f.name === name);

forEachNvim((bin) => {
  describe(`MCP servers (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    let http: HttpMcpServer | undefined;
    afterEach(async () => {
      await http?.close();
      http = undefined;
    });
    const chatHas = (text: string | RegExp, timeoutMs?: number) =>
      e.t.waitFor(async () => {
        const chat = (await e.t.chatLines()).join('\n');
        return typeof text === 'string' ? chat.includes(text) : text.test(chat);
      }, String(text), timeoutMs);
    const healthText = async () => {
      await e.t.cmd('checkhealth caboose');
      const text = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      await e.t.cmd('bwipeout');
      return text;
    };
    const shown = () => e.t.lua<string[]>('return _G.shown');

    it(':CabooseMcp lists a stdio and an HTTP server with their tools; the model gets them prefixed; create mode asks, allowed tools run', async () => {
      http = await startHttpMcpServer();
      await e.start({ initLua: SETUP('create', { local: stdioServer({ allow: ['add'] }), remote: { url: http.url } }) });

      await e.t.cmd('CabooseMcp');
      const lines = await e.t.waitFor(async () => {
        const l = await linesOf(e.t, 'caboose_mcp');
        return l && l.join('\n').includes('remote  running') && l.join('\n').includes('local  running') ? l : null;
      }, 'both servers listed as running');
      const text = lines.join('\n');
      assert.match(lines[0], /^MCP servers \(create mode\)/);
      assert.match(text, /^local {2}running, 8 tools {2}stdio: \S+ \S+mcp-server\.mjs$/m);
      assert.match(text, new RegExp(`^remote {2}running, 8 tools {2}http: ${http.url.replace(/[.]/g, '\\.')}$`, 'm'));
      assert.match(text, /^ {2}local__echo +asks +Echo the text back\.$/m, 'the description’s first line');
      assert.match(text, /^ {2}local__add +runs \(allowed\) +Add two numbers\. {2}\[read-only\]$/m);
      assert.match(text, /^ {2}remote__add +asks +Add two numbers\. {2}\[read-only\]$/m);
      assert.equal(await e.t.lua('return vim.bo.filetype'), 'caboose_mcp', 'the float has the cursor');
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await linesOf(e.t, 'caboose_mcp')) === null, 'q closes it');

      e.fake.script({ toolCalls: [{ name: 'remote__echo', arguments: { text: 'hello' } }] }, { text: 'echoed' });
      await e.t.cmd('Caboose echo hello');
      const f = await waitApprovalFloat(e.t, 'remote__echo');
      assert.match(f.text, new RegExp(`MCP server: remote \\(http: ${http.url.replace(/[.]/g, '\\.')}\\)`));
      assert.match(f.text, /tool: echo — Echo the text back\./);
      assert.match(f.text, /"text": "hello"/);
      assert.match(f.text, /^MCP server: /, 'the arguments are shown once, as JSON (no summary line above)');
      await e.t.lua("require('caboose').approval_respond('once')");
      await chatHas('echoed');
      const first = e.fake.chatRequests[0];
      for (const n of ['local__echo', 'local__add', 'remote__echo', 'remote__big']) assert.ok(toolNames(first).includes(n), `${n} offered`);
      assert.match(toolSpec(first, 'remote__add')!.description, /^\[MCP server "remote"\] Add two numbers\./);
      assert.deepEqual(firstToolResult(e.fake.chatRequests[1]), { ok: true, data: { server: 'remote', tool: 'echo', output: 'echo: hello' } });

      // Allowed in the configuration: runs without a float.
      e.fake.script({ toolCalls: [{ name: 'local__add', arguments: { a: 1, b: 2 } }] }, { text: 'added' });
      await e.t.cmd('Caboose add');
      await chatHas('added');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[3]), { ok: true, data: { server: 'local', tool: 'add', output: '3' } });
      assert.deepEqual(await shown(), ['remote__echo'], 'only the first call asked');

      // Both calls are in the audit log.
      const audit = await e.t.lua<{ entries: { tool: string; operation: string; ok: boolean; details?: Record<string, unknown> }[] }>(
        "return require('caboose.rpc').request('audit.list', { cwd = vim.fn.getcwd() })",
      );
      const rows = audit.entries.map((r) => [r.tool, r.operation, r.ok, r.details?.server, r.details?.arguments]);
      assert.deepEqual(rows, [
        ['local__add', 'call', true, 'local', '{"a":1,"b":2}'],
        ['remote__echo', 'call', true, 'remote', '{"text":"hello"}'],
      ]);
    });

    it('chug mode runs MCP tools without asking; plan mode blocks them unless allowed and read-only', async () => {
      await e.start({ initLua: SETUP('chug', { local: stdioServer({ allow: ['add', 'echo'] }), other: stdioServer() }) });
      e.fake.script({ toolCalls: [{ name: 'other__echo', arguments: { text: 'free' } }] }, { text: 'ran free' });
      await e.t.cmd('Caboose go');
      await chatHas('ran free');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[1]), { ok: true, data: { server: 'other', tool: 'echo', output: 'echo: free' } });

      await e.t.cmd('CabooseMode plan');
      e.fake.script(
        {
          toolCalls: [
            { id: 'c_other', name: 'other__add', arguments: { a: 1, b: 1 } },
            { id: 'c_echo', name: 'local__echo', arguments: { text: 'x' } },
            { id: 'c_add', name: 'local__add', arguments: { a: 2, b: 2 } },
          ],
        },
        { text: 'planned' },
      );
      await e.t.cmd('Caboose plan it');
      await chatHas('planned');
      const results = lastToolResults(e.fake.chatRequests[3]);
      assert.equal(results.get('c_other')?.error?.kind, 'blocked_by_mode', 'not allowed: blocked');
      assert.equal(results.get('c_echo')?.error?.kind, 'blocked_by_mode', 'allowed but not read-only: blocked');
      assert.deepEqual(results.get('c_add'), { ok: true, data: { server: 'local', tool: 'add', output: '4' } }, 'allowed and read-only: runs');
      assert.deepEqual(await shown(), []);
    });

    it('a tool that requires task-based execution is never offered to the model; :CabooseMcp says why; a call by name gets a clear error', async () => {
      await e.start({ initLua: SETUP('chug', { jobs: stdioServer({}, ['--task-tool']) }) });
      e.fake.script({ toolCalls: [{ id: 'c_job', name: 'jobs__longjob', arguments: {} }] }, { text: 'tried the job' });
      await e.t.cmd('Caboose run the long job');
      await chatHas('tried the job');
      const offered = toolNames(e.fake.chatRequests[0]);
      assert.ok(offered.includes('jobs__echo'), `the server's other tools are offered: ${offered.join(' ')}`);
      assert.ok(!offered.includes('jobs__longjob'), 'the task-only tool is not offered');
      const res = lastToolResults(e.fake.chatRequests[1]).get('c_job');
      assert.equal(res?.error?.kind, 'mcp_unavailable');
      assert.match(res?.error?.message ?? '', /requires task-based execution/);

      await e.t.cmd('CabooseMcp');
      const lines = await e.t.waitFor(async () => {
        const l = await linesOf(e.t, 'caboose_mcp');
        return l && l.join('\n').includes('jobs__longjob') ? l : null;
      }, 'the listing');
      assert.match(lines.join('\n'), /^ {2}jobs__longjob +not offered +A long job that runs only as a task\. {2}\[requires task-based execution/m);
      await e.t.nvim.input('q');
    });

    it('a crashing server is reported in the chat and :checkhealth; the session and the other server keep working; it restarts at its next use', async () => {
      http = await startHttpMcpServer();
      await e.start({ initLua: SETUP('chug', { local: stdioServer({}, ['--stderr']), remote: { url: http.url } }) });
      e.fake.script({ toolCalls: [{ name: 'local__crash', arguments: {} }] }, { text: 'after the crash' });
      await e.t.cmd('Caboose crash it');
      await chatHas("MCP server 'local' stopped: the process exited (stderr: test server says hello on stderr); its tools are unavailable");
      await chatHas('after the crash');
      const crashed = firstToolResult(e.fake.chatRequests[1]);
      assert.equal(crashed.error?.kind, 'mcp_unavailable');
      assert.match(crashed.error?.message ?? '', /MCP server 'local' stopped during the crash call/);
      assert.equal(toolNames(e.fake.chatRequests[1]).some((n) => n.startsWith('local__')), false, 'its tools are gone from the next request');
      assert.ok(toolNames(e.fake.chatRequests[1]).includes('remote__add'));
      const events = await e.t.lua<{ server: string; state: string; previous: string }[]>('return _G.mcp_events');
      assert.ok(events.some((x) => x.server === 'local' && x.state === 'failed' && x.previous === 'running'), JSON.stringify(events));

      const health = await healthText();
      assert.match(health, /ERROR.*local \(stdio: .*\): the process exited/);
      assert.match(health, /OK.*remote \(http: .*\): running, 8 tools/);

      e.fake.script({ toolCalls: [{ name: 'remote__add', arguments: { a: 2, b: 2 } }] }, { text: 'still fine' });
      await e.t.cmd('Caboose again');
      await chatHas('still fine');
      await chatHas("MCP server 'local' restarted");
      assert.deepEqual(firstToolResult(e.fake.chatRequests[3]), { ok: true, data: { server: 'remote', tool: 'add', output: '4' } });
      assert.ok(toolNames(e.fake.chatRequests[2]).includes('local__echo'), 'restarted before the request: its tools are back');
    });

    it('a server that failed before the chat opened is named in the chat once it opens', async () => {
      await e.start({ initLua: SETUP('chug', { ghost: { command: 'caboose-no-such-mcp-server' }, local: stdioServer() }) });
      await e.t.cmd('set columns=80');
      await e.t.cmd('CabooseMcp');
      await e.t.waitFor(async () => /ghost {2}failed/.test(((await linesOf(e.t, 'caboose_mcp')) ?? []).join('\n')), 'listed as failed');
      // The float keeps its buffer: :edit there does not load a file into it.
      assert.equal(await e.t.lua('return vim.wo.winfixbuf'), true);
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await linesOf(e.t, 'caboose_mcp')) === null, 'closed');
      e.fake.script({ text: 'hello there' });
      await e.t.cmd('Caboose hi');
      await chatHas('hello there');
      await chatHas("MCP server 'ghost' is unavailable: command not found: caboose-no-such-mcp-server (:CabooseMcp restart ghost tries again)");
      // The message at the bottom is one command line (cut), never a hit-enter prompt; the chat has it whole.
      const n = (await e.t.notifications()).find((x) => x.msg.startsWith("(caboose) MCP server 'ghost' failed to start"))!;
      assert.ok(n.msg.endsWith('…') && n.msg.length <= (await e.t.lua<number>('return vim.v.echospace')), n.msg);
    });

    it('a missing command and a server that never answers are reported and the session works; big output is capped; isError is a structured error', async () => {
      const mute = { command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'] };
      await e.start({ initLua: SETUP('chug', { ghost: { command: 'caboose-no-such-mcp-server' }, mute, local: stdioServer() }, 3500) });
      e.fake.script(
        {
          toolCalls: [
            { id: 'c_big', name: 'local__big', arguments: { lines: 5000 } },
            { id: 'c_fail', name: 'local__fail', arguments: {} },
            { id: 'c_bad', name: 'local__add', arguments: { a: 'one' } },
          ],
        },
        { text: 'handled' },
      );
      await e.t.cmd('Caboose try');
      await chatHas("MCP server 'ghost' failed to start: command not found: caboose-no-such-mcp-server; its tools are unavailable (:CabooseMcp restart ghost tries again)");
      await chatHas("MCP server 'mute' failed to start: no answer within 3.5 s; its tools are unavailable");
      // The reply waited for it, and the chat said so meanwhile. 'mute' was surely still starting after 1 s;
      // 'local' may be listed too on a loaded machine (a node process with the SDK can take over a second).
      assert.match(
        (await e.t.chatLines()).join('\n'),
        /waiting for MCP servers? (?:'(?:local|ghost)', )*'mute'(?:, '(?:local|ghost)')* to start \(at most 3\.5 s; :CabooseStop stops waiting\)/,
      );
      await chatHas('handled');
      assert.equal(toolNames(e.fake.chatRequests[0]).some((n) => n.startsWith('ghost__') || n.startsWith('mute__')), false);
      assert.ok(toolNames(e.fake.chatRequests[0]).includes('local__big'));
      const results = lastToolResults(e.fake.chatRequests[1]);
      const big = results.get('c_big')!;
      assert.equal(big.data?.truncated, true);
      assert.match(String(big.data?.output), /\[output truncated: \d+ of 5000 lines/);
      const msg = e.fake.chatRequests[1].body!.messages!.find((m) => m.role === 'tool' && m.tool_call_id === 'c_big')!;
      assert.ok(Buffer.byteLength(String(msg.content)) <= 51 * 1024, 'within the cap');
      assert.deepEqual(results.get('c_fail')?.error, { kind: 'mcp_error', message: 'the tool failed on purpose', details: { server: 'local', tool: 'fail', isError: true } });
      assert.equal(results.get('c_bad')?.error?.kind, 'invalid_arguments');

      assert.match(await healthText(), /ERROR.*ghost \(stdio: caboose-no-such-mcp-server\): command not found: caboose-no-such-mcp-server/);
      await e.t.cmd('CabooseMcp');
      const lines = await e.t.waitFor(() => linesOf(e.t, 'caboose_mcp'), 'the listing');
      assert.match(lines.join('\n'), /^ghost {2}failed {2}stdio: caboose-no-such-mcp-server\n {2}command not found: caboose-no-such-mcp-server$/m);
      const events = await e.t.lua<{ server: string; state: string }[]>('return _G.mcp_events');
      assert.ok(events.some((x) => x.server === 'ghost' && x.state === 'failed'));

      // :CabooseMcp restart tries again (and says how it went).
      await e.t.cmd('CabooseMcp restart local');
      await e.t.waitFor(async () => (await e.t.notifications()).some((n) => n.msg === "(caboose) MCP server 'local' is running (8 tools)"), 'restart notice');
    });

    it('a stdio server gets the env of its config (on top of the inherited basics); another server does not', async () => {
      await e.start({ initLua: SETUP('chug', { local: stdioServer({ env: { CABOOSE_MCP_TEST_VAR: 'value 42' } }), plain: stdioServer() }) });
      e.fake.script(
        {
          toolCalls: [
            { id: 'c_var', name: 'local__env', arguments: { name: 'CABOOSE_MCP_TEST_VAR' } },
            { id: 'c_path', name: 'local__env', arguments: { name: 'PATH' } },
            { id: 'c_plain', name: 'plain__env', arguments: { name: 'CABOOSE_MCP_TEST_VAR' } },
          ],
        },
        { text: 'env read' },
      );
      await e.t.cmd('Caboose read the env');
      await chatHas('env read');
      const results = lastToolResults(e.fake.chatRequests[1]);
      assert.deepEqual(results.get('c_var'), { ok: true, data: { server: 'local', tool: 'env', output: 'CABOOSE_MCP_TEST_VAR=value 42' } });
      assert.match(String(results.get('c_path')?.data?.output), /^PATH=(?!\(unset\)$)\S/, 'the configured env is added to the default one, not instead of it');
      assert.deepEqual(results.get('c_plain'), { ok: true, data: { server: 'plain', tool: 'env', output: 'CABOOSE_MCP_TEST_VAR=(unset)' } }, 'only the server it is configured for');
    });

    it('an HTTP server gets the headers of its config; the same server without them fails to start, is reported, and the session goes on', async () => {
      http = await startHttpMcpServer(['--require-header', 'secret-token']);
      await e.start({ initLua: SETUP('chug', { good: { url: http.url, headers: { 'X-Test-Token': 'secret-token' } }, bad: { url: http.url } }) });
      e.fake.script({ toolCalls: [{ name: 'good__echo', arguments: { text: 'with header' } }] }, { text: 'header worked' });
      await e.t.cmd('Caboose call it');
      const failed = "MCP server 'bad' failed to start: Streamable HTTP error: Error POSTing to endpoint: missing token; its tools are unavailable (:CabooseMcp restart bad tries again)";
      await chatHas(failed);
      await chatHas('header worked');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[1]), { ok: true, data: { server: 'good', tool: 'echo', output: 'echo: with header' } });
      const offered = toolNames(e.fake.chatRequests[0]);
      assert.ok(offered.includes('good__echo'), 'the server with the header is offered');
      assert.equal(offered.some((n) => n.startsWith('bad__')), false, 'the one without it is not');
      assert.ok(
        (await e.t.notifications()).some((n) => n.msg.startsWith("(caboose) MCP server 'bad' failed to start: Streamable HTTP error")),
        'a notification too (cut to the command line; the chat has it whole)',
      );
      const events = await e.t.lua<{ server: string; state: string }[]>('return _G.mcp_events');
      assert.ok(events.some((x) => x.server === 'bad' && x.state === 'failed'), JSON.stringify(events));
      assert.equal(events.some((x) => x.server === 'good' && x.state === 'failed'), false, JSON.stringify(events));

      await e.t.cmd('CabooseMcp');
      const lines = await e.t.waitFor(() => linesOf(e.t, 'caboose_mcp'), 'the listing');
      const text = lines.join('\n');
      const url = http.url.replace(/[.]/g, '\\.');
      assert.match(text, new RegExp(`^bad {2}failed {2}http: ${url}\\n {2}Streamable HTTP error: Error POSTing to endpoint: missing token$`, 'm'));
      assert.match(text, new RegExp(`^good {2}running, 8 tools {2}http: ${url}$`, 'm'));
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await linesOf(e.t, 'caboose_mcp')) === null, 'q closes it');

      // The session goes on: a second turn calls the server again.
      e.fake.script({ toolCalls: [{ name: 'good__add', arguments: { a: 20, b: 22 } }] }, { text: 'still fine' });
      await e.t.cmd('Caboose again');
      await chatHas('still fine');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[3]), { ok: true, data: { server: 'good', tool: 'add', output: '42' } });
      assert.equal(e.fake.unscripted, 0);
    });

    it('create mode: a server with allow = true runs all its tools without asking; a server without allow still asks', async () => {
      await e.start({ initLua: SETUP('create', { trusted: stdioServer({ allow: true }), other: stdioServer() }) });

      await e.t.cmd('CabooseMcp');
      const lines = await e.t.waitFor(async () => {
        const l = await linesOf(e.t, 'caboose_mcp');
        return l && l.join('\n').includes('trusted  running') && l.join('\n').includes('other  running') ? l : null;
      }, 'both servers listed as running');
      const text = lines.join('\n');
      for (const tool of ['echo', 'add', 'fail', 'crash', 'big', 'image', 'slow', 'env']) {
        assert.match(text, new RegExp(`^ {2}trusted__${tool} +runs \\(allowed\\) `, 'm'), `trusted__${tool} runs`);
        assert.match(text, new RegExp(`^ {2}other__${tool} +asks `, 'm'), `other__${tool} asks`);
      }
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await linesOf(e.t, 'caboose_mcp')) === null, 'q closes it');

      e.fake.script(
        {
          toolCalls: [
            { id: 'c_echo', name: 'trusted__echo', arguments: { text: 'no float' } },
            { id: 'c_env', name: 'trusted__env', arguments: { name: 'HOME' } },
          ],
        },
        { text: 'trusted ran' },
      );
      await e.t.cmd('Caboose trusted');
      await chatHas('trusted ran');
      const trusted = lastToolResults(e.fake.chatRequests[1]);
      assert.deepEqual(trusted.get('c_echo'), { ok: true, data: { server: 'trusted', tool: 'echo', output: 'echo: no float' } });
      assert.equal(trusted.get('c_env')?.ok, true);
      assert.deepEqual(await shown(), [], 'no approval float for the allowed server');
      assert.equal(await approvalFloat(e.t), null);

      e.fake.script({ toolCalls: [{ name: 'other__echo', arguments: { text: 'asked' } }] }, { text: 'other ran' });
      await e.t.cmd('Caboose other');
      const f = await waitApprovalFloat(e.t, 'other__echo');
      assert.match(f.text, /^MCP server: other \(stdio: /);
      assert.equal(e.fake.chatRequests.length, 3, 'nothing ran before the answer');
      await e.t.lua("require('caboose').approval_respond('once')");
      await chatHas('other ran');
      assert.deepEqual(firstToolResult(e.fake.chatRequests[3]), { ok: true, data: { server: 'other', tool: 'echo', output: 'echo: asked' } });
      assert.deepEqual(await shown(), ['other__echo']);
    });

    it(':CabooseStop cancels a running MCP call; the server stays up', async () => {
      await e.start({ initLua: SETUP('chug', { local: stdioServer() }) });
      e.fake.script({ toolCalls: [{ name: 'local__slow', arguments: { ms: 30000 } }] });
      await e.t.cmd('Caboose wait');
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'executing_tools', 'the call runs');
      const t0 = Date.now();
      await e.t.cmd('CabooseStop');
      await e.t.waitFor(async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state === 'idle', 'stopped');
      assert.ok(Date.now() - t0 < 5000);
      e.fake.script({ toolCalls: [{ name: 'local__echo', arguments: { text: 'still here' } }] }, { text: 'after stop' });
      await e.t.cmd('Caboose again');
      await chatHas('after stop');
      assert.deepEqual(firstToolResult(e.fake.chatRequests.at(-1)!), { ok: true, data: { server: 'local', tool: 'echo', output: 'echo: still here' } });
    });

    it('setup() validates mcp.servers and names the dotted key', async () => {
      const t = await e.start();
      const err = (servers: string) => t.lua<string>(`local ok, e = pcall(require('caboose').setup, { mcp = { servers = ${servers} } }) return e`);
      assert.match(await err("{ ['a b'] = { command = 'x' } }"), /`mcp\.servers\.a b` should be named with letters, digits/);
      assert.match(await err("{ a__b = { command = 'x' } }"), /`mcp\.servers\.a__b` should be named/);
      assert.match(await err("{ x = { command = 'x', url = 'http://h' } }"), /`mcp\.servers\.x` should be a table with either `command`/);
      assert.match(await err("{ x = { url = 'http://h', args = { 'a' } } }"), /`mcp\.servers\.x\.args` should be absent \(it is for stdio servers; this one is http\)/);
      assert.match(await err("{ x = { command = 'x', args = 'a' } }"), /`mcp\.servers\.x\.args` should be a list of strings/);
      assert.match(await err("{ x = { url = 'ftp://h' } }"), /`mcp\.servers\.x\.url` should be an http\(s\) URL/);
      assert.match(await err("{ x = { command = 'x', allow = 'yes' } }"), /`mcp\.servers\.x\.allow` should be a boolean or a list of tool names/);
      assert.match(await err("{ x = { command = 'x', colour = 'red' } }"), /`mcp\.servers\.x\.colour` should be one of type, command, args/);
      assert.equal(await t.lua("return pcall(require('caboose').setup, { mcp = { servers = { x = { command = 'x', env = {}, allow = true } } } })"), true);
      // `type` as other MCP clients write it, checked against command/url; a command given as a list.
      assert.match(await err("{ x = { type = 'http', command = 'x' } }"), /`mcp\.servers\.x\.type` should be 'stdio' \(the server has a command\)/);
      assert.match(await err("{ x = { type = 'sse', url = 'http://h' } }"), /`mcp\.servers\.x\.type` should be 'stdio', 'http' or 'streamable-http' \(SSE servers are not supported/);
      assert.match(await err("{ x = { command = {} } }"), /`mcp\.servers\.x\.command` should be a non-empty string or a list of strings/);
      assert.equal(await t.lua("return pcall(require('caboose').setup, { mcp = { servers = { x = { type = 'stdio', command = { 'node', 'a.js' } }, y = { type = 'streamable-http', url = 'http://h/mcp' } } } })"), true);
      const part = await t.lua<{ servers: Record<string, Record<string, unknown>> }>(
        "return require('caboose.config').host_part(require('caboose.config').build({ mcp = { servers = { x = { type = 'stdio', command = { 'node', 'a.js' }, args = { '--v' } } } } })).mcp",
      );
      assert.deepEqual(part.servers.x, { command: 'node', args: ['a.js', '--v'] });
    });
  });
});
