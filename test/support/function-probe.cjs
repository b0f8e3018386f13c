// Preload for a host under test (`node -r`): counts code compiled through the global Function constructor
// (`new Function(...)` or `Function(...)`: zod's JIT, any other code generator) in this process, with the
// first stack lines of each, and writes them to $FUNCTION_PROBE_OUT every 50 ms and at exit
// (test/e2e/zod-jitless-session.test.ts).
'use strict';
const fs = require('fs');
const out = process.env.FUNCTION_PROBE_OUT;
if (!out) throw new Error('function-probe.cjs: FUNCTION_PROBE_OUT is not set');
const Orig = globalThis.Function;
const seen = [];
const note = () => {
  // The host may lower Error.stackTraceLimit: this stack is wanted whole.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 20;
  const stack = String(new Error().stack).split('\n').slice(3, 12).map((l) => l.trim());
  Error.stackTraceLimit = limit;
  seen.push(stack);
};
globalThis.Function = new Proxy(Orig, {
  construct(t, args, nt) {
    note();
    return Reflect.construct(t, args, nt === globalThis.Function ? t : nt);
  },
  apply(t, self, args) {
    note();
    return Reflect.apply(t, self, args);
  },
});
const write = () => {
  try {
    fs.writeFileSync(out, JSON.stringify({ pid: process.pid, count: seen.length, stacks: seen.slice(0, 20) }));
  } catch {
    // the test reads what it can
  }
};
write();
setInterval(write, 50).unref();
process.on('exit', write);
