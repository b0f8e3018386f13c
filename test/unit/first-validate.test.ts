/**
 * The first-request bundle checks host.init and the first send with validators generated at build time
 * from the host's zod schemas (src/host/first-validate-gen.ts → dist/host/first-validators.js), so that it
 * loads no zod. What they take must be what zod takes (the host's own validation at handover would otherwise
 * refuse params the first-request bundle already answered and acted on); what they cannot tell goes to the
 * host, which validates with zod. Checked here: the build is current, the hostile payloads are refused as
 * the host refuses them, valid configs are taken (with the same data), and a seeded fuzz of mutations agrees.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { firstInitParams, generateFirstValidators } from '../../src/host/first-validate-gen';
import { checkFirstInit, checkFirstSend, isPlainData } from '../../src/host/first-main';
import { InitParams, SendParams } from '../../src/host/protocol';
import { good, HOSTILE_INIT } from '../support/hostile-init';
import { seededRandom } from '../support/rng';

const BUILT = path.join(__dirname, '..', '..', 'dist', 'host', 'first-validators.js');
const BUNDLE = path.join(__dirname, '..', '..', 'dist', 'host-first.bundle.js');

/** Freshly generated validators (calling src/host/first-formats.ts's functions). */
function freshValidators(): { init(d: unknown): boolean; send(d: unknown): boolean; mcp(d: unknown): boolean } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-first-validate-'));
  const file = path.join(dir, 'v.js');
  fs.writeFileSync(file, generateFirstValidators(path.resolve(__dirname, '..', '..', 'src', 'host', 'first-formats')));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(file) as ReturnType<typeof freshValidators>;
}
const v = freshValidators();
const firstInit = (p: unknown) => checkFirstInit(structuredClone(p), v);
const firstSend = (p: unknown) => checkFirstSend(structuredClone(p), v);
const NoMcpInit = firstInitParams();

const valid: Array<[string, unknown]> = [
  ['setup()’s config', good],
  ['no config (defaulted)', { cwd: '/p', data_dir: '/d' }],
  ['empty config', { cwd: '/p', data_dir: '/d', config: {} }],
  ['Lua’s empty servers table', { ...good, config: { ...good.config, mcp: { servers: [] } } }],
  ['rules off', { ...good, config: { ...good.config, rules: false } }],
  ['rules null', { ...good, config: { ...good.config, rules: null } }],
  ['provider by name', { ...good, config: { ...good.config, provider: 'a', providers: { a: { base_url: 'http://x', models: ['m', 'n'] } } } }],
  ['model options', { ...good, config: { ...good.config, providers: { 'a.b_c-1': { models: { m: { temperature: 2, reasoning_effort: 'high', top_p: 0.5, seed: null, stream: true } } } } } }],
  ['api_key_cmd list', { ...good, config: { ...good.config, provider: { api_key_cmd: ['pass', 'x'], headers: { 'X-A': 'b' } } } }],
  ['sandbox', { ...good, config: { ...good.config, sandbox: { mode: 'read-only', network: { allow: ['*.example.com'] }, deny_read: ['~/x'], writable: ['/tmp'] } } }],
  ['sandbox off, network true', { ...good, config: { ...good.config, sandbox: { mode: 'off', network: { allow: true } } } }],
  ['acp agents', { ...good, config: { ...good.config, acp: { agents: { codex: { command: 'npx', args: ['x'], env: { K: 'v' }, start_timeout_ms: 5 } } } } }],
  ['everything else', { ...good, log_file: '/tmp/l', log_level: 'off', env_api_key: 'k', config: { ...good.config, max_queue: 0, unsaved_buffers: 'refuse', allow_readonly_writes: true, hard_links: 'in_place', secret_globs: ['.env'], fetch_allow_hosts: ['a'], web_search: { searxng_url: 'http://s' }, system_prompt: 'p', trash_retention_days: 0.5, diagnostics: { settle_ms: 0 } } }],
  ['rules patterns with a glob and a dotted name', { ...good, config: { ...good.config, rules: { files: ['.cursor/rules/*.mdc', 'a..b', 'x/.../y'] } } }],
];

const moreHostile: Array<[string, unknown]> = [
  ['undefined-free null params', null],
  ['cwd missing', { data_dir: '/d' }],
  ['config null', { ...good, config: null }],
  ['config an array', { ...good, config: [] }],
  ['step limit 2^53', { ...good, config: { ...good.config, step_limit: 2 ** 53 } }],
  ['step limit NaN', { ...good, config: { ...good.config, step_limit: NaN } }],
  ['trash days Infinity', { ...good, config: { ...good.config, trash_retention_days: Infinity } }],
  ['max_queue -0.5', { ...good, config: { ...good.config, max_queue: -0.5 } }],
  ['temperature NaN', { ...good, config: { ...good.config, providers: { a: { models: { m: { temperature: NaN } } } } } }],
  ['model option an array', { ...good, config: { ...good.config, providers: { a: { models: { m: { stop: ['x'] } } } } } }],
  ['provider name empty', { ...good, config: { ...good.config, providers: { '': {} } } }],
  ['provider name unicode', { ...good, config: { ...good.config, providers: { 'é': {} } } }],
  ['provider name with a newline at the end', { ...good, config: { ...good.config, providers: { 'a\n': {} } } }],
  ['provider an empty name', { ...good, config: { ...good.config, provider: '' } }],
  ['rules pattern empty', { ...good, config: { ...good.config, rules: { files: [''] } } }],
  ['rules pattern blank', { ...good, config: { ...good.config, rules: { files: ['  '] } } }],
  ['rules pattern with NUL', { ...good, config: { ...good.config, rules: { files: ['a\0b'] } } }],
  ['rules pattern with a backslash ..', { ...good, config: { ...good.config, rules: { files: ['a\\..\\b'] } } }],
  ['rules pattern ..', { ...good, config: { ...good.config, rules: { files: ['..'] } } }],
  ['rules pattern a number', { ...good, config: { ...good.config, rules: { files: [1] } } }],
  ['rules true', { ...good, config: { ...good.config, rules: true } }],
  ['101 rules patterns', { ...good, config: { ...good.config, rules: { files: Array.from({ length: 101 }, (_, i) => `f${i}`) } } }],
  ['sandbox mode unknown', { ...good, config: { ...good.config, sandbox: { mode: 'none' } } }],
  ['sandbox host too long', { ...good, config: { ...good.config, sandbox: { network: { allow: ['a'.repeat(254)] } } } }],
  ['sandbox empty writable path', { ...good, config: { ...good.config, sandbox: { writable: [''] } } }],
  ['acp agent name too long', { ...good, config: { ...good.config, acp: { agents: { ['a'.repeat(33)]: { command: 'x' } } } } }],
  ['acp agent without command', { ...good, config: { ...good.config, acp: { agents: { a: {} } } } }],
  ['mcp servers a string', { ...good, config: { ...good.config, mcp: { servers: 'x' } } }],
  ['mcp servers a list of one', { ...good, config: { ...good.config, mcp: { servers: [{ command: 'x' }] } } }],
  ['mcp timeout 0', { ...good, config: { ...good.config, mcp: { start_timeout_ms: 0 } } }],
  ['media unknown', { ...good, config: { ...good.config, provider: { media: ['video'] } } }],
  ['log level null', { ...good, log_level: null }],
  ['nvim_version null', { ...good, nvim_version: null }],
  ['diagnostics null', { ...good, config: { ...good.config, diagnostics: null } }],
  ['mode null', { ...good, config: { ...good.config, mode: null } }],
];

describe('the first-request bundle’s generated validators', () => {
  it('are the ones generated from the schemas now (the build is current)', (t) => {
    if (!fs.existsSync(BUILT)) return t.skip(`skipped: ${BUILT} not found (run npm run build)`);
    assert.equal(fs.readFileSync(BUILT, 'utf8'), generateFirstValidators(), 'dist/host/first-validators.js is stale: run npm run build');
  });

  it('leave zod out of the first-request bundle', (t) => {
    if (!fs.existsSync(BUNDLE)) return t.skip(`skipped: ${BUNDLE} not found (run npm run build)`);
    const src = fs.readFileSync(BUNDLE, 'utf8');
    assert.ok(!src.includes('$ZodType'), 'no zod core in the first-request bundle');
    assert.ok(src.includes('caboose-rules-pattern'), 'the generated validators are in it');
  });

  it('refuse every hostile host.init the host refuses', () => {
    assert.equal(HOSTILE_INIT.length, 18);
    for (const [what, params] of [...HOSTILE_INIT, ...moreHostile]) {
      assert.equal(InitParams.safeParse(params).success, false, `the host refuses: ${what}`);
      assert.equal(firstInit(params), null, `the first-request bundle refuses: ${what}`);
    }
  });

  it('take the valid configs, with the data zod gives', () => {
    for (const [what, params] of valid) {
      const z = InitParams.safeParse(structuredClone(params));
      assert.ok(z.success, `the host takes: ${what}`);
      const mine = firstInit(params);
      assert.ok(mine, `the first-request bundle takes: ${what}`);
      // No key here is one zod strips; Lua's [] for servers is zod's {} (both: no server).
      const zd = NoMcpInit.parse(structuredClone(params));
      assert.deepEqual(mine, zd.config.mcp?.servers !== undefined && Array.isArray((mine.config.mcp as { servers?: unknown } | undefined)?.servers) ? { ...zd, config: { ...zd.config, mcp: { ...zd.config.mcp, servers: [] } } } : zd, what);
    }
  });

  it('leave to the host what is not plain data (a Buffer where zod wants a record)', () => {
    const withBuffer = { ...good, config: { ...good.config, provider: { headers: Buffer.alloc(0) } } };
    assert.equal(InitParams.safeParse(withBuffer).success, false);
    assert.equal(checkFirstInit(withBuffer, v), null);
    assert.equal(isPlainData(Object.create({ x: 1 })), false);
    assert.equal(isPlainData({ a: [1, 'x', null, { b: true }] }), true);
    let deep: unknown = 'x';
    for (let i = 0; i < 100; i++) deep = [deep];
    assert.equal(isPlainData({ ...good, cwd: deep }), false);
  });

  it('leave a config naming MCP servers to the host (which validates their schema)', () => {
    const p = { ...good, config: { ...good.config, mcp: { servers: { fs: { command: 'npx' } } } } };
    assert.equal(InitParams.safeParse(p).success, true);
    assert.equal(firstInit(p), null);
    assert.equal(v.mcp(p.config.mcp), false);
    assert.equal(v.mcp({ servers: [] }), true);
    assert.equal(v.mcp(null), true);
  });

  it('refuse the hostile sends the host refuses, and take the valid ones', () => {
    const bad: unknown[] = [
      null, 'hi', [], {}, { text: '' }, { text: 1 }, { text: ['hi'] }, { text: 'hi', context: {} }, { text: 'hi', context: 'x' },
      { text: 'hi', context: Array.from({ length: 51 }, () => ({ kind: 'file' })) },
      { text: 'hi', context: [{ kind: 'shell' }] }, { text: 'hi', context: [{}] }, { text: 'hi', context: [{ kind: 'fetch', url: 'x'.repeat(8193) }] },
      { text: 'hi', context: [{ kind: 'file', name: 'n'.repeat(201) }] }, { text: 'hi', context: [{ kind: 'file', start_line: 0 }] },
      { text: 'hi', context: [{ kind: 'file', end_line: 1.5 }] }, { text: 'hi', context: [{ kind: 'file', modified: 'yes' }] },
      { text: 'hi', context: [{ kind: 'file', path: null }] }, { text: 'hi', context: [{ kind: 'file', text: 'x'.repeat(4_000_001) }] },
    ];
    for (const p of bad) {
      assert.equal(SendParams.safeParse(p).success, false, JSON.stringify(p)?.slice(0, 80));
      assert.equal(firstSend(p), null, JSON.stringify(p)?.slice(0, 80));
    }
    const ok: unknown[] = [
      { text: 'hi' }, { text: 'hi', context: null }, { text: 'hi', context: [] }, { text: 'é'.repeat(10) },
      { text: 'hi', context: [{ kind: 'fetch', url: 'u', name: '😀'.repeat(100), text: 't', start_line: 1, end_line: 2, modified: false }] },
    ];
    for (const p of ok) {
      assert.equal(SendParams.safeParse(p).success, true, JSON.stringify(p));
      assert.ok(firstSend(p), JSON.stringify(p));
    }
  });

  it('agree with zod on a seeded fuzz of mutated configs (taken ⇒ the host takes it)', () => {
    const rnd = seededRandom(24);
    const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)];
    const values: unknown[] = [null, true, false, 0, -1, 1, 1.5, 2 ** 53, NaN, Infinity, '', 'x', '../x', '/x', 'a\0', [], [''], ['x'], ['../x'], {}, { a: 'b' }, { a: 1 }, [{}]];
    const paths: string[][] = [];
    const walk = (o: unknown, at: string[]) => {
      if (o === null || typeof o !== 'object') return;
      for (const [k, x] of Object.entries(o)) {
        paths.push([...at, k]);
        walk(x, [...at, k]);
      }
    };
    const rich = valid.map(([, p]) => p);
    for (const p of rich) walk(p, []);
    let agreed = 0;
    let refusedBoth = 0;
    for (let i = 0; i < 3000; i++) {
      const p = structuredClone(pick(rich)) as Record<string, unknown>;
      const at = pick(paths);
      let o: Record<string, unknown> = p;
      for (const k of at.slice(0, -1)) {
        const next = o[k];
        if (next === null || typeof next !== 'object') break;
        o = next as Record<string, unknown>;
      }
      o[at[at.length - 1]] = structuredClone(pick(values));
      const host = InitParams.safeParse(structuredClone(p)).success;
      const noMcp = NoMcpInit.safeParse(structuredClone(p)).success;
      const mine = firstInit(p) !== null;
      if (mine) assert.ok(host, `taken by the first-request bundle, refused by the host: ${JSON.stringify(p)}`);
      // Exactly zod's answer for the schema it was generated from.
      assert.equal(mine, noMcp, `differs from zod: ${JSON.stringify(p)}`);
      if (mine) agreed++;
      else refusedBoth++;
    }
    assert.ok(agreed > 100 && refusedBoth > 100, `both answers exercised (${agreed} taken, ${refusedBoth} refused)`);
  });
});
