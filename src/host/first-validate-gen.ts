/**
 * Generates the first-request bundle's validators (issue 24) from the zod schemas the host validates with
 * (protocol-config.ts: one source of truth): zod → JSON Schema (`z.toJSONSchema`, the input side) → Ajv's
 * standalone code, so the first-request bundle answers host.init and checks the first send without loading
 * zod (≈ 11 ms of a cold start). Run at build time (scripts/bundle-host.mjs writes
 * dist/host/first-validators.js) and by test/unit/first-validate.test.ts (the build is current, and the
 * validators refuse what zod refuses).
 *
 * Only what JSON Schema states exactly is translated; the generation fails (the build stops) on anything
 * else: a transform or preprocess, a string format other than a pattern, or a refinement not listed in
 * REFINEMENTS (each of those is one named function, which the generated code calls: the same function zod
 * calls). The validators also never see anything but plain data: first-main.ts sends params holding any
 * other object (a Buffer, an editor handle) to the host, which validates with zod.
 */
import Ajv from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import { _ } from 'ajv/dist/compile/codegen';
import { z } from 'zod';
import { hostConfigFieldsAfterMcp, hostConfigFieldsBeforeMcp, initParamsFields, NoMcpServersSchema, SendParams } from './protocol-config';
import { FIRST_FORMATS } from './first-formats';

/**
 * host.init's params as protocol.ts validates them, except that `mcp` may name no server: the MCP servers'
 * schemas are not translated (a config with servers is validated, and answered, by the host itself).
 */
export function firstInitParams() {
  return z.object(
    initParamsFields(z.object({ ...hostConfigFieldsBeforeMcp, mcp: NoMcpServersSchema.optional().nullable(), ...hostConfigFieldsAfterMcp }).partial().default({})),
  );
}
/** host.init's params as the first-request bundle reads them (the validated params themselves: zod's output but for the keys zod strips). */
export type FirstInitData = z.output<ReturnType<typeof firstInitParams>>;
export type FirstSendData = z.output<typeof SendParams>;
/** `mcp` alone (to tell a config naming MCP servers from an invalid one). */
export const firstMcpParams = () => NoMcpServersSchema.optional().nullable();

/** The check kinds JSON Schema states exactly as zod checks them (with Ajv's options below). */
const EXACT_CHECKS = new Set(['min_length', 'max_length', 'length_equals', 'greater_than', 'less_than', 'number_format']);
/** Types without a JSON Schema equivalent. */
const REFUSED_TYPES = new Set(['pipe', 'transform', 'custom', 'promise', 'lazy', 'function', 'date', 'bigint', 'symbol', 'map', 'set', 'file', 'nan', 'undefined', 'void', 'success', 'catch', 'prefault', 'readonly', 'template_literal', 'intersection', 'tuple']);

interface CheckDef {
  check: string;
  format?: string;
  fn?: unknown;
}

/** One schema's JSON Schema, failing on what JSON Schema would state loosely. */
export function firstJsonSchema(schema: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-7',
    unrepresentable: 'throw',
    override: (ctx) => {
      const def = (ctx.zodSchema as unknown as { _zod: { def: { type: string; checks?: { _zod: { def: CheckDef } }[] } } })._zod.def;
      if (REFUSED_TYPES.has(def.type)) throw new Error(`first-validate-gen: a ${def.type} has no exact JSON Schema`);
      for (const c of def.checks ?? []) {
        const d = c._zod.def;
        if (EXACT_CHECKS.has(d.check)) continue;
        if (d.check === 'string_format' && d.format === 'regex') continue;
        if (d.check === 'custom') {
          const name = Object.entries(FIRST_FORMATS).find(([, fn]) => fn === d.fn)?.[0];
          if (!name) throw new Error('first-validate-gen: a refinement not listed in first-formats.ts');
          if (ctx.jsonSchema.format !== undefined) throw new Error('first-validate-gen: a refinement on a string with a format');
          ctx.jsonSchema.format = name;
          continue;
        }
        throw new Error(`first-validate-gen: the check ${d.check}${d.format ? ` (${d.format})` : ''} has no exact JSON Schema`);
      }
    },
  }) as Record<string, unknown>;
}

/**
 * Ajv's strict mode, except for two messages: `unicode: false` is deprecated but honoured (limitLength.js:
 * zod counts UTF-16 code units), and the send's context items' `path` default sits under anyOf, where Ajv
 * does not apply it (the first-request path reads only whether context came: any takes the usual path,
 * which parses it with zod). Anything else Ajv would ignore (an unknown keyword…) stops the generation.
 */
const strictLogger = {
  log: () => undefined,
  warn: (...a: unknown[]) => {
    const msg = a.map(String).join(' ');
    if (/^(strict mode: default is ignored for: data\d*\.path|.*option unicode\b)/.test(msg)) return;
    throw new Error(`first-validate-gen: ${msg}`);
  },
  error: (...a: unknown[]) => {
    throw new Error(`first-validate-gen: ${a.map(String).join(' ')}`);
  },
};

/** The validators' CommonJS module (Ajv standalone code): exports `init`, `send`, `mcp`. */
export function generateFirstValidators(formatsModule = './first-formats'): string {
  const ajv = new Ajv({
    code: { source: true, esm: false, lines: false, formats: _`require(${formatsModule}).FIRST_FORMATS` },
    logger: strictLogger,
    formats: FIRST_FORMATS,
    // As zod: string lengths in UTF-16 code units, patterns without the u flag, NaN/±Infinity not numbers.
    unicode: false,
    unicodeRegExp: false,
    strictNumbers: true,
    // config's `.default({})` (the only default before the send's context, which takes the usual path).
    useDefaults: true,
    allErrors: false,
    messages: false, // the first-request bundle only needs yes or no (a no goes to the host, which says why)
    strictSchema: 'log', // every message but the two above fails the generation (strictLogger)
    // The send's context items' `path` default sits under anyOf (not applied): the first-request path
    // reads only whether context came (any takes the usual path, which parses it with zod).
    strictTypes: false,
    strictTuples: false,
    validateFormats: true,
  });
  ajv.addSchema(firstJsonSchema(firstInitParams()), 'init');
  ajv.addSchema(firstJsonSchema(SendParams), 'send');
  ajv.addSchema(firstJsonSchema(firstMcpParams()), 'mcp');
  return standaloneCode(ajv, { init: 'init', send: 'send', mcp: 'mcp' });
}
