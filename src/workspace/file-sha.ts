/** sha256 in hex, the file identity of the stale-file protocol: of bytes, on the thread pool, or of a file on disk. */
import fs from 'node:fs';
import { createHash, webcrypto } from 'node:crypto';

export function sha256Hex(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** sha256Hex computed on the thread pool (the calling thread stays free). */
export async function sha256HexAsync(bytes: Buffer): Promise<string> {
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', bytes)).toString('hex');
}

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
