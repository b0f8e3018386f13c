// Builds dist/host.bundle.js: the host (dist/host/main.js, compiled by tsc) and its dependencies in one
// file, so a cold start reads and compiles one file instead of resolving and reading hundreds of modules.
// Run by `npm run build` after tsc. better-sqlite3 stays outside (a native addon); node-client's logger
// module is replaced by ours (src/host/client-logger.ts), which keeps winston out of the host.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { build } from 'esbuild';
import { zodLocales } from './zod-locales-plugin.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const clientLogger = {
  name: 'caboose-client-logger',
  setup(b) {
    b.onResolve({ filter: /utils\/logger(\.js)?$/ }, (args) =>
      args.importer.includes(`${path.sep}node_modules${path.sep}neovim${path.sep}`)
        ? { path: path.join(root, 'dist', 'host', 'client-logger.js') }
        : undefined,
    );
  },
};

// The openai SDK builds each request's headers with the global `Headers` and tests each body against the
// global `FormData`; the first read of either loads undici (Node's fetch, 10–30 ms on a cold start), which
// the host does not otherwise need (its model requests go over node:http, src/agent/node-fetch.ts). Those
// SDK modules get src/agent/lite-headers.ts's stand-ins instead (test/unit/lite-headers.test.ts).
const liteHeaders = path.join(root, 'dist', 'agent', 'lite-headers.js');
const patched = new Set();
const sdkGlobals = {
  name: 'caboose-sdk-globals',
  setup(b) {
    const sep = '[\\/]';
    const files = new RegExp(`${sep}node_modules${sep}openai${sep}(client|internal${sep}headers|internal${sep}utils${sep}log)\\.m?js$`);
    b.onLoad({ filter: files }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const file = path.basename(args.path).replace(/\.m?js$/, '');
      patched.add(file);
      const stand = file === 'client' ? 'var FormData = __caboose_lite.FormDataCheck;' : 'var Headers = __caboose_lite.LiteHeaders;';
      const prelude = `var __caboose_lite = require(${JSON.stringify(liteHeaders)}); ${stand}\n`;
      return { contents: prelude + source, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['better-sqlite3'],
  minify: process.env.CABOOSE_BUNDLE_MINIFY !== "0",
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  // main.ts resolves node-client's logger only when it is not bundled.
  logOverride: { 'require-resolve-not-external': 'silent' },
  plugins: [clientLogger, sdkGlobals, zodLocales],
};

await build({
  ...common,
  entryPoints: [path.join(root, 'dist', 'host', 'main.js')],
  outfile: path.join(root, 'dist', 'host.bundle.js'),
  define: { __CABOOSE_BUNDLED__: 'true' },
});
// An ASCII-only bundle is a one-byte string in V8: half the memory of a two-byte one, and faster to read,
// decode and hash on every start (1.5–2 ms of CPU measured with the code cache). esbuild escapes non-ASCII
// in strings and templates but prints regular-expression literals as written: such a character in a
// regex (write it as \uXXXX) fails the build here. Not checked for the readable bundle
// (CABOOSE_BUNDLE_MINIFY=0, for profiling): it keeps the sources' comments, which may be any text.
if (process.env.CABOOSE_BUNDLE_MINIFY !== '0') {
  const out = await readFile(path.join(root, 'dist', 'host.bundle.js'), 'utf8');
  const at = out.search(/[^\x00-\x7f]/);
  if (at >= 0) throw new Error(`bundle-host: dist/host.bundle.js is not ASCII at ${at}: …${out.slice(Math.max(0, at - 60), at + 20)}… (write the character as \\uXXXX in the source)`);
}
// A new SDK that moved these modules would silently load undici again: the build says so instead.
if (['client', 'headers', 'log'].some((f) => !patched.has(f))) throw new Error(`bundle-host: the openai SDK modules given lite Headers/FormData were not all found (patched: ${[...patched].join(', ')})`);

// The first-request bundle (src/host/first-main.ts, issue 24): what a cold start needs to answer host.init
// and send the first message's model request before the rest of the host (the bundle above) loads. The
// tool list that request sends is generated here from the tools' definitions (src/host/first-tools-gen.ts)
// and built into it; dist/first-tools.json keeps a copy for test/unit/first-tools.test.ts.
const require = createRequire(import.meta.url);
const { generateFirstTools } = require(path.join(root, 'dist', 'host', 'first-tools-gen.js'));
const firstTools = JSON.stringify(generateFirstTools());
await writeFile(path.join(root, 'dist', 'first-tools.json'), firstTools);
// host.init's and send's validators for the first-request bundle, generated from the host's zod schemas
// (src/host/first-validate-gen.ts: Ajv standalone code; test/unit/first-validate.test.ts checks it is
// current and refuses what zod refuses): the first-request bundle then holds no zod.
const { generateFirstValidators } = require(path.join(root, 'dist', 'host', 'first-validate-gen.js'));
await writeFile(path.join(root, 'dist', 'host', 'first-validators.js'), generateFirstValidators());
patched.clear();
// zod's locale index (`z.locales`, ~320 KB of the ~50 languages) is not read by the first-request bundle (its
// messages are zod's English, which zod's entry loads by itself): an empty, frozen index there.
const noZodLocales = {
  name: 'caboose-first-no-zod-locales',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.cjs$/ }, () => ({ contents: 'module.exports = Object.freeze({});', loader: 'js' }));
  },
};
const first = await build({
  ...common,
  plugins: [clientLogger, sdkGlobals, noZodLocales],
  entryPoints: [path.join(root, 'dist', 'host', 'first-main.js')],
  outfile: path.join(root, 'dist', 'host-first.bundle.js'),
  metafile: true,
  define: { __CABOOSE_BUNDLED__: 'true', __CABOOSE_FIRST_TOOLS__: JSON.stringify(firstTools) },
});
// zod stays out of the first-request bundle (its validators are generated): a new import of it there fails the build.
const zodIn = Object.keys(first.metafile.inputs).filter((f) => /[\\/]node_modules[\\/]zod[\\/]/.test(f));
if (zodIn.length > 0) throw new Error(`bundle-host: zod reached the first-request bundle (${zodIn[0]}; see \`npx esbuild --analyze\`): import it from the host's modules only`);
if (['client', 'headers', 'log'].some((f) => !patched.has(f))) throw new Error(`bundle-host: the first-request bundle's openai SDK modules were not all given lite Headers/FormData (patched: ${[...patched].join(', ')})`);
if (process.env.CABOOSE_BUNDLE_MINIFY !== '0') {
  const out = await readFile(path.join(root, 'dist', 'host-first.bundle.js'), 'utf8');
  const at = out.search(/[^\x00-\x7f]/);
  if (at >= 0) throw new Error(`bundle-host: dist/host-first.bundle.js is not ASCII at ${at}`);
}
