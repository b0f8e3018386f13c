/**
 * Installing the plugin as the README says (issue 17): the lazy.nvim spec lists every command and <Plug>
 * mapping, a half-built install is told apart by :checkhealth (with the command that finishes it), a
 * build cut short is finished, and vim.pack (0.12) installs from a path and builds through the README's
 * PackChanged hook. A stand-in npm (test/support/fake-npm.cjs) does the network's part.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { pluginCopy, REPO_ROOT, type PluginCopy } from '../support/install';

const README = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');

/** The fenced Lua block that follows `label` in the README's Install section. */
function readmeBlock(label: string): string {
  const install = README.slice(README.indexOf('## Install'));
  const at = install.indexOf(label);
  assert.ok(at >= 0, `README: "${label}" not found in the Install section`);
  const m = /```lua\n([\s\S]*?)\n```/.exec(install.slice(at));
  assert.ok(m, `README: no lua block after "${label}"`);
  return m[1];
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const readPid = (root: string): number | null => {
  try {
    return Number(fs.readFileSync(path.join(root, '.build', 'lock', 'pid'), 'utf8').trim()) || null;
  } catch {
    return null;
  }
};

async function until<T>(probe: () => T | null | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const healthText = async (t: TestNvim) => {
  await t.cmd('checkhealth caboose');
  const text = (await t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
  await t.cmd('bwipeout');
  return text;
};

describe('scripts/build (no Neovim)', () => {
  const copies: PluginCopy[] = [];
  after(() => copies.forEach((c) => c.cleanup()));

  it('--background returns while the build runs on (a build timeout cannot cut it short); the build resumes where a killed one stopped', async () => {
    const gate = path.join(os.tmpdir(), `caboose-install-gate-${process.pid}`);
    fs.rmSync(gate, { force: true });
    const c = pluginCopy('clone', { gate });
    copies.push(c);
    const env = { ...process.env, ...c.env };
    const res = spawnSync('sh', [path.join(c.root, 'scripts', 'build'), '--background'], { cwd: c.root, env, encoding: 'utf8', timeout: 60_000 });
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /building in the background \(pid \d+\); log: .*\.build\/log/);
    // Precondition of the claim: the caller is gone and the build still runs (it waits on the "compile").
    const pid = await until(() => readPid(c.root), 'the lock');
    await until(() => c.npmCalls().some((l) => l.startsWith('npm rebuild better-sqlite3')), 'the compile step');
    assert.ok(alive(pid), 'the build outlives the command that started it');
    // Cut it short, as a killed build is: the whole group, at once.
    process.kill(-pid, 'SIGKILL');
    await until(() => !alive(pid), 'the build to die');
    assert.ok(!fs.existsSync(path.join(c.root, 'dist')), 'half built: no dist/');
    // Resumed: the dependencies are not installed again.
    fs.writeFileSync(gate, '');
    const again = spawnSync('sh', [path.join(c.root, 'scripts', 'build')], { cwd: c.root, env, encoding: 'utf8', timeout: 120_000 });
    fs.rmSync(gate, { force: true });
    assert.equal(again.status, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /1\/3 dependencies: up to date/);
    assert.match(again.stdout, /2\/3 better-sqlite3: a prebuilt binary, or compiling from source/);
    assert.match(again.stdout, /3\/3 compiling the host/);
    assert.equal(c.npmCalls().filter((l) => l.startsWith('npm ci')).length, 1, c.npmCalls().join('\n'));
    assert.ok(fs.existsSync(path.join(c.root, 'dist', 'host', 'main.js')));
    assert.equal(fs.readFileSync(path.join(c.root, '.build', 'status'), 'utf8').trim(), 'done');
    // Everything done: a third run changes nothing.
    const third = spawnSync('sh', [path.join(c.root, 'scripts', 'build')], { cwd: c.root, env, encoding: 'utf8', timeout: 60_000 });
    assert.equal(third.status, 0);
    assert.match(third.stdout, /1\/3 dependencies: up to date[\s\S]*2\/3 better-sqlite3: loads[\s\S]*3\/3 host: up to date/);
  });
});

forEachNvim((bin) => {
  describe(`installing with plugin managers (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const copies: PluginCopy[] = [];
    after(() => copies.forEach((c) => c.cleanup()));

    it("README's lazy.nvim spec: `cmd` lists every user command plugin/ defines, `keys` every <Plug> mapping", async () => {
      // No plugin on the runtimepath: what plugin/ defines is the difference its files make when sourced.
      const t = await e.start({ pluginRoot: null });
      const spec = readmeBlock('lazy.nvim:');
      const pluginFiles = fs.readdirSync(path.join(REPO_ROOT, 'plugin')).filter((f) => /\.(lua|vim)$/.test(f)).map((f) => path.join(REPO_ROOT, 'plugin', f));
      const r = await t.lua<{ cmd: string[]; keys: { lhs: string; modes: string[] }[]; commands: string[]; plugs: { lhs: string; modes: string[] }[] }>(
        `
        local text, files = ...
        local spec = assert(loadstring('return ' .. text))()
        local keys = {}
        for _, k in ipairs(spec.keys or {}) do
          local modes = type(k.mode) == 'table' and vim.deepcopy(k.mode) or { k.mode or 'n' }
          table.sort(modes)
          table.insert(keys, { lhs = k[1], modes = modes })
        end
        local modes = { 'n', 'i', 'x', 's', 'o', 'c', 't' }
        local function maps()
          local out = {}
          for _, mode in ipairs(modes) do
            for _, m in ipairs(vim.api.nvim_get_keymap(mode)) do
              out[m.lhs .. ' ' .. mode] = true
            end
          end
          return out
        end
        local cmds_before, maps_before = vim.api.nvim_get_commands({}), maps()
        for _, f in ipairs(files) do vim.cmd.source(vim.fn.fnameescape(f)) end
        local commands = {}
        for name in pairs(vim.api.nvim_get_commands({})) do
          if not cmds_before[name] then table.insert(commands, name) end
        end
        local plugs = {}
        for key in pairs(maps()) do
          local lhs, mode = key:match('^(.*) (%a)$')
          if not maps_before[key] and lhs:match('^<Plug>') then
            plugs[lhs] = plugs[lhs] or {}
            table.insert(plugs[lhs], mode)
          end
        end
        local plug_list = {}
        for lhs, ms in pairs(plugs) do table.sort(ms) table.insert(plug_list, { lhs = lhs, modes = ms }) end
        return { cmd = spec.cmd, keys = keys, commands = commands, plugs = plug_list }
        `,
        [spec, pluginFiles],
      );
      assert.ok(r.commands.includes('CabooseMcp') && r.commands.length >= 15, `precondition: plugin/ defined its commands: ${r.commands.join(' ')}`);
      assert.deepEqual([...r.cmd].sort(), [...r.commands].sort(), 'the spec lists exactly the commands plugin/ defines');
      const norm = (l: { lhs: string; modes: string[] }[]) => l.map((k) => `${k.lhs} ${k.modes.join(',')}`).sort();
      assert.ok(r.plugs.length >= 2, `precondition: <Plug> mappings exist: ${JSON.stringify(r.plugs)}`);
      assert.deepEqual(norm(r.keys), norm(r.plugs), 'the spec lists every <Plug> mapping with its modes');
    });

    it(':checkhealth tells a half-built install apart (no dist/, no native module) and names the command that finishes it', async () => {
      const c = pluginCopy('deps');
      copies.push(c);
      const t = await e.start({ pluginRoot: c.root, env: c.env });
      const text = await healthText(t);
      assert.match(text, /ERROR.*half-built install: no native better-sqlite3 module .*; no dist\/ \(the host is not compiled\)/);
      assert.match(text, /finish it with :CabooseBuild \(or in a shell: sh .*\/scripts\/build\)/);
      assert.doesNotMatch(text, /host does not start/, 'no host start is attempted');
      assert.deepEqual(c.npmCalls(), [], 'the check itself builds nothing');
      await t.close();

      const clone = pluginCopy('clone');
      copies.push(clone);
      const t2 = await e.start({ pluginRoot: clone.root, env: clone.env });
      assert.match(await healthText(t2), /ERROR.*half-built install: no node_modules\/ \(dependencies not installed\); no dist\//);
      await t2.close();

      const built = pluginCopy('built');
      copies.push(built);
      const t3 = await e.start({ pluginRoot: built.root, env: built.env });
      const ok = await healthText(t3);
      assert.match(ok, /OK.*installed: dependencies, native better-sqlite3 module and compiled host/);
      assert.match(ok, /OK.*host \S+ answers/);
    });

    it('a build cut short is finished at the first command (said in a notice), and :CabooseBuild follows it to "ready"; then the chat works', async () => {
      const gate = path.join(os.tmpdir(), `caboose-install-gate-${process.pid}-${bin.version}`);
      fs.rmSync(gate, { force: true });
      const c = pluginCopy('deps', { gate });
      copies.push(c);
      const t = await e.start({ pluginRoot: c.root, env: c.env });
      await t.cmd('Caboose hello');
      const notes = async () => (await t.notifications()).map((n) => n.msg).join('\n');
      await t.waitFor(async () => /the install is not finished \(no native better-sqlite3 module.*being finished in the background.*:CabooseBuild/s.test(await notes()), 'the first-use notice');
      const pid = await until(() => readPid(c.root), 'the background build');
      await until(() => c.npmCalls().some((l) => l.startsWith('npm rebuild better-sqlite3')), 'the compile step');
      // Killed like a build over its time limit.
      process.kill(-pid, 'SIGKILL');
      await until(() => !alive(pid), 'the build to die');
      assert.match(await healthText(t), /half-built install/);
      fs.writeFileSync(gate, '');
      try {
        await t.cmd('CabooseBuild');
        await t.waitFor(async () => (await notes()).includes('install finished: ready'), '"ready"', 60_000);
      } finally {
        fs.rmSync(gate, { force: true });
      }
      assert.match(await notes(), /build: 2\/3 better-sqlite3/, 'progress is shown');
      // The log the messages name is this build's (not the one cut short).
      assert.match(fs.readFileSync(path.join(c.root, '.build', 'log'), 'utf8'), /^caboose build: 1\/3 dependencies: up to date[\s\S]*caboose build: done\n$/);
      e.fake.script({ text: 'hello from the model' });
      await t.cmd('Caboose hello again');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('hello from the model'), 'the reply');
    });

    it('a build still running in the background (the build hook) when the first command comes: the notice says so, then "ready"', async () => {
      const gate = path.join(os.tmpdir(), `caboose-install-gate-bg-${process.pid}-${bin.version}`);
      fs.rmSync(gate, { force: true });
      const c = pluginCopy('clone', { gate });
      copies.push(c);
      const bg = spawnSync('sh', [path.join(c.root, 'scripts', 'build'), '--background'], { cwd: c.root, env: { ...process.env, ...c.env }, encoding: 'utf8' });
      assert.equal(bg.status, 0, bg.stderr);
      await until(() => c.npmCalls().some((l) => l.startsWith('npm rebuild better-sqlite3')), 'the background build to reach the compile');
      const t = await e.start({ pluginRoot: c.root, env: c.env });
      try {
        await t.cmd('Caboose hello');
        const notes = async () => (await t.notifications()).map((n) => n.msg).join('\n');
        await t.waitFor(async () => /the install is not finished .*being finished in the background/s.test(await notes()), 'the first-use notice');
        assert.equal(c.npmCalls().filter((l) => l.startsWith('npm rebuild')).length, 1, 'no second build is started');
        fs.writeFileSync(gate, '');
        await t.waitFor(async () => (await notes()).includes('install finished: ready'), '"ready"', 60_000);
      } finally {
        fs.rmSync(gate, { force: true });
      }
    });

    if (bin.version.startsWith('0.12')) {
      const git = spawnSync('git', ['--version'], { encoding: 'utf8' });
      it("vim.pack: the README's PackChanged hook installs from a local path and builds; the plugin then works", { skip: git.status === 0 ? false : 'skipped: git not found at PATH (vim.pack clones with git)' }, async () => {
        const c = pluginCopy('clone', { git: true });
        copies.push(c);
        const block = readmeBlock('`vim.pack` (Neovim 0.12)')
          .replace("vim.pack.add({ 'https://github.com/caboose-nvim/caboose.nvim' })", `vim.pack.add({ ${JSON.stringify(c.root)} }, { confirm = false })`);
        assert.ok(block.includes(c.root), 'precondition: the README block adds the plugin with vim.pack.add');
        const t = await startNvim({ nvim: bin, pluginRoot: null, env: { ...c.env, OPENAI_BASE_URL: e.fake.url }, initLua: block });
        try {
          const dir = await t.lua<string>("return vim.fn.stdpath('data') .. '/site/pack/core/opt/caboose.nvim'");
          // vim.pack.add runs in init.lua; its clone may still be under way while requests are answered.
          await until(() => fs.existsSync(path.join(dir, 'scripts', 'build')), 'vim.pack to install it', 60_000);
          await until(() => fs.existsSync(path.join(dir, '.build', 'status')) && fs.readFileSync(path.join(dir, '.build', 'status'), 'utf8').trim() === 'done', 'the build to finish', 120_000);
          assert.ok(fs.existsSync(path.join(dir, 'dist', 'host', 'main.js')));
          assert.deepEqual(
            c.npmCalls().map((l) => l.split(' ').slice(0, 3).join(' ')),
            ['npm ci --ignore-scripts', 'npm rebuild better-sqlite3', 'npm run build'],
          );
          e.fake.script({ text: 'installed with vim.pack' });
          await t.cmd('Caboose hi');
          await t.waitFor(async () => (await t.chatLines()).join('\n').includes('installed with vim.pack'), 'the reply', 30_000);
        } finally {
          await t.close();
        }
      });
    }
  });
});
