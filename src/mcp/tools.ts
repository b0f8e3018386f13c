/**
 * The running MCP servers' tools as tool definitions: named `<server>__<tool>`, described with the server's
 * name, the server's input schema sent as it is and checked (Ajv, from the SDK) before any approval, policy
 * `exec` (asks in create and auto-edit mode) unless the configuration allows them, results capped like
 * every tool's. Rebuilt whenever the pool changes.
 */
import { z } from 'zod';
import { ToolError } from '../tools/errors';
import type { ToolDefinition } from '../tools/tool';
import type { McpPool } from './client-pool';
import type { ArgsValidator, McpToolInfo } from './connect';
import { uncallableReason } from './callable';
import { describeTarget, type McpServerConfig } from './config';
import { mcpToolNames } from './names';
import { cappedResultText, toToolOutput } from './results';

/** Longest tool description sent to the model (some servers ship whole manuals). */
export const MAX_DESCRIPTION_CHARS = 2000;
/** Longest argument text kept in an audit row. */
export const AUDIT_MAX_ARGUMENT_CHARS = 4096;

/** Does the configuration let this tool run without asking? `tool` is the server's name for it. */
export function isAllowed(allow: McpServerConfig['allow'], tool: string, modelName: string): boolean {
  return allow === true || (Array.isArray(allow) && (allow.includes(tool) || allow.includes(modelName)));
}

/** The server's input schema as the model gets it: an object schema, without `$schema`. */
export function modelSchema(input: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _drop, ...rest } = input;
  return { ...rest, type: 'object', properties: rest.properties && typeof rest.properties === 'object' ? rest.properties : {} };
}

/** The server's description, prefixed with its name so the model knows where the tool comes from. */
export function modelDescription(server: string, t: McpToolInfo): string {
  const text = (t.description ?? t.title ?? t.annotations?.title ?? '').trim();
  const body = text.length > MAX_DESCRIPTION_CHARS ? `${text.slice(0, MAX_DESCRIPTION_CHARS - 1)}…` : text;
  return `[MCP server "${server}"] ${body || `The ${t.name} tool.`}`;
}

/** Arguments checked against the server's JSON schema; issues read like zod's (invalid_arguments). */
function argumentsSchema(validate: ArgsValidator | null) {
  return z.record(z.string(), z.unknown()).superRefine((args, ctx) => {
    if (!validate) return;
    const r = validate(args);
    if (!r.valid) ctx.addIssue({ code: 'custom', message: r.message });
  });
}

function safeValidator(make: () => ArgsValidator, onError: (err: unknown) => void): ArgsValidator | null {
  try {
    return make();
  } catch (err) {
    onError(err); // a schema Ajv cannot compile: the server checks the arguments itself
    return null;
  }
}

function clipJson(v: unknown, max: number): string {
  const s = JSON.stringify(v) ?? '';
  return s.length > max ? `${s.slice(0, max)}… [cut at ${max} characters]` : s;
}

export interface McpToolSourceOptions {
  log?: (level: 'warn' | 'info', msg: string) => void;
  /** A server's progress notification for a running call (its tool line shows it). */
  progress?: (toolCallId: string, text: string) => void;
}

/** A progress notification in a few words: "3/5 · Step 3 of 5". */
export function progressText(p: { progress: number; total?: number; message?: string }): string {
  const count = p.total ? `${p.progress}/${p.total}` : String(p.progress);
  return p.message ? `${count} · ${p.message}` : count;
}

/** The current definitions of every running server's tools (cached until the pool changes). */
export class McpToolSource {
  private cache: { version: number; defs: ToolDefinition[] } | null = null;

  constructor(
    private readonly pool: McpPool,
    private readonly o: McpToolSourceOptions = {},
  ) {}

  definitions(): ToolDefinition[] {
    if (this.cache?.version === this.pool.version) return this.cache.defs;
    const defs: ToolDefinition[] = [];
    for (const s of this.pool.running()) {
      const names = mcpToolNames(
        s.server,
        s.tools.map((t) => t.name),
      );
      s.tools.forEach((t, i) => {
        // A tool this client cannot call (task-based execution required) is known but never offered.
        const why = uncallableReason(t);
        defs.push(why ? this.uncallable(s.server, s.config, t, names[i], why) : this.definition(s.server, s.config, t, names[i], s.conn.validator.bind(s.conn)));
      });
    }
    // A stopped server's tools stay known (not offered): a late call says why it fails instead of "unknown tool".
    for (const s of this.pool.stopped()) {
      const names = mcpToolNames(
        s.server,
        s.tools.map((t) => t.name),
      );
      s.tools.forEach((t, i) => defs.push({ ...this.definition(s.server, s.config, t, names[i], null), unavailable: true }));
    }
    if (this.pool.running().some((s) => s.conn.hasResources)) defs.push(...resourceTools(this.pool));
    this.cache = { version: this.pool.version, defs };
    return defs;
  }

  /** Not offered; a model that calls it by name anyway gets a structured error, never a prompt or a -32600. */
  private uncallable(server: string, config: McpServerConfig, t: McpToolInfo, name: string, why: string): ToolDefinition {
    const fail = (): never => {
      throw new ToolError('mcp_unavailable', `The ${t.name} tool of MCP server '${server}' ${why}.`, {
        details: { server, tool: t.name },
        suggestedAction: 'It cannot be called from here: continue without it or tell the user.',
      });
    };
    return {
      ...this.definition(server, config, t, name, null),
      unavailable: true,
      async preview() {
        return fail();
      },
      async execute() {
        return fail();
      },
    };
  }

  private definition(server: string, config: McpServerConfig, t: McpToolInfo, name: string, makeValidator: ((schema: Record<string, unknown>) => ArgsValidator) | null): ToolDefinition {
    const schema = modelSchema(t.inputSchema);
    const validate = makeValidator
      ? safeValidator(
          () => makeValidator(t.inputSchema),
          (err) => this.o.log?.('warn', `mcp ${server}: the input schema of ${t.name} does not compile (${err instanceof Error ? err.message : String(err)}); arguments go unchecked`),
        )
      : null;
    const allowed = isAllowed(config.allow, t.name, name);
    const pool = this.pool;
    const progress = this.o.progress;
    return {
      name,
      description: modelDescription(server, t),
      parameters: argumentsSchema(validate),
      jsonSchema: schema,
      policy: 'exec',
      ...(allowed ? { allowed: { readOnly: t.annotations?.readOnlyHint === true } } : {}),
      mcp: { server, tool: t.name },
      auditDetails: (args) => ({ server, tool: t.name, arguments: clipJson(args, AUDIT_MAX_ARGUMENT_CHARS) }),
      async preview(args) {
        // Nobody is asked about a call that cannot run.
        if (!pool.isRunning(server)) throw new ToolError('mcp_unavailable', pool.unavailableMessage(server), { details: { server, tool: t.name } });
        const json = JSON.stringify(args, null, 2);
        const lines = json.split('\n');
        const shown = lines.length > 60 ? [...lines.slice(0, 59), `… ${lines.length - 59} more lines`] : lines;
        const about = (t.description ?? '').split('\n')[0].trim();
        return {
          kind: 'text',
          text: [`MCP server: ${server} (${describeTarget(config)})`, `tool: ${t.name}${about ? ` — ${about}` : ''}`, '', 'arguments:', ...shown].join('\n'),
          showsArguments: true,
        };
      },
      async execute(args, ctx) {
        const id = ctx.toolCallId;
        const outcome = await pool.callTool(server, t.name, args as Record<string, unknown>, ctx.signal, progress && id ? (p) => progress(id, progressText(p)) : undefined);
        if (!outcome.ok) {
          const f = outcome.failure;
          const details = { server, tool: t.name };
          switch (f.kind) {
            case 'cancelled':
              throw new ToolError('cancelled', f.message, { details });
            case 'timeout':
              throw new ToolError('timeout', `MCP server '${server}' did not answer the ${t.name} call in time: ${f.message}`, { details });
            case 'server_error':
              throw new ToolError('mcp_error', `MCP server '${server}' refused the ${t.name} call: ${f.message}`, { details, suggestedAction: 'Check the arguments against the tool schema; do not repeat the same call.' });
            case 'connection':
            case 'unavailable':
              throw new ToolError('mcp_unavailable', f.kind === 'connection' ? `MCP server '${server}' stopped during the ${t.name} call: ${f.message}` : f.message, {
                details,
                suggestedAction: 'Its tools are unavailable for now: continue without them or tell the user.',
              });
          }
        }
        if (outcome.result.isError) {
          const { text } = cappedResultText(outcome.result);
          throw new ToolError('mcp_error', text.trim() === '' ? `The ${t.name} tool of MCP server '${server}' reported an error.` : text, { details: { server, tool: t.name, isError: true } });
        }
        return toToolOutput(server, t.name, outcome.result);
      },
    };
  }
}

/** Longest resource text returned to the model (the output cap of every tool applies too). */
const readResourceParameters = z.object({
  server: z.string().min(1).describe('The MCP server (as in mcp_list_resources).'),
  uri: z.string().min(1).describe('The resource URI (a listed one, or a template filled in).'),
});

/**
 * The servers' resources for the model: `mcp_list_resources` (resources and URI templates of every running
 * server) and `mcp_read_resource` (one resource's contents; binary ones as placeholders). Read-only.
 */
export function resourceTools(pool: McpPool): ToolDefinition[] {
  const list: ToolDefinition<ReturnType<typeof z.object>, unknown> = {
    name: 'mcp_list_resources',
    description: 'List the resources (and URI templates) the MCP servers offer: server, uri, name, description, mimeType. Read one with mcp_read_resource.',
    parameters: z.object({}),
    policy: 'read',
    async execute() {
      const all = await pool.resources();
      return { servers: all };
    },
  };
  const read: ToolDefinition<typeof readResourceParameters, unknown> = {
    name: 'mcp_read_resource',
    description: 'Read a resource of an MCP server by its URI (see mcp_list_resources). Returns its text (binary content as a placeholder).',
    parameters: readResourceParameters,
    policy: 'read',
    async execute(args, ctx) {
      let c;
      try {
        c = pool.connection(args.server);
      } catch (err) {
        throw new ToolError('mcp_unavailable', err instanceof Error ? err.message : String(err), { details: { server: args.server } });
      }
      try {
        const r = await c.conn.readResource(args.uri, { signal: ctx.signal, timeoutMs: c.timeoutMs });
        const { text, truncated } = cappedResultText({ content: r.contents.map((x) => ({ type: 'resource', resource: x })) });
        return { server: args.server, uri: args.uri, content: text, ...(truncated ? { truncated } : {}) };
      } catch (err) {
        throw new ToolError('mcp_error', `MCP server '${args.server}' could not read ${args.uri}: ${err instanceof Error ? err.message : String(err)}`, { details: { server: args.server } });
      }
    },
  };
  return [list as ToolDefinition, read as ToolDefinition];
}
