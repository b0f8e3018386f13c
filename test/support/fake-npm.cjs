#!/usr/bin/env node
/**
 * A stand-in for `npm` in the install tests (tests never touch the network): it does in the plugin copy
 * (the current directory) what the real commands of scripts/build do, from this checkout's own files.
 *   npm ci --ignore-scripts ...     node_modules/: links to this checkout's packages; better-sqlite3 copied
 *                                   without its native module (as `--ignore-scripts` leaves it)
 *   npm rebuild better-sqlite3 ...  waits until $FAKE_NPM_GATE exists (when set: a compile the test can
 *                                   cut short), then puts the native module in place
 *   npm run build                   copies this checkout's dist/
 * Every call is appended to $FAKE_NPM_LOG. FAKE_NPM_REPO names this checkout.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const repo = process.env.FAKE_NPM_REPO;
const args = process.argv.slice(2);
if (process.env.FAKE_NPM_LOG) fs.appendFileSync(process.env.FAKE_NPM_LOG, `npm ${args.join(' ')}\n`);
const cwd = process.cwd();
const realModules = fs.realpathSync(path.join(repo, 'node_modules'));
const SQLITE_NODE = path.join('build', 'Release', 'better_sqlite3.node');

function installDeps() {
  const dest = path.join(cwd, 'node_modules');
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest);
  for (const name of fs.readdirSync(realModules)) {
    if (name.startsWith('.')) continue; // .bin, .cache, .package-lock.json (copied below, never written through a link)
    if (name === 'better-sqlite3') continue;
    fs.symlinkSync(path.join(realModules, name), path.join(dest, name));
  }
  // Copied (not linked), so `bindings` looks for the native module in the copy.
  const sq = path.join(dest, 'better-sqlite3');
  fs.mkdirSync(sq);
  fs.copyFileSync(path.join(realModules, 'better-sqlite3', 'package.json'), path.join(sq, 'package.json'));
  fs.cpSync(path.join(realModules, 'better-sqlite3', 'lib'), path.join(sq, 'lib'), { recursive: true });
  fs.copyFileSync(path.join(realModules, '.package-lock.json'), path.join(dest, '.package-lock.json'));
}

async function rebuildSqlite() {
  const gate = process.env.FAKE_NPM_GATE;
  while (gate && !fs.existsSync(gate)) await new Promise((r) => setTimeout(r, 50));
  const to = path.join(cwd, 'node_modules', 'better-sqlite3', SQLITE_NODE);
  fs.mkdirSync(path.dirname(to), { recursive: true });
  fs.copyFileSync(path.join(realModules, 'better-sqlite3', SQLITE_NODE), to);
}

async function main() {
  if (args[0] === 'ci') installDeps();
  else if (args[0] === 'rebuild' && args[1] === 'better-sqlite3') await rebuildSqlite();
  else if (args[0] === 'run' && args[1] === 'build') fs.cpSync(path.join(repo, 'dist'), path.join(cwd, 'dist'), { recursive: true });
  else {
    process.stderr.write(`fake npm: unexpected arguments: ${args.join(' ')}\n`);
    process.exit(2);
  }
}
main().catch((e) => {
  process.stderr.write(`fake npm: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
