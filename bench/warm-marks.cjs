// Preload for the host in bench/warm-timeline.ts (`node -r`): hrtime marks (CLOCK_MONOTONIC, Neovim's
// uv.hrtime's clock) of every message in and out and of the model request, written to
// $MARKS_DIR/<pid>.json as the host exits. Bench only.
'use strict';
const fs = require('fs');
const marks = [];
const mark = (s) => marks.push([s, Number(process.hrtime.bigint())]);
globalThis.__cabooseMark = mark;
const names = (buf) => {
  const s = buf.toString('latin1');
  const m = s.match(/session\.send|host\.init|caboose\.call|assistant_delta|assistant_start|assistant_end|user_message|"state"|state|usage|session_info|reply/g);
  return m ? [...new Set(m)].join(',') : '';
};
const origPush = require('stream').Readable.prototype.push;
require('stream').Readable.prototype.push = function (chunk, ...a) {
  if (this === process.stdin && chunk) mark(`stdin data ${chunk.length} B ${names(Buffer.from(chunk))}`);
  return origPush.call(this, chunk, ...a);
};
const origWrite = process.stdout.write.bind(process.stdout);
process.stdout.write = function (chunk, ...a) {
  mark(`stdout write ${chunk.length} B ${Buffer.isBuffer(chunk) ? names(chunk) : ''}`);
  return origWrite(chunk, ...a);
};
const http = require('http');
const origRequest = http.request;
http.request = function (...a) {
  mark('http.request called');
  const req = origRequest.apply(this, a);
  const origEnd = req.end;
  req.end = function (...b) { mark('http request end() (body written)'); return origEnd.apply(this, b); };
  req.once('socket', (s) => { mark(`socket assigned (reused: ${!s.connecting})`); });
  req.once('response', (res) => {
    mark('response headers');
    // Not a 'data' listener: that would switch the body to flowing mode before its reader attaches.
    let n = 0;
    const origResPush = res.push;
    res.push = function (d, ...b) { if (d && ++n <= 3) mark(`response data #${n} ${d.length} B read`); return origResPush.call(this, d, ...b); };
  });
  return req;
};
const dir = process.env.MARKS_DIR;
if (!dir) throw new Error('warm-marks.cjs: MARKS_DIR is not set');
const dump = () => { try { fs.mkdirSync(dir, { recursive: true }); fs.writeFileSync(`${dir}/${process.pid}.json`, JSON.stringify(marks)); } catch {} };
process.on('exit', dump);
