// @ts-check
/**
 * A concurrent writer for stress/writers.ts: appends a numbered line `W<id>-<n>` to a file by path
 * (open with O_APPEND|O_CREAT, write, close: what `echo >> file` does) about every millisecond, in
 * bursts of 1–40 lines with pauses of 0–30 ms between them (so that some agent calls find a quiet file
 * and succeed), until SIGTERM; then prints how many lines it wrote. argv: <file> <id>
 */
'use strict';
const fs = require('node:fs');

const [file, id] = process.argv.slice(2);
let n = 0;
let stop = false;
let burst = 0;
process.on('SIGTERM', () => {
  stop = true;
});
function tick() {
  if (stop) {
    process.stdout.write(`${n}\n`, () => process.exit(0));
    return;
  }
  fs.appendFileSync(file, `W${id}-${n}\n`);
  n++;
  if (burst <= 0) burst = 1 + Math.floor(Math.random() * 40);
  burst--;
  setTimeout(tick, burst === 0 ? Math.floor(Math.random() * 30) : 1);
}
process.stdout.write('ready\n');
tick();
