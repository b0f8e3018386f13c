// Which Neovim binaries the tests run against.
//
// Normally the ones test/support/get-nvim.mjs provided, listed in .cache/nvim/manifest.json
// (newest first). The env var CABOOSE_TEST_NVIM (one path, or several separated by commas)
// overrides that; each such binary's version is read from its `--version` output.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export interface NvimBinary {
  /** Full version, e.g. "0.12.4". */
  version: string;
  /** Absolute path of an executable that behaves like `nvim`. */
  path: string;
}

export const OVERRIDE_ENV = 'CABOOSE_TEST_NVIM';
export const DEFAULT_MANIFEST = path.resolve(__dirname, '..', '..', '.cache', 'nvim', 'manifest.json');

const ManifestSchema = z.object({
  version: z.literal(1),
  nvim: z.array(
    z.object({
      version: z.string().regex(/^\d+\.\d+\.\d+$/),
      path: z.string().min(1),
      source: z.string().optional(),
    }),
  ),
});

const FETCH_HINT = 'run `node test/support/get-nvim.mjs` (npm test does) or set CABOOSE_TEST_NVIM=/path/to/nvim';

/** "NVIM v0.12.4" (first line of `nvim --version`) -> "0.12.4", or null. */
export function parseNvimVersion(text: string): string | null {
  const m = /NVIM v(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}

function assertExecutable(file: string, origin: string): void {
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    throw new Error(`nvim binary ${file} (from ${origin}) is missing or not executable; ${FETCH_HINT}`);
  }
}

function fromOverride(value: string): NvimBinary[] {
  const paths = value.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
  if (paths.length === 0) throw new Error(`${OVERRIDE_ENV} is set but lists no path`);
  return paths.map((p) => {
    const file = path.resolve(p);
    assertExecutable(file, OVERRIDE_ENV);
    let out: string;
    try {
      out = execFileSync(file, ['--version'], { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      throw new Error(`${file} --version failed (from ${OVERRIDE_ENV}): ${e instanceof Error ? e.message : String(e)}`);
    }
    const version = parseNvimVersion(out);
    if (version === null) throw new Error(`${file} (from ${OVERRIDE_ENV}) does not look like Neovim: ${out.split('\n')[0]}`);
    return { version, path: file };
  });
}

function fromManifest(file: string): NvimBinary[] {
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch {
    throw new Error(`no Neovim for tests: ${file} not found; ${FETCH_HINT}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`no Neovim for tests: ${file} is not valid JSON; ${FETCH_HINT}`);
  }
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) throw new Error(`no Neovim for tests: ${file} is malformed (${parsed.error.message}); ${FETCH_HINT}`);
  const list = parsed.data.nvim.map((e) => ({ version: e.version, path: e.path }));
  if (list.length === 0) throw new Error(`no Neovim for tests: ${file} lists none; ${FETCH_HINT}`);
  for (const e of list) assertExecutable(e.path, file);
  return list;
}

/**
 * The Neovim binaries to test against, newest first for the manifest (override order is kept).
 * Throws a descriptive Error when there is none or one listed is unusable.
 */
export function nvimBinaries(env: NodeJS.ProcessEnv = process.env, manifest: string = DEFAULT_MANIFEST): NvimBinary[] {
  const override = env[OVERRIDE_ENV];
  if (override !== undefined && override.trim() !== '') return fromOverride(override);
  return fromManifest(manifest);
}
