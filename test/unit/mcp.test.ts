/**
 * The MCP client: tool names, the config schema, result conversion, permissions, and the pool against the
 * test server (stdio and HTTP, real processes on this machine).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { McpConfigSchema } from '../../src/mcp/config';
import { HostConfigSchema } from '../../src/host/protocol';
import { mcpToolName, mcpToolNames, TOOL_NAME_RE } from '../../src/mcp/names';
import { contentBlockText, resultText, toToolOutput } from '../../src/mcp/results';
import { McpPool, MAX_AUTO_RESTARTS, type McpChange } from '../../src/mcp/client-pool';
import { McpToolSource, modelSchema } from '../../src/mcp/tools';
import { mcpNotice, mcpServerViews } from '../../src/mcp/status';
import { permissionFor, PERMISSION_MODES } from '../../src/tools/permissions';
import { ToolRegistry, toolSpec } from '../../src/tools/registry';
import { isOffered } from '../../src/tools/offered';
import { capToolResultJson, MAX_OUTPUT_BYTES } from '../../src/workspace/output';
import { testToolContext } from '../support/tool-context';
import { startHttpMcpServer, stdioServer, type HttpMcpServer } from '../support/mcp';

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

describe('MCP tool names', () => {
  it('are <server>__<tool>, sanitized to the OpenAI charset and at most 64 characters', () => {
    assert.equal(mcpToolName('files', 'read'), 'files__read');
    assert.equal(mcpToolName('gh', 'repo.search issues/v2'), 'gh__repo_search_issues_v2');
    const long = mcpToolName('server', 'x'.repeat(100));
    assert.equal(long.length, 64);
    assert.match(long, TOOL_NAME_RE);
    assert.notEqual(long, mcpToolName('server', `${'x'.repeat(99)}y`), 'a hash keeps long names apart');
    assert.match(mcpToolName('s', 'ünïcödé'), TOOL_NAME_RE);
  });

  it('stay distinct when two tools sanitize to the same name', () => {
    const [a, b, c] = mcpToolNames('s', ['a.b', 'a/b', 'c']);
    assert.equal(a, 's__a_b');
    assert.notEqual(b, a);
    assert.match(b, /^s__a_b_[0-9a-f]{8}$/);
    assert.equal(c, 's__c');
  });
});

describe('the mcp config schema', () => {
  it('accepts stdio and HTTP servers (an empty Lua table stands for an empty object)', () => {
    const r = McpConfigSchema.parse({
      servers: {
        files: { command: 'npx', args: ['-y', 'x'], env: [], cwd: '/tmp', allow: ['read'], timeout_ms: 5000 },
        'web-1': { url: 'https://example.test/mcp', headers: { Authorization: 'Bearer x' }, allow: true, disabled: true },
      },
      start_timeout_ms: 2000,
    });
    assert.deepEqual(r.servers?.files, { command: 'npx', args: ['-y', 'x'], env: {}, cwd: '/tmp', allow: ['read'], timeout_ms: 5000 });
    assert.deepEqual(McpConfigSchema.parse({ servers: [] }).servers, {});
    assert.equal(HostConfigSchema.safeParse({ mcp: { servers: { a: { command: 'x' } } } }).success, true);
  });

  it('rejects bad names, mixed transports, unknown keys and non-http URLs, naming the server', () => {
    const issues = (v: unknown) => {
      const r = McpConfigSchema.safeParse(v);
      return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    assert.match(issues({ servers: { 'a__b': { command: 'x' } } }).join('\n'), /servers\.a__b: invalid server name "a__b"/);
    assert.match(issues({ servers: { 'has space': { command: 'x' } } }).join('\n'), /invalid server name/);
    assert.ok(issues({ servers: { a: { command: 'x', url: 'http://h' } } }).length > 0);
    assert.ok(issues({ servers: { a: { command: 'x', colour: 'red' } } }).length > 0);
    assert.ok(issues({ servers: { a: { url: 'file:///etc/passwd' } } }).length > 0);
    assert.ok(issues({ servers: { a: { command: '' } } }).length > 0);
    assert.ok(issues({ servers: { a: { command: 'x', allow: 'yes' } } }).length > 0);
  });
});

describe('MCP results', () => {
  it('turn content into text: images and binary resources as placeholders', () => {
    assert.equal(contentBlockText({ type: 'text', text: 'hi' }), 'hi');
    assert.equal(contentBlockText({ type: 'image', data: Buffer.from('abcdef').toString('base64'), mimeType: 'image/png' }), '[image: image/png, 6 bytes, not shown]');
    assert.equal(contentBlockText({ type: 'resource', resource: { uri: 'file:///a', mimeType: 'text/plain', text: 'body' } }), '[resource file:///a (text/plain)]\nbody');
    assert.equal(contentBlockText({ type: 'resource', resource: { uri: 'file:///b', blob: Buffer.from('xy').toString('base64') } }), '[resource file:///b: binary, 2 bytes, not shown]');
    assert.equal(contentBlockText({ type: 'resource_link', uri: 'file:///c', name: 'c' }), '[resource link file:///c (c)]');
    assert.equal(contentBlockText({ type: 'hologram' }), '[hologram content, not shown]');
    assert.equal(resultText({ content: [], structuredContent: { n: 1 } }), '{\n  "n": 1\n}');
    assert.deepEqual(toToolOutput('s', 't', { content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }), { server: 's', tool: 't', output: 'a\nb' });
  });

  it('are capped like every tool output, with a notice', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join('\n');
    const out = toToolOutput('s', 'big', { content: [{ type: 'text', text }] });
    assert.equal(out.truncated, true);
    assert.match(out.output, /\[output truncated: 3000 of 5000 lines/);
    const json = capToolResultJson({ ok: true, data: out });
    assert.ok(Buffer.byteLength(json) <= MAX_OUTPUT_BYTES + 1024);
  });

  it('schemas for the model: an object schema without $schema', () => {
    assert.deepEqual(modelSchema({ type: 'object', $schema: 'http://json-schema.org/draft-07/schema#' }), { type: 'object', properties: {} });
  });
});

describe('permissions of MCP tools', () => {
  it('ask like exec tools; allowed ones run, in plan mode only when read-only', () => {
    const row = (allowed?: { readOnly: boolean }) => PERMISSION_MODES.map((m) => permissionFor(m, 'exec', allowed)).join(' ');
    assert.equal(row(), 'block ask ask run');
    assert.equal(row({ readOnly: false }), 'block run run run');
    assert.equal(row({ readOnly: true }), 'run run run run');
  });

  it('notices name the server and the reason', () => {
    const c = (x: Partial<McpChange>): McpChange => ({ server: 'x', state: 'failed', previous: 'running', ...x });
    assert.equal(mcpNotice(c({ reason: 'the process exited' })), "MCP server 'x' stopped: the process exited; its tools are unavailable");
    assert.match(mcpNotice(c({ previous: 'starting', reason: 'command not found: y' })) ?? '', /^MCP server 'x' failed to start: command not found: y; its tools are unavailable \(:CabooseMcp restart x tries again\)$/);
    assert.equal(mcpNotice(c({ state: 'running', previous: 'starting' })), null);
    assert.equal(mcpNotice(c({ state: 'running', previous: 'starting', restart: 'auto' })), "MCP server 'x' restarted");
  });
});

describe('the MCP pool against the test server', () => {
  let http: HttpMcpServer | undefined;
  const pools: McpPool[] = [];
  after(async () => {
    for (const p of pools) p.dispose();
    await http?.close();
  });
  const makePool = (servers: Record<string, unknown>, start_timeout_ms = 10_000) => {
    const changes: McpChange[] = [];
    const pool = new McpPool(McpConfigSchema.parse({ servers, start_timeout_ms }), { cwd: process.cwd(), log: silent, clientVersion: 'test' });
    pool.onChange((c) => changes.push(c));
    pools.push(pool);
    const source = new McpToolSource(pool);
    const registry = new ToolRegistry();
    registry.addSource(() => source.definitions());
    return { pool, changes, registry };
  };
  const ctx = () => testToolContext();

  it('starts stdio and HTTP servers together; their tools are offered with the prefix and called', async () => {
    http = await startHttpMcpServer();
    const { pool, registry } = makePool({ local: stdioServer({ allow: ['add'] }), remote: { url: http.url } });
    assert.deepEqual(
      pool.status().map((s) => s.state),
      ['not_started', 'not_started'],
      'nothing starts before the first use',
    );
    await pool.ensureStarted({ restartDied: false });
    assert.deepEqual(
      pool.status().map((s) => [s.name, s.state, s.tools.length]),
      [
        ['local', 'running', 8],
        ['remote', 'running', 8],
      ],
    );
    const names = registry.names();
    assert.ok(names.includes('local__echo') && names.includes('remote__add'), names.join(' '));
    const echo = registry.get('local__echo')!;
    assert.equal(echo.policy, 'exec');
    assert.equal(echo.allowed, undefined);
    assert.deepEqual(registry.get('local__add')!.allowed, { readOnly: true });
    const spec = toolSpec(echo);
    assert.match(spec.description, /^\[MCP server "local"\] Echo the text back\./);
    assert.deepEqual(spec.parameters, { type: 'object', properties: { text: { type: 'string', description: 'what to echo' } }, required: ['text'] });

    assert.deepEqual(await registry.call('local__echo', { text: 'hi' }, ctx()), { ok: true, data: { server: 'local', tool: 'echo', output: 'echo: hi' } });
    assert.deepEqual(await registry.call('remote__add', { a: 2, b: 3 }, ctx()), { ok: true, data: { server: 'remote', tool: 'add', output: '5' } });
    const img = await registry.call('remote__image', {}, ctx());
    assert.equal(img.ok && (img.data as { output: string }).output, '[image: image/png, 16 bytes, not shown]\n[resource file:///notes.txt (text/plain)]\nresource text');

    // Arguments are checked against the server's schema before anything is sent.
    const bad = await registry.call('local__add', { a: 'two' }, ctx());
    assert.equal(!bad.ok && bad.error.kind, 'invalid_arguments');
    // The tool's own error (isError) is a structured error.
    const fail = await registry.call('local__fail', {}, ctx());
    assert.deepEqual(!fail.ok && fail.error, { kind: 'mcp_error', message: 'the tool failed on purpose', details: { server: 'local', tool: 'fail', isError: true } });

    const views = mcpServerViews(pool.status(), 'create', new Set(['local__echo']));
    const local = views.find((v) => v.name === 'local')!;
    assert.deepEqual(
      local.tools.filter((t) => ['echo', 'add', 'fail'].includes(t.tool)).map((t) => [t.name, t.permission, t.allowed, t.granted, t.read_only]),
      [
        ['local__echo', 'run', false, true, false],
        ['local__add', 'run', true, false, true],
        ['local__fail', 'ask', false, false, false],
      ],
    );
  });

  it('a call is cancelled by its signal and bounded by timeout_ms', async () => {
    const { pool, registry } = makePool({ s: stdioServer({ timeout_ms: 300 }) });
    await pool.ensureStarted({ restartDied: false });
    const slow = await registry.call('s__slow', { ms: 5000 }, ctx());
    assert.equal(!slow.ok && slow.error.kind, 'timeout');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const cancelled = await registry.call('s__slow', { ms: 200 }, { ...ctx(), signal: ac.signal });
    assert.equal(!cancelled.ok && cancelled.error.kind, 'cancelled');
    assert.equal(pool.status()[0].state, 'running', 'still up');
  });

  it('a crashed stdio server is reported, its calls fail with a structured error, and it restarts at the next use', async () => {
    const { pool, changes, registry } = makePool({ s: stdioServer({}, ['--stderr']) });
    await pool.ensureStarted({ restartDied: false });
    const r = await registry.call('s__crash', {}, ctx());
    assert.equal(!r.ok && r.error.kind, 'mcp_unavailable');
    assert.equal(pool.status()[0].state, 'failed');
    assert.match(pool.status()[0].reason ?? '', /the process exited/);
    assert.ok(changes.some((c) => c.state === 'failed' && c.previous === 'running'));
    assert.deepEqual(registry.specs(isOffered).map((x) => x.name), [], 'its tools are no longer offered');
    const gone = registry.get('s__echo')!;
    assert.equal(gone.unavailable, true);
    await assert.rejects(gone.preview!({ text: 'x' }, ctx()), /MCP server 's' is not running \(it stopped: the process exited/, 'nobody is asked about it');
    const late = await registry.call('s__echo', { text: 'x' }, ctx());
    assert.equal(!late.ok && late.error.kind, 'mcp_unavailable');
    assert.match(!late.ok ? late.error.message : '', /MCP server 's' is not running \(it stopped: the process exited/);

    await pool.ensureStarted({ restartDied: false });
    assert.equal(pool.status()[0].state, 'failed', 'health and listings do not restart it');
    await pool.ensureStarted({ restartDied: true });
    assert.equal(pool.status()[0].state, 'running');
    assert.equal(mcpNotice(changes.at(-1)!), "MCP server 's' restarted");
    assert.deepEqual(await registry.call('s__echo', { text: 'back' }, ctx()), { ok: true, data: { server: 's', tool: 'echo', output: 'echo: back' } });
  });

  it('a tool requiring task-based execution (execution.taskSupport: required) is not offered; a call by name is a structured error, not -32600', async () => {
    const { pool, registry } = makePool({ s: stdioServer({ allow: true }, ['--task-tool']) });
    await pool.ensureStarted({ restartDied: false });
    const listed = pool.status()[0].tools.find((t) => t.name === 'longjob');
    assert.equal(listed?.taskSupport, 'required', 'precondition: the server lists it as task-required');
    const offered = registry.specs(isOffered).map((x) => x.name);
    assert.ok(offered.includes('s__echo'), offered.join(' '));
    assert.ok(!offered.includes('s__longjob'), `not offered: ${offered.join(' ')}`);
    const r = await registry.call('s__longjob', {}, ctx());
    assert.equal(!r.ok && r.error.kind, 'mcp_unavailable');
    assert.match(!r.ok ? r.error.message : '', /requires task-based execution/);
    assert.doesNotMatch(!r.ok ? r.error.message : '', /-326/);
    await assert.rejects(registry.get('s__longjob')!.preview!({}, ctx()), /requires task-based execution/, 'nobody is asked about it');
    const view = mcpServerViews(pool.status(), 'chug', new Set()).find((v) => v.name === 's')!;
    assert.match(view.tools.find((t) => t.tool === 'longjob')?.not_offered ?? '', /task-based execution/);
    assert.equal(view.tools.find((t) => t.tool === 'echo')?.not_offered, undefined);
  });

  it(`stops restarting a server that keeps crashing after ${MAX_AUTO_RESTARTS} tries; restart() still works`, async () => {
    const { pool, registry } = makePool({ s: stdioServer() });
    await pool.ensureStarted({ restartDied: true });
    for (let i = 0; i < MAX_AUTO_RESTARTS + 1; i++) {
      await registry.call('s__crash', {}, ctx());
      await pool.ensureStarted({ restartDied: true });
    }
    assert.equal(pool.status()[0].state, 'failed');
    const s = await pool.restart('s');
    assert.equal(s.state, 'running');
  });

  it('a missing command, a server exiting at start and an unreachable URL fail with their reasons; the others run', async () => {
    const { pool, changes } = makePool({
      gone: { command: 'caboose-no-such-mcp-server' },
      early: stdioServer({}, ['--fail-start']),
      nowhere: { url: 'http://127.0.0.1:9/mcp' },
      fine: stdioServer(),
    });
    await pool.ensureStarted({ restartDied: false });
    const byName = Object.fromEntries(pool.status().map((s) => [s.name, s]));
    assert.equal(byName.gone.state, 'failed');
    assert.equal(byName.gone.reason, 'command not found: caboose-no-such-mcp-server');
    assert.equal(byName.early.state, 'failed');
    assert.match(byName.early.reason ?? '', /exited during start-up \(stderr: cannot start: missing configuration\)/);
    assert.equal(byName.nowhere.state, 'failed');
    assert.match(byName.nowhere.reason ?? '', /ECONNREFUSED|fetch failed/);
    assert.equal(byName.fine.state, 'running');
    assert.equal(changes.filter((c) => c.state === 'failed').length, 3);
  });

  it('a server that does not answer in start_timeout_ms fails; a dead HTTP server is noticed at its next call', async () => {
    const { pool } = makePool({ mute: { command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'] } }, 500);
    const t0 = Date.now();
    await pool.ensureStarted({ restartDied: false });
    assert.ok(Date.now() - t0 < 3000);
    assert.match(pool.status()[0].reason ?? '', /no answer within 500 ms/);

    const server = await startHttpMcpServer();
    const { pool: p2, registry } = makePool({ web: { url: server.url } });
    await p2.ensureStarted({ restartDied: false });
    server.kill();
    await server.close();
    const r = await registry.call('web__echo', { text: 'x' }, ctx());
    assert.equal(!r.ok && r.error.kind, 'mcp_unavailable');
    assert.equal(p2.status()[0].state, 'failed');
  });
});

describe('resource update notices', () => {
  it("a server that keeps sending updates for an attached resource is announced once, until it is attached again", async () => {
    let hooks: import('../../src/mcp/connect').ConnectOptions | undefined;
    const subscribed: string[] = [];
    const conn = {
      tools: [],
      serverInfo: undefined,
      subscribe: async (uri: string) => (subscribed.push(uri), true),
      close: async () => undefined,
      kill: () => undefined,
    } as unknown as import('../../src/mcp/connect').McpConnection;
    const announced: string[] = [];
    const pool = new McpPool(McpConfigSchema.parse({ servers: { s: { command: 'x' } } }), {
      cwd: process.cwd(),
      log: { debug() {}, info() {}, warn() {}, error() {} },
      clientVersion: 'test',
      connect: async (_cfg, o) => ((hooks = o), conn),
      client: { resourceUpdated: (server: string, uri: string) => void announced.push(`${server} ${uri}`) } as unknown as import('../../src/mcp/connect').McpClientHooks,
    });
    await pool.ensureStarted({ restartDied: false });
    pool.watchResource('s', 'test://a');
    assert.deepEqual(subscribed, ['test://a']);
    for (let i = 0; i < 5; i++) hooks!.client!.resourceUpdated!('s', 'test://a');
    hooks!.client!.resourceUpdated!('s', 'test://b');
    assert.deepEqual(announced, ['s test://a', 's test://b'], 'once per resource');
    pool.watchResource('s', 'test://a'); // attached again: its next change is news
    hooks!.client!.resourceUpdated!('s', 'test://a');
    hooks!.client!.resourceUpdated!('s', 'test://a');
    assert.deepEqual(announced, ['s test://a', 's test://b', 's test://a']);
    pool.dispose();
  });
});
