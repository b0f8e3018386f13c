#!/usr/bin/env node
// Makes bubblewrap (bwrap) available for the sandbox tests when it is missing and can be installed:
// on Linux, as root, with apt-get (CI: a fresh Debian container running `npm ci && npm test` as root).
// Never fails the test run: without bwrap the sandbox tests skip with a message saying so.
// Usage: node test/support/get-bwrap.mjs

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const say = (msg) => process.stderr.write(`get-bwrap: ${msg}\n`);

function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir || '.', name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

function main() {
  if (process.platform !== 'linux') return say(`not Linux (${process.platform}): nothing to install`);
  const found = onPath('bwrap');
  if (found) return;
  const apt = onPath('apt-get');
  if (!apt || typeof process.getuid !== 'function' || process.getuid() !== 0) {
    return say('bwrap not found and cannot be installed here (needs root and apt-get): the sandbox tests will be skipped. Install it with: sudo apt-get install bubblewrap');
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => spawnSync(apt, ['install', '-y', '--no-install-recommends', 'bubblewrap'], { stdio: ['ignore', 'ignore', 'pipe'], env, timeout: 300_000 });
  say('bwrap not found: installing the Debian package bubblewrap');
  let r = install();
  if (r.status !== 0) {
    spawnSync(apt, ['update'], { stdio: ['ignore', 'ignore', 'pipe'], env, timeout: 300_000 });
    r = install();
  }
  if (r.status === 0 && onPath('bwrap')) say(`installed ${onPath('bwrap')}`);
  else say(`could not install bubblewrap (${r.error?.message ?? r.stderr?.toString().trim().split('\n').pop() ?? `exit ${r.status}`}): the sandbox tests will be skipped`);
}

main();
