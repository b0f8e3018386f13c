import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { METHODS, HostConfigSchema, InitParams } from '../../src/host/protocol';
import { stripNulls } from '../../src/host/lua-ui';

const luaRpc = fs.readFileSync(path.resolve(__dirname, '..', '..', 'lua', 'caboose', 'rpc.lua'), 'utf8');

test('Lua rpc.methods and the host METHODS name the same RPC methods', () => {
  const block = luaRpc.slice(luaRpc.indexOf('M.methods = {'), luaRpc.indexOf('}', luaRpc.indexOf('M.methods = {')));
  const luaNames = [...block.matchAll(/=\s*'([^']+)'/g)].map((m) => m[1]).sort();
  assert.deepEqual(luaNames, Object.values(METHODS).sort());
});

test('host config schema accepts what config.lua sends and rejects bad values', () => {
  const ok = HostConfigSchema.safeParse({ provider: { base_url: 'http://x/v1', api_key_cmd: ['pass', 'show'] }, mode: 'chug', step_limit: 5 });
  assert.equal(ok.success, true);
  assert.equal(HostConfigSchema.safeParse({ mode: 'yolo' }).success, false);
  assert.equal(InitParams.safeParse({ cwd: '', data_dir: '/d' }).success, false);
});

test('stripNulls drops null and undefined keys deeply (Lua would see vim.NIL)', () => {
  assert.deepEqual(stripNulls({ a: null, b: { c: undefined, d: 1, e: [null, { f: null }] } }), { b: { d: 1, e: [null, {}] } });
});
