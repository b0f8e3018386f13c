// A scripted ACP agent for the tests, built on the protocol's own SDK (the pattern of the SDK's example
// agent): each prompt's first word says what it does through the client (read, write, ask permission,
// run a terminal, hang until cancelled, crash). It answers in plain text the test can read in the chat.
import { Readable, Writable } from 'node:stream';
import { agent, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';

const seen = new Map(); // path → content last read
let cancelled = null; // resolves the hanging turn
let n = 0;
let cwd = process.cwd();
const LOAD = process.env.ACP_TEST_LOAD === '1';

const app = agent({ name: 'caboose-test-agent' })
  .onRequest('initialize', () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: LOAD },
    authMethods: [],
  }))
  .onRequest('session/new', ({ params }) => {
    cwd = params.cwd;
    return { sessionId: `test-session-${process.pid}` };
  })
  .onRequest('session/load', async ({ params, client }) => {
    cwd = params.cwd;
    // Replays nothing the client must draw: a note that the session was loaded.
    await client.notify('session/update', { sessionId: params.sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'REPLAYED' } } });
    process.stderr.write(`loaded ${params.sessionId}\n`);
    return {};
  })
  .onNotification('session/cancel', () => {
    cancelled?.();
  })
  .onRequest('session/prompt', async ({ params, client }) => {
    const sessionId = params.sessionId;
    const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const [cmd, ...rest] = text.trim().split(/\s+/);
    const say = (t) => client.notify('session/update', { sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: t } } });
    const update = (u) => client.notify('session/update', { sessionId, update: u });
    const tool = `call-${++n}`;
    const abs = (p) => (p.startsWith('/') ? p : `${cwd}/${p}`);
    try {
      switch (cmd) {
        case 'read': {
          const [p, line, limit] = rest;
          await update({ sessionUpdate: 'tool_call', toolCallId: tool, title: `Read ${p}`, kind: 'read', status: 'in_progress' });
          const r = await client.request('fs/read_text_file', { sessionId, path: abs(p), ...(line ? { line: Number(line) } : {}), ...(limit ? { limit: Number(limit) } : {}) });
          seen.set(p, r.content);
          await update({ sessionUpdate: 'tool_call_update', toolCallId: tool, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: r.content } }] });
          await say(`READ<<${r.content}>>`);
          break;
        }
        case 'edit': {
          // edit <path> <from>=><to> …: replaces in what it last read (reads first when it never did).
          const [p, ...pairs] = rest;
          if (!seen.has(p)) seen.set(p, (await client.request('fs/read_text_file', { sessionId, path: abs(p) })).content);
          let content = seen.get(p);
          for (const pair of pairs) {
            const [from, to] = pair.split('=>');
            content = content.replace(from, to);
          }
          await update({ sessionUpdate: 'tool_call', toolCallId: tool, title: `Edit ${p}`, kind: 'edit', status: 'in_progress' });
          try {
            await client.request('fs/write_text_file', { sessionId, path: abs(p), content });
            seen.set(p, content);
            await update({ sessionUpdate: 'tool_call_update', toolCallId: tool, status: 'completed' });
            await say('WROTE');
          } catch (e) {
            await update({ sessionUpdate: 'tool_call_update', toolCallId: tool, status: 'failed' });
            await say(`WRITE FAILED: ${e.message}`);
          }
          break;
        }
        case 'write': {
          // write <path> <text>: without reading first.
          const [p, ...words] = rest;
          try {
            await client.request('fs/write_text_file', { sessionId, path: abs(p), content: words.join(' ') + '\n' });
            await say('WROTE');
          } catch (e) {
            await say(`WRITE FAILED: ${e.message}`);
          }
          break;
        }
        case 'permission':
        case 'hangperm': {
          await update({ sessionUpdate: 'tool_call', toolCallId: tool, title: 'Run make test', kind: 'execute', status: 'pending', rawInput: { command: 'make test' } });
          const r = await client.request('session/request_permission', {
            sessionId,
            toolCall: { toolCallId: tool, title: 'Run make test', kind: 'execute' },
            options: [
              { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
              { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
              { optionId: 'no', name: 'Reject', kind: 'reject_once' },
            ],
          });
          const outcome = r.outcome.outcome === 'selected' ? r.outcome.optionId : r.outcome.outcome;
          await update({ sessionUpdate: 'tool_call_update', toolCallId: tool, status: outcome === 'yes' || outcome === 'always' ? 'completed' : 'failed' });
          await say(`PERMISSION ${outcome}`);
          if (outcome === 'cancelled') return { stopReason: 'cancelled' };
          break;
        }
        case 'think': {
          await update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'pondering the ' } });
          await update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'question' } });
          await update({
            sessionUpdate: 'plan',
            entries: [
              { content: 'look around', priority: 'high', status: 'completed' },
              { content: 'answer', priority: 'medium', status: 'in_progress' },
            ],
          });
          await update({ sessionUpdate: 'usage_update', used: 1234, size: 200000 });
          await say('THOUGHT');
          break;
        }
        case 'term': {
          await update({ sessionUpdate: 'tool_call', toolCallId: tool, title: `Run ${rest.join(' ')}`, kind: 'execute', status: 'in_progress' });
          const t = await client.request('terminal/create', { sessionId, command: rest[0], args: rest.slice(1) });
          await update({ sessionUpdate: 'tool_call_update', toolCallId: tool, content: [{ type: 'terminal', terminalId: t.terminalId }] });
          const exit = await client.request('terminal/wait_for_exit', { sessionId, terminalId: t.terminalId });
          const out = await client.request('terminal/output', { sessionId, terminalId: t.terminalId });
          await client.request('terminal/release', { sessionId, terminalId: t.terminalId });
          await update({ sessionUpdate: 'tool_call_update', toolCallId: tool, status: exit.exitCode === 0 ? 'completed' : 'failed' });
          await say(`TERM exit=${exit.exitCode} signal=${exit.signal ?? ''} out=${out.output.trim()}`);
          break;
        }
        case 'hang': {
          await update({ sessionUpdate: 'tool_call', toolCallId: tool, title: 'Working hard', kind: 'other', status: 'in_progress' });
          await say('HANGING');
          await new Promise((resolve) => (cancelled = resolve));
          cancelled = null;
          return { stopReason: 'cancelled' };
        }
        case 'pid': {
          await say(`PID ${process.pid}`);
          break;
        }
        case 'crash': {
          process.stderr.write('boom: the agent fell over\n');
          process.exit(3);
          break;
        }
        default:
          await say(`ECHO ${text}`);
      }
    } catch (e) {
      await say(`ERROR ${e.message}`);
    }
    return { stopReason: 'end_turn' };
  });

app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
process.stdin.on('end', () => process.exit(0));
