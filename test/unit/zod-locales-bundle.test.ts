// scripts/zod-locales-plugin.mjs (used by scripts/bundle-host.mjs): zod's locale index loads each locale
// on first use instead of all at start-up, stays frozen, and zod's messages are unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

const ROOT = path.resolve(__dirname, '..', '..');

test('bundled zod loads only English at start-up; other locales on first read; the index stays frozen', async () => {
  const { build } = (await import('esbuild')) as typeof import('esbuild');
  const { zodLocales } = (await import(pathToFileURL(path.join(ROOT, 'scripts', 'zod-locales-plugin.mjs')).href)) as { zodLocales: import('esbuild').Plugin };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-zod-locales-'));
  try {
    const entry = path.join(dir, 'entry.js');
    // Each locale module's first evaluation is seen through its `localeError` export being built: count the
    // wrapped modules evaluated, through esbuild's __commonJS (a module runs once, on its first require).
    fs.writeFileSync(
      entry,
      `const { z } = require('zod');
       const r = z.string().safeParse(1);
       const before = globalThis.__evaluated.filter((n) => /locales[\\\\/]/.test(n)).map((n) => n.replace(/.*[\\\\/]/, ''));
       const fr = z.locales.fr();
       const after = globalThis.__evaluated.filter((n) => /locales[\\\\/]/.test(n)).map((n) => n.replace(/.*[\\\\/]/, ''));
       let replaced = true;
       try { Object.defineProperty(z.locales, 'fr', { value: 1 }); } catch { replaced = false; }
       process.stdout.write(JSON.stringify({ before, after, frHasError: typeof fr.localeError === 'function', frozen: Object.isFrozen(z.locales), replaced, message: r.success ? '' : r.error.issues[0].message, keys: Object.keys(z.locales).length }));`,
    );
    const out = path.join(dir, 'out.js');
    await build({
      entryPoints: [entry],
      outfile: out,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      nodePaths: [path.join(ROOT, 'node_modules')],
      logLevel: 'silent',
      plugins: [zodLocales],
    });
    // Mark each wrapped module's first evaluation.
    const code = fs.readFileSync(out, 'utf8');
    const hook = '    return mod || (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod), mod.exports;';
    assert.ok(code.includes(hook), 'esbuild __commonJS helper as expected');
    fs.writeFileSync(out, 'globalThis.__evaluated = [];\n' + code.replace(hook, '    return mod || (globalThis.__evaluated.push(__getOwnPropNames(cb)[0]), (0, cb[__getOwnPropNames(cb)[0]])((mod = { exports: {} }).exports, mod)), mod.exports;'));
    const r = JSON.parse(execFileSync(process.execPath, [out], { encoding: 'utf8' })) as { before: string[]; after: string[]; frHasError: boolean; frozen: boolean; replaced: boolean; message: string; keys: number };
    assert.deepEqual(r.before.filter((n) => n !== 'index.cjs').sort(), ['en.cjs'], 'only English evaluated at start-up');
    assert.ok(r.after.includes('fr.cjs'), 'French evaluated when read');
    assert.equal(r.frHasError, true);
    assert.equal(r.frozen, true);
    assert.equal(r.replaced, false, 'a locale cannot be replaced');
    assert.equal(r.message, 'Invalid input: expected string, received number');
    assert.ok(r.keys >= 40);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
