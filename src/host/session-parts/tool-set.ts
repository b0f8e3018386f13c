/**
 * The tools of one chat, added to the file tools' registry (which audits refused write attempts): bash,
 * fetch, web_search, the task list and ask_user; recall of archived messages; the explore and agent
 * subagents. MCP servers' tools join through mcp-attachment.ts.
 */
import { createAgentTool, createExploreTool, type AgentToolOptions, type ExploreToolOptions } from '../../agent/subagent';
import { createExecTools } from '../../tools/exec-tools';
import { createRecallTool, type RecallSource } from '../../tools/recall';
import type { FileToolRegistry } from '../../tools/open';
import type { TodoList } from '../../tools/todo-list';
import type { Sandbox } from '../../workspace/sandbox/sandbox';
import type { HostConfig } from '../protocol';

export interface ToolSetOptions {
  config: HostConfig;
  sandbox: Sandbox;
  todos: TodoList;
  /** Every provider's key (this list grows when :CabooseModel resolves another one). */
  secrets: string[];
  recall: RecallSource;
  /** What explore and agent children share with the chat. */
  subagent: ExploreToolOptions;
  /** What only agent children get: the chat's mode, approvals and grants. */
  agent: Omit<AgentToolOptions, keyof ExploreToolOptions>;
}

export function addSessionTools(registry: FileToolRegistry, o: ToolSetOptions): void {
  const { config } = o;
  for (const def of createExecTools({
    sandbox: o.sandbox,
    todos: o.todos,
    webSearch: config.web_search ? { searxngUrl: config.web_search.searxng_url } : null,
    bashTimeoutMs: config.bash_timeout_ms,
    fetchAllowHosts: config.fetch_allow_hosts,
    hideEnvValues: o.secrets,
  })) {
    registry.add(def);
  }
  registry.add(createRecallTool(o.recall));
  registry.add(createExploreTool(o.subagent));
  registry.add(createAgentTool({ ...o.subagent, ...o.agent }));
}
