import { createAskUserTool } from './ask_user';
import { createBashTool } from './bash';
import { createFetchTool } from './fetch';
import type { ToolDefinition } from './tool';
import type { TodoList } from './todo-list';
import type { Sandbox } from '../workspace/sandbox/sandbox';
import { createTodoReadTool } from './todo_read';
import { createTodoWriteTool } from './todo_write';
import { createWebSearchTool, searxngBackend } from './web_search';

export interface ExecToolsOptions {
  /** The session's task list (one per agent session). */
  todos: TodoList;
  /** The web_search backend; when absent or null, web_search is not offered to the model at all. */
  webSearch?: { searxngUrl: string } | null;
  /** Default bash timeout (default 120 s). */
  bashTimeoutMs?: number;
  /** Secrets (the model API key): environment variables holding one are not passed to bash commands. */
  hideEnvValues?: string[];
  /** The workspace's sandbox for bash; absent or null: commands run unsandboxed. */
  sandbox?: Sandbox | null;
  /** Default fetch download cap (default 1 MB). */
  fetchMaxBytes?: number;
  /** Hosts fetch may reach although they are loopback, link-local or private (fetch_allow_hosts). */
  fetchAllowHosts?: string[];
}

/** The non-file tools: bash, fetch, web_search (when configured), todo_write, todo_read, ask_user. */
export function createExecTools(opts: ExecToolsOptions): ToolDefinition[] {
  const tools: ToolDefinition[] = [
    createBashTool({ defaultTimeoutMs: opts.bashTimeoutMs, hideEnvValues: opts.hideEnvValues, sandbox: opts.sandbox ?? null }),
    createFetchTool({ defaultMaxBytes: opts.fetchMaxBytes, allowHosts: opts.fetchAllowHosts }),
  ];
  if (opts.webSearch?.searxngUrl) {
    tools.push(createWebSearchTool({ backend: searxngBackend({ url: opts.webSearch.searxngUrl }) }));
  }
  tools.push(createTodoWriteTool(opts.todos), createTodoReadTool(opts.todos), createAskUserTool());
  return tools;
}
