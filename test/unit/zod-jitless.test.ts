// The host's zod runs without its JIT (src/host/zod-jitless.ts): no parser compiled with `new Function`,
// and validation exactly as strict as before (hostile host.init params are refused).
import '../../src/host/zod-jitless';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { HostServer } from '../../src/host/server';
import { InitParams, METHODS } from '../../src/host/protocol';
import type { LuaUi } from '../../src/host/lua-ui';
import type { Logger } from '../../src/host/logger';

const good = {
  cwd: '/tmp/project',
  data_dir: '/tmp/data',
  log_level: 'info',
  nvim_version: '0.12.0',
  config: {
    rules: { files: ['AGENTS.md', '.cursor/rules/*.mdc'], max_bytes_per_file: 32768, max_total_bytes: 65536 },
    trash_retention_days: 30,
    bash_timeout_ms: 120000,
    step_limit: 50,
    mode: 'create',
    deny_globs: ['.git/**'],
    mcp: { servers: {}, start_timeout_ms: 10000 },
    acp: { agents: {} },
    diagnostics: { settle_ms: 300, enabled: true, wait_ms: 2000 },
    sandbox: { deny_read: [], writable: [], network: { allow: [] } },
    provider: { api_key: 'x', model: 'm', base_url: 'http://127.0.0.1:1/v1' },
  },
};

/** Counts code compiled through the global Function constructor (what zod's JIT uses) while `fn` runs. */
function compiledDuring(fn: () => void): number {
  const Orig = globalThis.Function;
  let n = 0;
  globalThis.Function = new Proxy(Orig, {
    construct(t, args) {
      n++;
      return Reflect.construct(t, args) as object;
    },
  });
  try {
    fn();
  } finally {
    globalThis.Function = Orig;
  }
  return n;
}

test('the host entry sets zod jitless before anything else is imported', () => {
  const main = fs.readFileSync(path.resolve(__dirname, '..', '..', 'src', 'host', 'main.ts'), 'utf8');
  const firstImport = main.split('\n').find((l) => l.startsWith('import '));
  assert.equal(firstImport, "import './zod-jitless';");
  assert.equal(z.config().jitless, true);
});

test('host.init is validated without compiling parsers (zod jitless)', () => {
  let r: ReturnType<typeof InitParams.safeParse> | undefined;
  const n = compiledDuring(() => {
    r = InitParams.safeParse(structuredClone(good));
    InitParams.safeParse({ ...good, config: { ...good.config, mode: 'yolo' } });
  });
  assert.equal(r?.success, true);
  assert.equal(n, 0, 'no parser compiled with new Function');
});

test('hostile host.init params are still refused (jitless validation as strict)', async () => {
  const noop = () => undefined;
  const log = { debug: noop, info: noop, warn: noop, error: noop, setFile: noop, setLevel: noop } as unknown as Logger;
  const server = new HostServer({ emit: noop } as unknown as LuaUi, log);
  const bad: Array<[string, unknown]> = [
    ['not an object', 'host.init'],
    ['array', [good]],
    ['empty cwd', { ...good, cwd: '' }],
    ['data_dir a number', { ...good, data_dir: 1 }],
    ['unknown log level', { ...good, log_level: 'trace' }],
    ['unknown mode', { ...good, config: { ...good.config, mode: 'yolo' } }],
    ['negative step limit', { ...good, config: { ...good.config, step_limit: -1 } }],
    ['fractional timeout', { ...good, config: { ...good.config, bash_timeout_ms: 1.5 } }],
    ['rules pattern leaving the folder', { ...good, config: { ...good.config, rules: { files: ['../secret'] } } }],
    ['rules pattern absolute', { ...good, config: { ...good.config, rules: { files: ['/etc/passwd'] } } }],
    ['provider name with a slash', { ...good, config: { ...good.config, providers: { '../x': {} } } }],
    ['provider base_url a number', { ...good, config: { ...good.config, provider: { base_url: 1 } } }],
    ['api_key_cmd an object', { ...good, config: { ...good.config, provider: { api_key_cmd: { rm: '-rf' } } } }],
    ['temperature out of range', { ...good, config: { ...good.config, providers: { a: { models: { m: { temperature: 9 } } } } } }],
    ['model option an object', { ...good, config: { ...good.config, providers: { a: { models: { m: { x: { y: 1 } } } } } } }],
    ['headers with a number', { ...good, config: { ...good.config, provider: { headers: { a: 1 } } } }],
    ['deny_globs a string', { ...good, config: { ...good.config, deny_globs: '.git/**' } }],
    ['diagnostics negative wait', { ...good, config: { ...good.config, diagnostics: { wait_ms: -5 } } }],
  ];
  for (const [what, params] of bad) {
    await assert.rejects(server.handle(METHODS.init, params), /invalid params for host\.init/, what);
  }
});
