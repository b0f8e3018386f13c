import fs from 'node:fs';
import { createHash } from 'node:crypto';

/** sha256 of a file's bytes, read in 1 MiB pieces (null when it cannot be read). Crash recovery and the trash use it. */
export function sha256OfFileSync(p: string): string | null {
  try {
    const h = createHash('sha256');
    const fd = fs.openSync(p, 'r');
    try {
      const buf = Buffer.allocUnsafe(1 << 20);
      for (;;) {
        const n = fs.readSync(fd, buf, 0, buf.length, null);
        if (n === 0) break;
        h.update(buf.subarray(0, n));
      }
    } finally {
      fs.closeSync(fd);
    }
    return h.digest('hex');
  } catch {
    return null;
  }
}
