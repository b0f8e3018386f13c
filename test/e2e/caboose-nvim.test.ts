/**
 * scripts/caboose-nvim, the README's second command (issue 17): a warm launch prints nothing before
 * Neovim, a first launch fetches only the Neovim it runs, and CABOOSE_CONFIG carries the user's options
 * into scripts/minimal_init.lua.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, REPO_ROOT } from '../support/nvim';
import { DEFAULT_MANIFEST } from '../support/nvim-path';

const SCRIPT = path.join(REPO_ROOT, 'scripts', 'caboose-nvim');
const homes: string[] = [];
after(() => homes.forEach((h) => fs.rmSync(h, { recursive: true, force: true })));

/** PATH without any `nvim`, so the script has to pick one itself. */
function pathWithoutNvim(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((d) => d && !fs.existsSync(path.join(d, 'nvim')))
    .concat(path.dirname(process.execPath))
    .join(path.delimiter);
}

function launch(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-launch-'));
  homes.push(home);
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('OPENAI_') || k.startsWith('CABOOSE_') || k.startsWith('NVIM') || k.startsWith('XDG_')) continue;
    base[k] = v;
  }
  const res = spawnSync(SCRIPT, args, {
    cwd: home,
    env: { ...base, HOME: home, PATH: pathWithoutNvim(), OPENAI_API_KEY: 'test-key', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('scripts/caboose-nvim', () => {
  it('a warm launch prints nothing before Neovim (no get-nvim lines)', (t) => {
    // The launch picks the Neovim 0.12 test/support/get-nvim.mjs keeps in the cache (npm test provides it).
    const stamp = path.join(path.dirname(DEFAULT_MANIFEST), '0.12', '.complete.json');
    if (!fs.existsSync(stamp)) {
      t.skip(`skipped: a cached Neovim 0.12 not found at ${stamp}`);
      return;
    }
    const r = launch(['--headless', '+lua io.stdout:write("STARTED " .. vim.version().minor)', '+qa!']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, '', 'nothing on stderr');
    assert.equal(r.stdout, 'STARTED 12', 'nothing on stdout before Neovim');
  });

  const apt = spawnSync('sh', ['-c', 'command -v dpkg && command -v apt-get'], { encoding: 'utf8' });
  it('a first launch fetches only the Neovim it runs (0.12), not 0.10 too', { skip: apt.status === 0 ? false : 'skipped: dpkg and apt-get not found at PATH (get-nvim fetches Debian packages)' }, () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-nvim-cache-'));
    homes.push(cache);
    // An unreachable mirror: the attempt shows which suites it would fetch, then fails at once.
    const r = launch(['--headless', '+qa!'], { CABOOSE_NVIM_CACHE: cache, CABOOSE_DEBIAN_MIRROR: 'http://127.0.0.1:9/debian' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /get-nvim: forky: apt-get update/, 'precondition: it tried to fetch 0.12');
    assert.doesNotMatch(r.stderr, /trixie/, 'it does not fetch 0.10');
  });
});

forEachNvim((bin) => {
  describe(`CABOOSE_CONFIG: the user's options for scripts/minimal_init.lua (Neovim ${bin.version})`, () => {
    const probe = "+lua local c = require('caboose').config() io.stdout:write(vim.json.encode({ mode = c.mode, position = c.chat.position, model = c.provider.model }))";
    const run = (config: string | undefined) =>
      launch(['--headless', probe, '+qa!'], { CABOOSE_NVIM: bin.path, CABOOSE_MODEL: 'm-from-env', ...(config === undefined ? {} : { CABOOSE_CONFIG: config }) });

    it('a JSON object, a Lua file and a .json file are merged over the defaults', () => {
      const plain = run(undefined);
      assert.deepEqual(JSON.parse(plain.stdout), { mode: 'create', position: 'right', model: 'm-from-env' }, plain.stderr);

      const json = run('{"mode":"chug","chat":{"position":"left"}}');
      assert.deepEqual(JSON.parse(json.stdout), { mode: 'chug', position: 'left', model: 'm-from-env' }, json.stderr);

      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-config-'));
      homes.push(dir);
      fs.writeFileSync(path.join(dir, 'try.lua'), "return { mode = 'plan', provider = { model = 'm-from-file' } }\n");
      const lua = run(path.join(dir, 'try.lua'));
      assert.deepEqual(JSON.parse(lua.stdout), { mode: 'plan', position: 'right', model: 'm-from-file' }, lua.stderr);

      fs.writeFileSync(path.join(dir, 'try.json'), '{"mode":"auto-edit"}');
      const jsonFile = run(path.join(dir, 'try.json'));
      assert.deepEqual(JSON.parse(jsonFile.stdout), { mode: 'auto-edit', position: 'right', model: 'm-from-env' }, jsonFile.stderr);
    });

    it('a bad CABOOSE_CONFIG is named and Neovim starts with the defaults', () => {
      for (const [config, why] of [
        ['/nonexistent/caboose.lua', /CABOOSE_CONFIG: \/nonexistent\/caboose\.lua is not a readable file/],
        ['{"mode":', /CABOOSE_CONFIG: CABOOSE_CONFIG is not a JSON object/],
        ['{"mode":"fast"}', /CABOOSE_CONFIG: .*mode/],
      ] as const) {
        const r = run(config);
        assert.equal(r.status, 0, r.stderr);
        assert.match(r.stderr + r.stdout, why);
        assert.match(r.stdout, /"mode":"create"/, 'the defaults');
      }
    });
  });
});
