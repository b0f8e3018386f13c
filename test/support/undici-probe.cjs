// Preload for a host under test (`node -r`): writes to $UNDICI_PROBE_OUT, every 50 ms and at exit, whether
// Node's fetch implementation (undici) has been loaded in this process (test/e2e/host-bundle.test.ts).
'use strict';
const fs = require('fs');
const out = process.env.UNDICI_PROBE_OUT;
if (!out) throw new Error('undici-probe.cjs: UNDICI_PROBE_OUT is not set');
const write = () => {
  try {
    fs.writeFileSync(out, JSON.stringify({ pid: process.pid, undici: process.moduleLoadList.some((m) => m.includes('undici')) }));
  } catch {
    // the test reads what it can
  }
};
write();
setInterval(write, 50).unref();
process.on('exit', write);
