/**
 * What bench/cold-timeline.ts and bench/warm-timeline.ts share: a host `node` that preloads a marks
 * module (writing its marks to a folder, one file a pid), the fake server's own marks (when a request
 * arrived, optionally when its first chunks were written), and the script's exit.
 */
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';

export const hr = (): number => Number(process.hrtime.bigint()) / 1e6;

/** A `node` for the host that preloads `bench/<preload>` with `nodeArgs`; its marks land in `<work>/marks/<pid>.json`. */
export function markedHostNode(work: string, preload: string, nodeArgs = ''): { node: string; marksDir: string } {
  const marksDir = path.join(work, 'marks');
  const node = path.join(work, 'node-marks.sh');
  fs.writeFileSync(node, `#!/bin/sh\nMARKS_DIR=${JSON.stringify(marksDir)} exec node ${nodeArgs} -r ${JSON.stringify(path.join(__dirname, preload))} "$@"\n`, { mode: 0o755 });
  return { node, marksDir };
}

/** Notes in `marks` when each HTTP request reaches a server of this process (and its first `chunks` writes); returns the undo. */
export function markServerRequests(marks: [string, number][], chunks = 0): () => void {
  const emit = http.Server.prototype.emit;
  http.Server.prototype.emit = function (this: http.Server, ev: string | symbol, ...args: unknown[]): boolean {
    if (ev === 'request') {
      marks.push([`fake server: request ${(args[0] as http.IncomingMessage).url}`, hr()]);
      if (chunks > 0) {
        const res = args[1] as http.ServerResponse;
        const w = res.write;
        let n = 0;
        res.write = function (this: http.ServerResponse, ...a: unknown[]) {
          if (++n <= chunks) marks.push([`fake server: chunk #${n} written`, hr()]);
          return (w as (...x: unknown[]) => boolean).apply(this, a);
        } as typeof res.write;
      }
    }
    return emit.apply(this, [ev, ...args] as Parameters<typeof emit>);
  } as typeof emit;
  return () => {
    http.Server.prototype.emit = emit;
  };
}

/** Runs the script's main and exits with its outcome (the Neovims and the fake server hold no handle open then). */
export function runScript(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
