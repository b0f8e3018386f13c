// Builds dist/host.bundle.js: the host (dist/host/main.js, compiled by tsc) and its dependencies in one
// file, so a cold start reads and compiles one file instead of resolving and reading hundreds of modules.
// Run by `npm run build` after tsc. better-sqlite3 stays outside (a native addon); node-client's logger
// module is replaced by ours (src/host/client-logger.ts), which keeps winston out of the host.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

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

await build({
  entryPoints: [path.join(root, 'dist', 'host', 'main.js')],
  outfile: path.join(root, 'dist', 'host.bundle.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['better-sqlite3'],
  define: { __CABOOSE_BUNDLED__: 'true' },
  minify: process.env.CABOOSE_BUNDLE_MINIFY !== "0",
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  // main.ts resolves node-client's logger only when it is not bundled.
  logOverride: { 'require-resolve-not-external': 'silent' },
  plugins: [clientLogger],
});
