import { z } from 'zod';
import { ToolError, type ToolErrorInfo } from '../workspace/errors';
import type { ToolContext, ToolDefinition, ToolResult, ToolSpec } from './tool';

/** zod writes JS's safe-integer limits as bounds of every `.int()`; they only add noise for the model. */
function dropSafeIntBounds(node: unknown): void {
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  if (o.maximum === Number.MAX_SAFE_INTEGER) delete o.maximum;
  if (o.minimum === Number.MIN_SAFE_INTEGER) delete o.minimum;
  for (const v of Object.values(o)) dropSafeIntBounds(v);
}

/** Freezes `node` and everything in it (a cached schema is shared by every request that sends it). */
function deepFreeze<T>(node: T): T {
  if (node && typeof node === 'object' && !Object.isFrozen(node)) {
    Object.freeze(node);
    for (const v of Object.values(node)) deepFreeze(v);
  }
  return node;
}

/**
 * Each zod schema's JSON schema, generated once (issue 24): converting the ~20 tools' schemas took 2–10 ms
 * of every model request (a third of the host's work between a warm message and its request). A zod
 * schema is immutable, so its JSON schema never changes; keyed by the schema object itself, a tool built
 * with another schema (a new tool set, an MCP server's new tools) gets its own. The tool's name and
 * description are read at every request (bash's describes the sandbox as it is now).
 */
const jsonSchemas = new WeakMap<z.ZodType, Readonly<Record<string, unknown>>>();

function jsonSchemaOf(parameters: z.ZodType): Readonly<Record<string, unknown>> {
  let schema = jsonSchemas.get(parameters);
  if (!schema) {
    const s = z.toJSONSchema(parameters, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
    delete s.$schema;
    dropSafeIntBounds(s);
    schema = deepFreeze(s);
    jsonSchemas.set(parameters, schema);
  }
  return schema;
}

/** JSON schema for the model, generated from the tool's zod schema (once per schema: jsonSchemaOf). */
export function toolSpec(def: ToolDefinition): ToolSpec {
  if (def.jsonSchema) return { name: def.name, description: def.description, parameters: def.jsonSchema, policy: def.policy };
  return { name: def.name, description: def.description, parameters: jsonSchemaOf(def.parameters) as Record<string, unknown>, policy: def.policy };
}

export function errorResult(info: ToolErrorInfo): ToolResult<never> {
  return { ok: false, error: info };
}

/** Turns anything thrown by a handler into a structured error; never rethrows. */
export function toErrorInfo(err: unknown): ToolErrorInfo {
  if (err instanceof ToolError) return err.toInfo();
  if (err instanceof Error && err.name === 'AbortError') return { kind: 'cancelled', message: 'The tool call was cancelled.' };
  const message = err instanceof Error ? err.message : String(err);
  return { kind: 'internal_error', message };
}

export function formatZodIssues(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.map(String).join('.') || '(root)', message: i.message }));
}

/** Tools that come and go (an MCP server's): asked for its current definitions at every use. */
export type ToolSource = () => ToolDefinition[];

export class ToolRegistry {
  private readonly defs = new Map<string, ToolDefinition>();
  private readonly sources: ToolSource[] = [];

  constructor(defs: ToolDefinition[] = []) {
    for (const d of defs) this.add(d);
  }

  add(def: ToolDefinition): void {
    if (this.defs.has(def.name)) throw new Error(`duplicate tool ${def.name}`);
    this.defs.set(def.name, def);
  }

  /** Adds tools that change over time; a name the registry already has keeps its own definition. */
  addSource(source: ToolSource): void {
    this.sources.push(source);
  }

  get(name: string): ToolDefinition | undefined {
    return this.defs.get(name) ?? this.dynamic().find((d) => d.name === name);
  }

  names(): string[] {
    return this.all().map((d) => d.name);
  }

  specs(filter?: (d: ToolDefinition) => boolean): ToolSpec[] {
    return this.all()
      .filter((d) => (filter ? filter(d) : true))
      .map(toolSpec);
  }

  private dynamic(): ToolDefinition[] {
    if (this.sources.length === 0) return [];
    return this.sources.flatMap((s) => s()).filter((d) => !this.defs.has(d.name));
  }

  private all(): ToolDefinition[] {
    return [...this.defs.values(), ...this.dynamic()];
  }

  /**
   * Told about a call the agent refused before it reached `call` (unparsable arguments, blocked by the
   * mode, rejected by the user), so a registry that audits calls can record it. Never throws. The base
   * registry keeps nothing.
   */
  refused(_name: string, _args: unknown, _error: ToolErrorInfo): void {}

  /** Validate `args` (unknown, straight from the model or an RPC) and run the tool. Never throws. */
  async call(name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
    const def = this.get(name);
    if (!def) {
      // An unknown name is a bad call like any other: invalid_arguments, with the names that exist.
      const available = this.names();
      return errorResult({
        kind: 'invalid_arguments',
        message: `Unknown tool "${name}".`,
        suggestedAction: `Call one of: ${available.join(', ')}.`,
        details: { issues: [{ path: 'name', message: `unknown tool "${name}"` }], available },
      });
    }
    const parsed = def.parameters.safeParse(args ?? {});
    if (!parsed.success) {
      const issues = formatZodIssues(parsed.error);
      return errorResult({
        kind: 'invalid_arguments',
        message: `Invalid arguments for ${name}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
        suggestedAction: 'Fix the arguments to match the tool schema and call it again.',
        details: { issues },
      });
    }
    try {
      const data = await def.execute(parsed.data, ctx);
      return { ok: true, data };
    } catch (err) {
      return errorResult(toErrorInfo(err));
    }
  }
}
