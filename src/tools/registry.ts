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

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * A zod schema's JSON schema, generated once per schema object (issue 24: every model request lists the
 * tools, and generating ~20 schemas took 1.5–5 ms a request). Tools' zod schemas are built once and not
 * changed; the JSON schema is frozen, so no reader can alter what the next request sends.
 */
const jsonSchemas = new WeakMap<object, Record<string, unknown>>();

export function jsonSchemaOf(parameters: z.ZodType): Record<string, unknown> {
  let schema = jsonSchemas.get(parameters);
  if (!schema) {
    schema = z.toJSONSchema(parameters, { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
    delete schema.$schema;
    dropSafeIntBounds(schema);
    jsonSchemas.set(parameters, deepFreeze(schema));
  }
  return schema;
}

/** JSON schema for the model, generated from the tool's zod schema. */
export function toolSpec(def: ToolDefinition): ToolSpec {
  if (def.jsonSchema) return { name: def.name, description: def.description, parameters: def.jsonSchema, policy: def.policy };
  return { name: def.name, description: def.description, parameters: jsonSchemaOf(def.parameters), policy: def.policy };
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
