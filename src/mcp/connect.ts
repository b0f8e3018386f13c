/**
 * One connection to one MCP server through the official SDK: spawn (stdio) or connect (streamable HTTP),
 * initialize, list the tools, call them. The only module that loads the SDK; the pool requires it when
 * the first server starts, so a host without MCP servers never loads it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
  type CreateMessageRequestParams,
  type CreateMessageResult,
  type ElicitRequestParams,
  type ElicitResult,
  type GetPromptResult,
  type ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation/types.js';
import { isStdioServer, type McpServerConfig } from './config';
import type { McpCallResult } from './results';
import type { Sandbox } from '../workspace/sandbox/sandbox';

export interface McpToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { title?: string; readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /**
   * `execution.taskSupport` of the server's listing. 'required': the tool runs only as a task (MCP task-based
   * execution), which this client does not speak, so it is never offered (a plain call fails with -32600/-32601).
   */
  taskSupport?: 'forbidden' | 'optional' | 'required';
}

export interface McpResourceInfo {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}
export interface McpResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
}
export interface McpPromptInfo {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; description?: string; required?: boolean }[];
}

/**
 * What the client does for a server (the capabilities it declares): the workspace roots, the server's
 * questions (elicitation), its model requests (sampling), its resource updates. The host routes them to
 * the current chat.
 */
export interface McpClientHooks {
  roots(): { uri: string; name?: string }[];
  elicit(server: string, req: ElicitRequestParams, signal: AbortSignal): Promise<ElicitResult>;
  sample(server: string, req: CreateMessageRequestParams, signal: AbortSignal): Promise<CreateMessageResult>;
  resourceUpdated?(server: string, uri: string): void;
}

export type ArgsValidator = (args: unknown) => { valid: true } | { valid: false; message: string };

export interface McpConnection {
  readonly tools: McpToolInfo[];
  /** The server offers resources (the model then gets mcp_list_resources / mcp_read_resource). */
  readonly hasResources?: boolean;
  /** The server's name and version from its initialize answer. */
  readonly serverInfo: { name: string; version: string } | undefined;
  callTool(tool: string, args: Record<string, unknown>, o: { signal: AbortSignal; timeoutMs: number; onProgress?: (p: { progress: number; total?: number; message?: string }) => void }): Promise<McpCallResult>;
  /** Resources, templates and prompts (empty when the server does not offer them). */
  listResources(timeoutMs: number): Promise<{ resources: McpResourceInfo[]; templates: McpResourceTemplateInfo[] }>;
  readResource(uri: string, o: { signal: AbortSignal; timeoutMs: number }): Promise<ReadResourceResult>;
  /** Tells the server the roots changed (it asks for them again). */
  rootsChanged(): Promise<void>;
  /** Subscribes to a resource's updates (false: the server does not offer subscriptions). */
  subscribe(uri: string, timeoutMs: number): Promise<boolean>;
  listPrompts(timeoutMs: number): Promise<McpPromptInfo[]>;
  getPrompt(name: string, args: Record<string, string>, o: { signal: AbortSignal; timeoutMs: number }): Promise<GetPromptResult>;
  /** A validator for a tool's input schema (the SDK's JSON-schema validator, Ajv). */
  validator(schema: Record<string, unknown>): ArgsValidator;
  /** Why a call failed: the server answered with an error, or the connection is gone. */
  classify(err: unknown, signal: AbortSignal): CallFailure;
  close(): Promise<void>;
  /** Ends a stdio server's process at once (the host is exiting and cannot wait). */
  kill(): void;
}

export interface ConnectOptions {
  /** Where a stdio server runs when its config names no `cwd`. */
  cwd: string;
  timeoutMs: number;
  clientVersion: string;
  /** A line the server wrote to stderr (stdio). */
  onStderr(line: string): void;
  /** The connection ended without close() (the process exited, the transport failed). */
  onClosed(): void;
  onError(err: Error): void;
  /** The server's tool list changed (it said so); the new list. */
  onToolsChanged(tools: McpToolInfo[]): void;
  /** The server's name in the config (passed to `client` hooks). */
  server?: string;
  /** Roots, elicitation, sampling: declared as client capabilities only when given. */
  client?: McpClientHooks;
  /** The workspace's sandbox, for stdio servers with `sandbox = true`. */
  sandbox?: Sandbox | null;
}

/** Why a call failed, as the pool acts on it. */
export type CallFailure =
  | { kind: 'cancelled'; message: string }
  | { kind: 'timeout'; message: string }
  /** The server answered with an error: it is still up. */
  | { kind: 'server_error'; message: string }
  /** The connection is gone (process exited, HTTP unreachable, session lost). */
  | { kind: 'connection'; message: string };

const MAX_TOOL_PAGES = 20;

export async function connectMcpServer(cfg: McpServerConfig, o: ConnectOptions): Promise<McpConnection> {
  const transport = createTransport(await sandboxed(cfg, o), o);
  const client = new Client(
    { name: 'caboose.nvim', version: o.clientVersion },
    {
      capabilities: o.client ? { roots: { listChanged: true }, sampling: {}, elicitation: { form: {}, url: {} } } : {},
      listChanged: {
        tools: {
          onChanged: (err, tools) => {
            if (err) o.onError(err);
            else if (tools) o.onToolsChanged(tools.map(toToolInfo));
          },
        },
      },
    },
  );
  const hooks = o.client;
  const server = o.server ?? 'server';
  if (hooks) {
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: hooks.roots() }));
    client.setRequestHandler(ElicitRequestSchema, (req, extra) => hooks.elicit(server, req.params, extra.signal));
    client.setRequestHandler(CreateMessageRequestSchema, (req, extra) => hooks.sample(server, req.params, extra.signal));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => hooks.resourceUpdated?.(server, n.params.uri));
  }
  let closing = false;
  client.onclose = () => {
    if (!closing) o.onClosed();
  };
  client.onerror = (err) => o.onError(err);
  const close = async () => {
    closing = true;
    await client.close().catch(() => undefined);
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${formatMs(o.timeoutMs)}`)), o.timeoutMs);
  });
  const starting = (async () => {
    await client.connect(transport, { timeout: o.timeoutMs });
    return listAllTools(client, o.timeoutMs);
  })();
  starting.catch(() => undefined); // settles after a timeout too
  try {
    const tools = await Promise.race([starting, timeout]);
    const ajv = new AjvJsonSchemaValidator();
    const info = client.getServerVersion();
    return {
      tools,
      hasResources: client.getServerCapabilities()?.resources !== undefined,
      serverInfo: info ? { name: info.name, version: info.version } : undefined,
      callTool: async (tool, args, c) => {
        const r = await client.callTool({ name: tool, arguments: args }, undefined, {
          signal: c.signal,
          timeout: c.timeoutMs,
          ...(c.onProgress ? { onprogress: c.onProgress, resetTimeoutOnProgress: true } : {}),
        });
        return { content: Array.isArray(r.content) ? (r.content as unknown[]) : [], structuredContent: r.structuredContent, isError: r.isError === true };
      },
      listResources: async (timeoutMs) => {
        if (!client.getServerCapabilities()?.resources) return { resources: [], templates: [] };
        const resources: McpResourceInfo[] = [];
        const templates: McpResourceTemplateInfo[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_TOOL_PAGES; page++) {
          const r = await client.listResources(cursor ? { cursor } : {}, { timeout: timeoutMs });
          resources.push(...r.resources.map((x) => ({ uri: x.uri, name: x.name, ...(x.title ? { title: x.title } : {}), ...(x.description ? { description: x.description } : {}), ...(x.mimeType ? { mimeType: x.mimeType } : {}) })));
          cursor = r.nextCursor;
          if (!cursor) break;
        }
        const t = await client.listResourceTemplates({}, { timeout: timeoutMs }).catch(() => ({ resourceTemplates: [] }));
        templates.push(...t.resourceTemplates.map((x) => ({ uriTemplate: x.uriTemplate, name: x.name, ...(x.title ? { title: x.title } : {}), ...(x.description ? { description: x.description } : {}), ...(x.mimeType ? { mimeType: x.mimeType } : {}) })));
        return { resources, templates };
      },
      rootsChanged: () => (hooks ? client.sendRootsListChanged() : Promise.resolve()),
      readResource: (uri, c) => client.readResource({ uri }, { signal: c.signal, timeout: c.timeoutMs }),
      subscribe: async (uri, timeoutMs) => {
        if (!client.getServerCapabilities()?.resources?.subscribe) return false;
        await client.subscribeResource({ uri }, { timeout: timeoutMs });
        return true;
      },
      listPrompts: async (timeoutMs) => {
        if (!client.getServerCapabilities()?.prompts) return [];
        const r = await client.listPrompts({}, { timeout: timeoutMs });
        return r.prompts.map((x) => ({ name: x.name, ...(x.title ? { title: x.title } : {}), ...(x.description ? { description: x.description } : {}), ...(x.arguments ? { arguments: x.arguments } : {}) }));
      },
      getPrompt: (name, args, c) => client.getPrompt({ name, arguments: args }, { signal: c.signal, timeout: c.timeoutMs }),
      validator: (schema) => {
        const check = ajv.getValidator(schema as JsonSchemaType);
        return (args) => {
          const r = check(args);
          return r.valid ? { valid: true } : { valid: false, message: r.errorMessage };
        };
      },
      classify: classifyCallError,
      close,
      kill: () => killStdio(transport),
    };
  } catch (err) {
    // Not waited for: a stdio server that ignores its closed stdin would hold the start for seconds.
    killStdio(transport);
    void close();
    throw new Error(startFailure(err, cfg));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A stdio server with `sandbox = true` runs inside the workspace's sandbox (bwrap or sandbox-exec wrapping
 * its command). Without a sandbox here it does not start: it asked for one.
 */
async function sandboxed(cfg: McpServerConfig, o: ConnectOptions): Promise<McpServerConfig> {
  if (!isStdioServer(cfg) || !cfg.sandbox) return cfg;
  const sb = o.sandbox;
  // The trial runs as a child process (never the synchronous one that would block the host).
  await sb?.ready();
  if (!sb?.active) {
    const why = !sb ? 'no sandbox' : sb.mode === 'off' ? 'sandbox.mode is "off"' : sb.support.available ? 'no sandbox' : sb.support.reason;
    throw new Error(`the server asks for the sandbox (sandbox = true) but none can run: ${why}. See :checkhealth caboose.`);
  }
  const cwd = cfg.cwd ?? o.cwd;
  const w = await sb.wrap(cfg.command, cfg.args ?? [], cwd, cfg.env ?? {});
  return { ...cfg, command: w.command, args: w.args, env: w.env, cwd };
}

function createTransport(cfg: McpServerConfig, o: ConnectOptions): Transport {
  if (isStdioServer(cfg)) {
    const t = new StdioClientTransport({ command: cfg.command, args: cfg.args ?? [], env: cfg.env ?? {}, cwd: cfg.cwd ?? o.cwd, stderr: 'pipe' });
    // Never inherited: the host's stdout is the RPC channel and its stderr is Neovim's. Lines go to the log.
    let pending = '';
    t.stderr?.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const l of lines) if (l.trim() !== '') o.onStderr(l.replace(/\r$/, ''));
      if (pending.length > 8192) {
        o.onStderr(pending);
        pending = '';
      }
    });
    return t;
  }
  return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: { ...(cfg.headers ?? {}) } } });
}

async function listAllTools(client: Client, timeoutMs: number): Promise<McpToolInfo[]> {
  if (!client.getServerCapabilities()?.tools) return [];
  const out: McpToolInfo[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOL_PAGES; page++) {
    const r = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
    out.push(...r.tools.map(toToolInfo));
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return out;
}

function toToolInfo(t: {
  name: string;
  title?: string;
  description?: string;
  inputSchema: object;
  annotations?: McpToolInfo['annotations'];
  execution?: { taskSupport?: 'forbidden' | 'optional' | 'required' };
}): McpToolInfo {
  return {
    ...(t.execution?.taskSupport ? { taskSupport: t.execution.taskSupport } : {}),
    name: t.name,
    ...(t.title ? { title: t.title } : {}),
    ...(t.description ? { description: t.description } : {}),
    inputSchema: t.inputSchema as Record<string, unknown>,
    ...(t.annotations ? { annotations: t.annotations } : {}),
  };
}

function killStdio(t: Transport): void {
  const pid = t instanceof StdioClientTransport ? t.pid : null;
  if (pid === null) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone
  }
}

/** A start failure in words a user can act on. */
function startFailure(err: unknown, cfg: McpServerConfig): string {
  const e = err as NodeJS.ErrnoException;
  if (isStdioServer(cfg) && e?.code === 'ENOENT') return `command not found: ${cfg.command}`;
  if (isStdioServer(cfg) && e?.code === 'EACCES') return `command not executable: ${cfg.command}`;
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return isStdioServer(cfg) ? 'the process exited during start-up' : 'the connection closed during start-up';
  return errorText(err);
}

/** Sorts a failed call: did the server answer, or is the connection gone? */
export function classifyCallError(err: unknown, signal: AbortSignal): CallFailure {
  if (signal.aborted) return { kind: 'cancelled', message: 'The tool call was cancelled.' };
  if (err instanceof McpError) {
    if (err.code === ErrorCode.RequestTimeout) return { kind: 'timeout', message: errorText(err) };
    if (err.code === ErrorCode.ConnectionClosed) return { kind: 'connection', message: 'the connection closed' };
    return { kind: 'server_error', message: errorText(err) };
  }
  if (err instanceof StreamableHTTPError) {
    // 404: the server forgot the session (it restarted); 5xx: it is failing. Both need a new connection.
    if (err.code === 404 || (err.code !== undefined && err.code >= 500)) return { kind: 'connection', message: errorText(err) };
    return { kind: 'server_error', message: errorText(err) };
  }
  return { kind: 'connection', message: errorText(err) };
}

/** The message, with a network error's cause (`fetch failed: connect ECONNREFUSED …`). */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.message}${cause}`;
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}
