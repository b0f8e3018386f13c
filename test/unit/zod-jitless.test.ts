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
import { good, HOSTILE_INIT } from '../support/hostile-init';

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
  const bad = HOSTILE_INIT;
  for (const [what, params] of bad) {
    await assert.rejects(server.handle(METHODS.init, params), /invalid params for host\.init/, what);
  }
});
