import path from 'node:path';
import { readFile } from 'node:fs/promises';

// zod's locale index (zod/v4/locales/index.cjs, what `z.locales` exports) loads all ~50 locales at start-up,
// and its closing "seal" calls every getter; the host uses only English (loaded separately by zod's
// classic entry). Here each locale is required on first read of its getter, and the index is frozen
// with `Object.freeze` (accessors become non-configurable: nothing can replace a locale) instead of
// sealed by evaluating them all. ≈ 1–1.5 ms of a cold start (issue 24). The build fails if zod changes
// the file's shape.
export const zodLocales = {
  name: 'caboose-zod-locales',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.cjs$/ }, async (args) => {
      let source = await readFile(args.path, 'utf8');
      const requires = /^var (\w+) = require\(("\.\/[\w-]+\.cjs")\);$/gm;
      const names = [...source.matchAll(requires)].map((m) => m[1]);
      const seal = source.indexOf('// seal-cjs-exports');
      if (names.length < 40 || seal < 0) throw new Error(`bundle-host: zod's locales index changed shape (${names.length} locales, seal ${seal >= 0}); update the caboose-zod-locales plugin`);
      source = source.slice(0, seal) + 'Object.freeze(exports);\n';
      source = source.replace(requires, (_, v, file) => `var ${v}__m; var ${v} = () => (${v}__m ??= require(${file}));`);
      for (const v of names) {
        const use = `__importDefault(${v})`;
        if (source.split(use).length !== 2) throw new Error(`bundle-host: zod's locales index: ${v} is not read once through __importDefault`);
        source = source.replace(use, `__importDefault(${v}())`);
      }
      if (/^var \w+ = require\(/m.test(source)) throw new Error('bundle-host: zod locales index: a require left at load');
      return { contents: source, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};
