import { z } from 'zod';

/**
 * zod 4 compiles each object schema's parser with `new Function` on its first parse (its "JIT"). The host
 * parses most schemas once or a few times per process (host.init's config, one RPC call's params, one
 * tool call's arguments), so the compile costs more than it saves: the first parse of host.init took
 * 20–30 ms of CPU with it, 3–7 ms without (issue 24, BENCHMARKS.md "the cold path, second pass"); and code
 * made by `new Function` is never in the V8 code cache the host starts from. Validation is the same:
 * zod's interpreted path checks exactly what the compiled one does.
 *
 * zod reads this setting when a schema is *built*, so this module must be evaluated before any module
 * that builds one: it is main.ts's first import.
 */
z.config({ jitless: true });
