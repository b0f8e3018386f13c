import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { nvimBinaries, parseNvimVersion, OVERRIDE_ENV } from '../support/nvim-path';

const execFileAsync = promisify(execFile);

describe('nvimBinaries', () => {
  let dir = '';
  const fake = (name: string, versionLine: string): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!/bin/sh\necho '${versionLine}'\necho 'Build type: Release'\n`, { mode: 0o755 });
    return file;
  };
  const manifest = (content: unknown): string => {
    const file = path.join(dir, `manifest-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-nvim-path-'));
  });
  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('parses the version line of nvim --version', () => {
    assert.equal(parseNvimVersion('NVIM v0.12.4\nBuild type: Release'), '0.12.4');
    assert.equal(parseNvimVersion('NVIM v0.13.0-dev-42+gabc'), '0.13.0');
    assert.equal(parseNvimVersion('VIM - Vi IMproved 9.0'), null);
  });

  it('reads the manifest written by get-nvim.mjs', () => {
    const a = fake('a', 'NVIM v0.12.4');
    const b = fake('b', 'NVIM v0.10.4');
    const file = manifest({
      version: 1,
      nvim: [
        { version: '0.12.4', path: a, source: 'debian forky neovim 0.12.4-1' },
        { version: '0.10.4', path: b, source: 'debian trixie neovim 0.10.4-8' },
      ],
    });
    assert.deepEqual(nvimBinaries({}, file), [
      { version: '0.12.4', path: a },
      { version: '0.10.4', path: b },
    ]);
  });

  it('prefers CABOOSE_TEST_NVIM (comma-separated) and reads each version from the binary', () => {
    const a = fake('over-a', 'NVIM v0.11.3');
    const b = fake('over-b', 'NVIM v0.10.0');
    const missingManifest = path.join(dir, 'absent.json');
    assert.deepEqual(nvimBinaries({ [OVERRIDE_ENV]: `${a}, ${b}` }, missingManifest), [
      { version: '0.11.3', path: a },
      { version: '0.10.0', path: b },
    ]);
    assert.deepEqual(nvimBinaries({ [OVERRIDE_ENV]: a }, missingManifest), [{ version: '0.11.3', path: a }]);
  });

  it('throws a clear error when nothing is available or an entry is unusable', () => {
    assert.throws(() => nvimBinaries({}, path.join(dir, 'absent.json')), /not found; run `node test\/support\/get-nvim\.mjs`/);
    assert.throws(() => nvimBinaries({}, manifest('{oops')), /not valid JSON/);
    assert.throws(() => nvimBinaries({}, manifest({ version: 1, nvim: [] })), /lists none/);
    assert.throws(() => nvimBinaries({}, manifest({ version: 1, nvim: [{ version: '0.12', path: 'x' }] })), /malformed/);
    const gone = path.join(dir, 'gone');
    assert.throws(() => nvimBinaries({}, manifest({ version: 1, nvim: [{ version: '0.12.4', path: gone }] })), /missing or not executable/);
    assert.throws(() => nvimBinaries({ [OVERRIDE_ENV]: gone }), /missing or not executable/);
    assert.throws(() => nvimBinaries({ [OVERRIDE_ENV]: fake('notvim', 'hello') }), /does not look like Neovim/);
    assert.throws(() => nvimBinaries({ [OVERRIDE_ENV]: ' , ' }), /lists no path/);
  });
});

describe('provided Neovim binaries (from get-nvim.mjs)', () => {
  it('run headless Lua and start child processes with a clean environment', async () => {
    const binaries = nvimBinaries();
    assert.ok(binaries.length > 0);
    const lua = [
      'local out = {}',
      'local job = vim.fn.jobstart({ "node", "-e", "process.stdout.write(String(process.env.LD_LIBRARY_PATH ?? \\"unset\\"))" },',
      '  { stdout_buffered = true, on_stdout = function(_, data) out = data end })',
      'local code = vim.fn.jobwait({ job }, 10000)[1]',
      'io.stdout:write(vim.json.encode({ minor = vim.version().minor, code = code, ld = table.concat(out, "") }))',
    ].join('\n');
    await Promise.all(
      binaries.map(async (b) => {
        const { stdout } = await execFileAsync(b.path, ['--headless', '-u', 'NONE', '-i', 'NONE', '-n', `+lua ${lua}`, '+qa!'], {
          timeout: 30_000,
          env: { ...process.env, LD_LIBRARY_PATH: undefined },
        });
        const result: unknown = JSON.parse(stdout);
        assert.deepEqual(result, { minor: Number(b.version.split('.')[1]), code: 0, ld: 'unset' }, b.path);
      }),
    );
  });
});
