import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { kindPolicy, mergeToolCall, newToolCall, planTodos, shellQuote, toolDetails, toolStatus } from '../../src/acp/render';
import { parsePromptArgs } from '../../src/host/mcp-message';
import { acpModelTag, parseAcpModelTag } from '../../src/host/acp-runtime';
import { progressText } from '../../src/mcp/tools';

describe('ACP rendering (pure)', () => {
  it('a tool call merges its updates; finished calls get a status and their details', () => {
    const c = newToolCall({ toolCallId: 't1', title: 'Read a.ts', kind: 'read', status: 'pending' });
    const u = mergeToolCall(c, { toolCallId: 't1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'line 1\nline 2' } }] });
    assert.equal(u.title, 'Read a.ts', 'fields an update leaves out keep their value');
    assert.equal(toolStatus(u, false), 'ok');
    assert.deepEqual(toolDetails(u, () => undefined), ['line 1', 'line 2']);
    const failed = mergeToolCall(u, { toolCallId: 't1', status: 'failed' });
    assert.equal(toolStatus(failed, false), 'error');
    assert.equal(toolStatus(failed, true), 'cancelled');
    const term = mergeToolCall(undefined, { toolCallId: 't2', status: 'completed', content: [{ type: 'terminal', terminalId: 'x' }] });
    assert.deepEqual(toolDetails(term, (id) => (id === 'x' ? 'out\n' : undefined)), ['out']);
    const long = mergeToolCall(undefined, { toolCallId: 't3', content: [{ type: 'content', content: { type: 'text', text: Array.from({ length: 100 }, (_, i) => `l${i}`).join('\n') } }] });
    assert.equal(toolDetails(long, () => undefined).length, 41, 'details are capped');
  });

  it('kinds map to our policies; plans to todos', () => {
    assert.equal(kindPolicy('read'), 'read');
    assert.equal(kindPolicy('search'), 'read');
    assert.equal(kindPolicy('edit'), 'edit');
    assert.equal(kindPolicy('delete'), 'edit');
    assert.equal(kindPolicy('execute'), 'exec');
    assert.equal(kindPolicy('fetch'), 'exec');
    assert.equal(kindPolicy(undefined), 'exec');
    assert.deepEqual(planTodos({ entries: [{ content: 'a', priority: 'high', status: 'completed' }] }), [{ id: '1', content: 'a', status: 'completed' }]);
  });

  it('shellQuote survives hostile arguments (a real shell gets each back unchanged)', () => {
    const hostile = ["it's", '$(touch pwned)', '`id`', 'a b', '"q"', '; rm -rf /', '', 'plain-arg_1.txt'];
    const out = execFileSync('sh', ['-c', `printf '%s\\n' ${hostile.map(shellQuote).join(' ')}`], { encoding: 'utf8' });
    assert.deepEqual(out.split('\n').slice(0, -1), hostile);
  });

  it('the session store tag of an ACP chat round-trips', () => {
    assert.deepEqual(parseAcpModelTag(acpModelTag('claude', 'abc-1')), { agent: 'claude', acpSessionId: 'abc-1' });
    assert.deepEqual(parseAcpModelTag(acpModelTag('codex', null)), { agent: 'codex', acpSessionId: null });
    assert.equal(parseAcpModelTag('gpt-4o'), null);
    assert.equal(parseAcpModelTag(null), null);
  });
});

describe('MCP message parts (pure)', () => {
  it('prompt arguments: key=value, quoted values, the rest', () => {
    assert.deepEqual(parsePromptArgs('city=Paris state="Île de France" and more'), { args: { city: 'Paris', state: 'Île de France' }, rest: 'and more' });
    assert.deepEqual(parsePromptArgs(''), { args: {}, rest: '' });
  });
  it('progress text', () => {
    assert.equal(progressText({ progress: 2, total: 5, message: 'step 2' }), '2/5 · step 2');
    assert.equal(progressText({ progress: 7 }), '7');
  });
});
