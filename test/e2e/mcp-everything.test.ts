/**
 * The MCP client against the reference server (@modelcontextprotocol/server-everything, a devDependency),
 * over stdio and streamable HTTP: its tools are offered (task-only tools are not: no MCP tasks here), and
 * each tool that needs a client capability works: roots, elicitation (our ask UI), sampling (approved,
 * answered by the current model), progress (on the tool line); a resource attached with #mcp: reaches the
 * model; a prompt runs as /server:prompt.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import fs from 'node:fs';
import { defaultNvim, REPO_ROOT } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';
import type { FakeRequest } from '../support/fake-openai';

const EVERYTHING = path.join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const toolNames = (r: FakeRequest) => (r.body?.tools ?? []).map((x) => (x as { function: { name: string } }).function.name);
const lastTool = (r: FakeRequest) => {
  const m = (r.body?.messages ?? []).filter((x) => x.role === 'tool');
  return String(m[m.length - 1]?.content ?? '');
};
const lastUser = (r: FakeRequest) => {
  const m = (r.body?.messages ?? []).filter((x) => x.role === 'user');
  return String(m[m.length - 1]?.content ?? '');
};

const SETUP = (server: Record<string, unknown>, media = '') => `
  require('caboose').setup({
    mode = 'create',
    provider = { max_retries = 0${media ? `, media = { ${media} }` : ''} },
    approval = { style = 'float' },
    mcp = { servers = { everything = vim.json.decode(${JSON.stringify(JSON.stringify(server))}) }, start_timeout_ms = 30000 },
  })
  -- Scripted answers to the ask UI: select picks the item starting with the next answer, input returns it.
  _G.answers, _G.asked, _G.progress = {}, {}, {}
  local nexta = function() return table.remove(_G.answers, 1) end
  vim.ui.input = function(opts, cb) table.insert(_G.asked, opts.prompt) local a = nexta() cb(a == nil and '' or a) end
  vim.ui.select = function(items, opts, cb)
    table.insert(_G.asked, opts.prompt)
    local a = nexta()
    for i, it in ipairs(items) do if a ~= nil and tostring(it):find(a, 1, true) == 1 then return cb(it, i) end end
    cb(items[1], 1)
  end
  local chat = require('caboose.chat')
  local tp = chat.tool_progress
  chat.tool_progress = function(p) table.insert(_G.progress, p.summary) return tp(p) end`;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

for (const transport of ['stdio', 'http'] as const) {
  describe(`MCP server-everything over ${transport}`, () => {
    const e = useE2E(defaultNvim());
    let http: ChildProcess | null = null;
    let url = '';
    before(async () => {
      if (transport !== 'http') return;
      const port = await freePort();
      http = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
      const server = http;
      process.once('exit', () => server.kill('SIGKILL')); // also when the runner is cut short
      await new Promise<void>((resolve, reject) => {
        http!.stderr!.on('data', (d: Buffer) => d.toString().includes('listening') && resolve());
        http!.once('exit', (c) => reject(new Error(`server-everything exited (${c})`)));
      });
      url = `http://127.0.0.1:${port}/mcp`;
    });
    after(() => {
      http?.kill();
    });
    const server = () => (transport === 'stdio' ? { command: process.execPath, args: [EVERYTHING, 'stdio'] } : { url });
    const chatHas = (text: string | RegExp) =>
      e.t.waitFor(async () => {
        const c = (await e.t.chatLines()).join('\n');
        return typeof text === 'string' ? c.includes(text) : text.test(c);
      }, String(text), 30_000);
    const idle = () => e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle', 30_000);
    const approve = async () => {
      await waitApprovalFloat(e.t);
      await e.t.lua("require('caboose').approval_respond('once')");
    };

    it('offers its tools; roots, elicitation, sampling and progress work through our UI', async () => {
      assert.ok(fs.existsSync(EVERYTHING), `server-everything at ${EVERYTHING}`);
      await e.start({ initLua: SETUP(server()) });
      // 1. The tools offered (the capability-dependent ones too; task-only ones are not).
      e.fake.script({ text: 'listed' });
      await e.t.cmd('Caboose list your tools');
      await chatHas('listed');
      await idle();
      const names = toolNames(e.fake.chatRequests[0]).filter((n) => n.startsWith('everything__'));
      for (const t of ['echo', 'get-sum', 'get-tiny-image', 'get-roots-list', 'trigger-elicitation-request', 'trigger-sampling-request', 'trigger-long-running-operation', 'trigger-url-elicitation', 'get-resource-links']) {
        assert.ok(names.includes(`everything__${t}`), `${t} offered (got ${names.join(', ')})`);
      }
      assert.ok(!names.includes('everything__trigger-sampling-request-async'), 'task-based tools are not offered');
      assert.ok(!names.includes('everything__simulate-research-query'), 'a task-only tool is not offered');
      // 19 tools: 16 offered; the 3 task tools are not (no MCP tasks here).
      assert.equal(names.length, 16, names.join(', '));
      assert.ok(toolNames(e.fake.chatRequests[0]).includes('mcp_read_resource'));

      // 2. Roots: the workspace root.
      e.fake.script({ toolCalls: [{ name: 'everything__get-roots-list', arguments: {} }] }, (r) => ({ text: `ROOTS ${lastTool(r).includes(e.t.cwd) ? 'has-cwd' : 'missing'}` }));
      await e.t.cmd('Caboose roots');
      await approve();
      await chatHas('ROOTS has-cwd');
      await idle();

      // 3. Elicitation: our ask UI, field by field.
      await e.t.lua(`_G.answers = { 'Answer', 'Ada Lovelace', 'true' }`);
      e.fake.script({ toolCalls: [{ name: 'everything__trigger-elicitation-request', arguments: {} }] }, (r) => ({ text: `ELICITED ${/Ada Lovelace/.test(lastTool(r)) ? 'accepted' : lastTool(r).slice(0, 300)}` }));
      await e.t.cmd('Caboose ask me');
      await approve();
      // A server's question waits until the user is in the chat (it never takes keys meant for another buffer).
      await e.t.cmd('CabooseChat');
      await e.t.cmd('stopinsert');
      await chatHas('ELICITED accepted');
      await idle();
      assert.ok((await e.t.lua<string[]>('return _G.asked')).some((q) => q.includes("MCP server 'everything' asks")));

      // 3b. URL elicitation: the URL is shown; "Done" accepts.
      await e.t.lua(`_G.answers = { 'Done' }`);
      e.fake.script({ toolCalls: [{ name: 'everything__trigger-url-elicitation', arguments: { url: 'https://example.com/consent' } }] }, (r) => ({ text: `URL ${/accept/i.test(lastTool(r)) ? 'accepted' : lastTool(r).slice(0, 300)}` }));
      await e.t.cmd('Caboose open it');
      await approve();
      await e.t.cmd('CabooseChat');
      await e.t.cmd('stopinsert');
      await chatHas('URL accepted');
      await idle();
      assert.ok((await e.t.lua<string[]>('return _G.asked')).some((q) => q.includes('https://example.com/consent')));

      // 4. Sampling: approved from our float, answered by the current model, shown in the chat.
      e.fake.script(
        { toolCalls: [{ name: 'everything__trigger-sampling-request', arguments: { prompt: 'say pineapple', maxTokens: 50 } }] },
        (r) => ({ text: `SAMPLED-BY-MODEL for: ${lastUser(r).slice(0, 80)}` }),
        (r) => ({ text: `SAMPLING DONE ${/SAMPLED-BY-MODEL/.test(lastTool(r)) ? 'ok' : 'missing'}` }),
      );
      await e.t.cmd('Caboose sample');
      await approve(); // the tool call
      const f = await e.t.waitFor(async () => {
        const fl = await approvalFloat(e.t);
        return fl && /asks the model/.test(fl.text) ? fl : null;
      }, 'the sampling approval');
      assert.match(f.text, /say pineapple/);
      await e.t.lua("require('caboose').approval_respond('once')");
      await chatHas('SAMPLING DONE ok');
      await chatHas("MCP server 'everything' sampled the model");
      await idle();

      // 5. Progress on the tool line.
      e.fake.script({ toolCalls: [{ name: 'everything__trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }] }, { text: 'LONG DONE' });
      await e.t.cmd('Caboose long');
      await approve();
      await chatHas('LONG DONE');
      await idle();
      const progress = await e.t.lua<string[]>('return _G.progress');
      assert.ok(progress.some((p) => /^\d+\/3/.test(p)), `progress shown (${progress.join(' | ')})`);

      // 6. :CabooseStop cancels a running call (the SDK sends notifications/cancelled with the aborted request).
      await e.t.lua('_G.progress = {}');
      e.fake.script({ toolCalls: [{ name: 'everything__trigger-long-running-operation', arguments: { duration: 60, steps: 60 } }] });
      await e.t.cmd('Caboose very long');
      await approve();
      await e.t.waitFor(async () => (await e.t.lua<string[]>('return _G.progress')).length > 0, 'the call reports progress');
      await e.t.cmd('CabooseStop');
      await idle();
      await chatHas(/⊘ everything__trigger-long-running-operation/);

      // After the server's tool list changed (it adds tools once it knows the client), still no task-only tool.
      const later = toolNames(e.fake.chatRequests[e.fake.chatRequests.length - 1]).filter((n) => n.startsWith('everything__'));
      assert.ok(!later.includes('everything__simulate-research-query'), later.join(', '));
      assert.equal(later.length, 16, later.join(', '));

      // 7. A new chat in another folder: the servers are told the roots changed.
      const other = fs.mkdtempSync(path.join(e.t.cwd, 'other-'));
      await e.t.cmd(`cd ${other}`);
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await e.t.lua<string>("return require('caboose').state().state")) === 'idle', 'new chat');
      await new Promise((r) => setTimeout(r, 500));
      e.fake.script({ toolCalls: [{ name: 'everything__get-roots-list', arguments: {} }] }, (r) => ({ text: `ROOTS2 ${lastTool(r).includes(path.basename(other)) ? 'has-other' : lastTool(r).slice(0, 300)}` }));
      await e.t.cmd('Caboose roots again');
      await approve();
      await chatHas('ROOTS2 has-other');
    });

    it('images in results reach a model that accepts them (provider.media), as placeholders otherwise', async () => {
      await e.start({ initLua: SETUP({ ...server(), allow: ['get-tiny-image'] }, "'image'") });
      e.fake.script({ toolCalls: [{ name: 'everything__get-tiny-image', arguments: {} }] }, { text: 'SAW THE IMAGE' });
      await e.t.cmd('Caboose show me');
      await chatHas('SAW THE IMAGE');
      await idle();
      const req = e.fake.chatRequests[e.fake.chatRequests.length - 1];
      const msgs = req.body?.messages ?? [];
      const toolIdx = msgs.findIndex((m) => m.role === 'tool');
      assert.match(String(msgs[toolIdx].content), /\[image: image\/png, \d+ bytes, not shown\]/, 'the tool message keeps a placeholder');
      const media = msgs.slice(toolIdx + 1).find((m) => m.role === 'user' && Array.isArray(m.content));
      assert.ok(media, 'a user message with the image follows the tool results');
      const parts = media!.content as { type: string; image_url?: { url: string } }[];
      assert.ok(parts.some((p) => p.type === 'image_url' && p.image_url!.url.startsWith('data:image/png;base64,')));
      // The chat does not show that message (it is the model's, not the user's).
      assert.doesNotMatch((await e.t.chatLines()).join('\n'), /Media returned by tool call/);
    });

    it('a resource attached with #mcp: reaches the model; a prompt runs as /server:prompt with its arguments asked for', async () => {
      await e.start({ initLua: SETUP(server()) });
      const items = await e.t.lua<{ word: string; kind: string }[]>(`
        local done
        require('caboose').mcp_completion_items(function(items) done = items end)
        vim.wait(30000, function() return done ~= nil end)
        return done`);
      const res = items.find((i) => i.kind === 'resource');
      assert.ok(res, 'resources listed for completion');
      assert.ok(items.some((i) => i.word === '/everything:args-prompt'), 'prompts listed for completion');

      e.fake.script({ text: 'got the resource' });
      await e.t.cmd(`Caboose summarize ${res!.word}`);
      await chatHas('got the resource');
      await idle();
      assert.match(lastUser(e.fake.chatRequests[e.fake.chatRequests.length - 1]), /<mcp-resource server="everything" uri="[^"]+">/);

      // Attaching subscribed to it: the server's update notifications reach the chat.
      e.fake.script({ toolCalls: [{ name: 'everything__toggle-subscriber-updates', arguments: {} }] }, { text: 'toggled' });
      await e.t.cmd('Caboose start updates');
      await approve();
      await chatHas('toggled');
      await idle();
      await e.t.waitFor(async () => (await e.t.chatLines()).join('\n').includes(`MCP server 'everything': resource ${res!.word.replace('#mcp:everything:', '')} changed`), 'the update notice', 15_000);

      await e.t.lua(`_G.answers = { 'Paris' }`);
      e.fake.script((r) => ({ text: `PROMPTED ${lastUser(r).slice(0, 200)}` }));
      await e.t.cmd('stopinsert');
      await e.t.cmd('Caboose /everything:args-prompt');
      await chatHas(/PROMPTED .*Paris/);
      await idle();
    });
  });
}
