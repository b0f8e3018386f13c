/**
 * zod runs without its JIT in the host (src/host/zod-jitless.ts): zod reads the setting when a schema is
 * built, so a schema built before it (import order in the bundle, a module loaded later, the MCP and ACP
 * paths) would still compile its parser with `new Function` on first parse. A whole session in the real,
 * bundled host — the chat, file tools on a buffer, bash, an MCP server's tool, an ACP agent reading and
 * writing — runs under a preload that counts every use of the global Function constructor.
 */
import { test } from 'node:test';
import { SourceMap } from 'node:module';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultNvim, REPO_ROOT, startNvim } from '../support/nvim';
import { startFakeOpenAI } from '../support/fake-openai';
import { stdioServer } from '../support/mcp';

const AGENT = path.join(REPO_ROOT, 'test', 'support', 'acp-agent.mjs');

type Probe = { pid: number; count: number; stacks: string[][] };
const BUNDLE_MAP = path.join(REPO_ROOT, 'dist', 'host.bundle.js.map');

/** Each recorded stack's frames in the bundle, mapped back to their sources through the bundle's source map. */
function sourcesOf(stacks: string[][]): string[][] {
  const map = new SourceMap(JSON.parse(fs.readFileSync(BUNDLE_MAP, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
  return stacks.map((frames) =>
    frames.map((f) => {
      const m = /host\.bundle\.js:(\d+):(\d+)/.exec(f);
      if (!m) return f;
      const e = map.findEntry(Number(m[1]) - 1, Number(m[2]) - 1) as { originalSource?: string; originalLine?: number };
      return e.originalSource ? `${e.originalSource.replace(/^.*node_modules\//, 'node_modules/')}:${(e.originalLine ?? 0) + 1}` : f;
    }),
  );
}

test('a whole session (chat, file tools, bash, an MCP tool, an ACP agent) in the bundled host: zod compiles no code; only Ajv does, once per MCP tool schema', async () => {
  assert.ok(fs.existsSync(BUNDLE_MAP), `run npm run build first: ${BUNDLE_MAP} is missing`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-jitless-'));
  const out = path.join(work, 'probe.json');
  const node = path.join(work, 'node.sh');
  fs.writeFileSync(node, `#!/bin/sh\nFUNCTION_PROBE_OUT=${JSON.stringify(out)} exec ${JSON.stringify(process.execPath)} -r ${JSON.stringify(path.join(REPO_ROOT, 'test', 'support', 'function-probe.cjs'))} "$@"\n`, { mode: 0o755 });
  const fake = await startFakeOpenAI();
  const servers = { local: stdioServer({ allow: ['add'] }) };
  const t = await startNvim({
    nvim: defaultNvim(),
    env: { OPENAI_BASE_URL: fake.url, CABOOSE_MODEL: 'fake-model' },
    initLua: `require('caboose').setup({
      mode = 'chug',
      host = { node = ${JSON.stringify(node)} },
      provider = { max_retries = 0 },
      mcp = { servers = vim.json.decode(${JSON.stringify(JSON.stringify(servers))}) },
      acp = { agents = { tester = { command = { ${JSON.stringify(process.execPath)}, ${JSON.stringify(AGENT)} } } } },
    })`,
  });
  const chat = async () => (await t.chatLines()).join('\n');
  const chatHas = (s: string) => t.waitFor(async () => (await chat()).includes(s), s, 30_000);
  const idle = () => t.waitFor(async () => (await t.lua<string>("return require('caboose').state().state")) === 'idle', 'idle', 30_000);
  try {
    fs.writeFileSync(path.join(t.cwd, 'a.txt'), 'one\ntwo\n');
    await t.cmd('edit a.txt');
    fake.script(
      { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] },
      { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', edits: [{ oldText: 'two', newText: 'TWO' }] } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo ran-bash' } }] },
      { toolCalls: [{ name: 'local__add', arguments: { a: 2, b: 3 } }] },
      { toolCalls: [{ name: 'grep', arguments: { pattern: 'TWO' } }] },
      { text: 'Session done.' },
    );
    await t.cmd('Caboose go');
    await chatHas('Session done.');
    await idle();
    assert.ok(fake.chatRequests.length >= 6, `precondition: every step reached the model (${fake.chatRequests.length})`);
    const text = await chat();
    for (const s of ['ran-bash']) assert.ok(text.includes(s) || JSON.stringify(fake.chatRequests.map((r) => r.body?.messages)).includes(s), `precondition: ${s}`);
    assert.match(JSON.stringify(fake.chatRequests.at(-1)?.body?.messages), /"5"|: ?5\b|\\"5\\"/, 'precondition: the MCP tool answered');

    // The ACP path: an agent reads and writes through the host.
    await t.cmd('CabooseAgent tester');
    await t.waitFor(async () => (await t.lua<string | null>("return require('caboose').agent_name()")) === 'tester', 'the chat runs tester', 30_000);
    await t.lua("require('caboose').send('read a.txt')");
    await chatHas('READ<<one');
    await idle();

    const hostPid = await t.lua<number>("return require('caboose.rpc').host_pid()");
    const after = Date.now();
    const seen = await t.waitFor(async (): Promise<Probe | null> => {
      try {
        if (fs.statSync(out).mtimeMs <= after) return null;
        return JSON.parse(fs.readFileSync(out, 'utf8')) as Probe;
      } catch {
        return null;
      }
    }, 'the probe', 10_000);
    assert.equal(seen.pid, hostPid, 'precondition: the probe ran in the host');
    const sources = sourcesOf(seen.stacks);
    const shown = sources.map((s) => s.join('\n  ')).join('\n---\n');
    assert.ok(seen.stacks.length === Math.min(seen.count, 20), 'every compile has its stack (the first 20)');
    // zod never compiles a parser: not for host.init, the RPC methods, the tools' arguments, MCP or ACP.
    assert.ok(!sources.some((s) => s.some((f) => f.includes('node_modules/zod/'))), `zod compiled code:\n${shown}`);
    // What does compile code, and the only thing allowed to: Ajv, for an MCP tool's input schema, once per tool
    // when the server's tools are listed (src/mcp/connect.ts validator; the test server has 8 tools).
    for (const s of sources) assert.ok(s[0]?.startsWith('node_modules/ajv/') && s.some((f) => f.includes('src/mcp/connect.ts')), `code compiled outside the MCP input-schema validator:\n${shown}`);
    assert.ok(seen.count <= 8, `one compile per MCP tool at most (${seen.count}):\n${shown}`);
  } finally {
    await t.close();
    await fake.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
