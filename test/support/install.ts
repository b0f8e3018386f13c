/**
 * Plugin copies for the install tests: what a plugin manager leaves on disk (the tracked files), before,
 * during or after scripts/build, with a stand-in `npm` (test/support/fake-npm.cjs) so no test touches
 * the network.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');
const FAKE_NPM = path.join(__dirname, 'fake-npm.cjs');

/** The files a clone holds (tracked in git, plus this worktree's uncommitted edits): no node_modules, no dist. */
const PLUGIN_FILES = ['lua', 'plugin', 'doc', 'scripts', 'rplugin', 'src', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md'];

export interface PluginCopy {
  root: string;
  /** A folder holding the stand-in `npm` (put it first on PATH). */
  binDir: string;
  /** The stand-in's call log. */
  npmLog: string;
  /** PATH, FAKE_NPM_* for a process that runs scripts/build. */
  env: Record<string, string>;
  npmCalls(): string[];
  cleanup(): void;
}

/**
 * A plugin folder as a clone leaves it; `stage` says how far its build got: 'clone' (nothing), 'deps'
 * (npm ci --ignore-scripts done: no native module, no dist/), 'built' (everything).
 * With `git`, the folder is also a git repository with one commit (a source for vim.pack).
 */
export function pluginCopy(stage: 'clone' | 'deps' | 'built', o: { git?: boolean; gate?: string } = {}): PluginCopy {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-install-'));
  const root = path.join(base, 'caboose.nvim');
  fs.mkdirSync(root);
  for (const f of PLUGIN_FILES) fs.cpSync(path.join(REPO_ROOT, f), path.join(root, f), { recursive: true });
  fs.rmSync(path.join(root, 'doc', 'tags'), { force: true });
  const binDir = path.join(base, 'bin');
  fs.mkdirSync(binDir);
  fs.writeFileSync(path.join(binDir, 'npm'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE_NPM)} "$@"\n`, { mode: 0o755 });
  const npmLog = path.join(base, 'npm.log');
  const env: Record<string, string> = {
    PATH: `${binDir}:${path.dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    FAKE_NPM_REPO: REPO_ROOT,
    FAKE_NPM_LOG: npmLog,
    ...(o.gate ? { FAKE_NPM_GATE: o.gate } : {}),
  };
  if (o.git) {
    fs.writeFileSync(path.join(root, '.gitignore'), 'node_modules/\ndist/\n.build/\ndoc/tags\n');
    const git = (...a: string[]) => execFileSync('git', a, { cwd: root, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
    git('init', '-q', '-b', 'main');
    git('add', '-A');
    git('commit', '-q', '-m', 'caboose.nvim');
  }
  const run = (...a: string[]) => execFileSync(process.execPath, [FAKE_NPM, ...a], { cwd: root, env: { ...process.env, ...env, FAKE_NPM_GATE: '' }, stdio: 'ignore' });
  if (stage !== 'clone') run('ci', '--ignore-scripts');
  if (stage === 'built') {
    run('rebuild', 'better-sqlite3');
    run('run', 'build');
  }
  fs.writeFileSync(npmLog, '');
  return {
    root,
    binDir,
    npmLog,
    env,
    npmCalls: () => fs.readFileSync(npmLog, 'utf8').split('\n').filter(Boolean),
    cleanup: () => fs.rmSync(base, { recursive: true, force: true }),
  };
}
