/**
 * Generates first-tools.ts's data from the tools a session registers (the file tools, bash, fetch,
 * web_search, the task list, ask_user, recall, explore, agent), as the agent lists them to the model.
 * Run at build time (scripts/bundle-host.mjs) and by test/unit/first-tools.test.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isOffered } from '../tools/offered';
import { openWorkspace } from '../tools/open';
import { TodoList } from '../tools/todo-list';
import { Sandbox } from '../workspace/sandbox/sandbox';
import type { ModelTool } from '../agent/provider';
import type { FirstTools } from './first-tools';
import { addSessionTools } from './session-parts/tool-set';
import type { HostConfig } from './protocol';

/** The tools (name, description, JSON schema) a new chat with this web_search setting and sandbox answer lists. */
export function sessionToolList(o: { webSearch: boolean; sandboxed: boolean }): ModelTool[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-tools-'));
  try {
    const root = path.join(dir, 'ws');
    fs.mkdirSync(root);
    const ws = openWorkspace({ root, dataDir: path.join(dir, 'data'), sessionId: 'first-tools' });
    try {
      const config: HostConfig = o.webSearch ? { web_search: { searxng_url: 'http://127.0.0.1:1' } } : {};
      const sandbox = new Sandbox({
        root,
        config: o.sandboxed ? {} : { mode: 'off' },
        ...(o.sandboxed ? { support: { available: true, kind: 'bwrap', path: '/usr/bin/bwrap' } as const } : {}),
      });
      const none = async () => ({ decision: 'reject' as const });
      addSessionTools(ws.registry, {
        config,
        sandbox,
        todos: new TodoList(),
        secrets: [],
        recall: { get: () => null, archivedBy: () => [] },
        subagent: { provider: { baseURL: 'http://127.0.0.1:1', apiKey: '', model: 'm' }, registry: ws.registry },
        agent: { mode: () => 'create', requestApproval: none },
      });
      // As the agent loop lists them (loop.ts streamStep).
      return ws.registry.specs(isOffered).map(({ name, description, parameters }) => ({ name, description, parameters }));
    } finally {
      ws.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function generateFirstTools(): FirstTools {
  const tools = sessionToolList({ webSearch: true, sandboxed: false });
  const bash = sessionToolList({ webSearch: false, sandboxed: true }).find((t) => t.name === 'bash');
  if (!bash) throw new Error('first-tools: no bash tool');
  return { tools, sandboxedBash: bash.description };
}
