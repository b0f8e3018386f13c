import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';

/** A real concurrent attacker: a process exchanging two paths with renameat2(RENAME_EXCHANGE) in a loop. */
export interface Swapper {
  /** Stops the loop (the paths end where they started) and resolves with the number of exchanges done. */
  stop(): Promise<number>;
}

const SCRIPT = path.join(__dirname, 'rename-exchange.py');

/** Why a swapper cannot run here, or null. Needs Linux and python3 (ctypes calls renameat2). */
export function swapperUnavailable(): string | null {
  if (process.platform !== 'linux') return 'skipped: renameat2 needs Linux';
  const r = spawnSync('python3', ['-c', 'import ctypes; ctypes.CDLL(None).renameat2'], { stdio: 'ignore' });
  if (r.error || r.status !== 0) return 'skipped: python3 with ctypes and renameat2 not found on PATH';
  return null;
}

/** Starts exchanging `a` and `b` (both must exist) and resolves once the first exchange happened. */
export async function startSwapper(a: string, b: string): Promise<Swapper> {
  const child = spawn('python3', [SCRIPT, a, b], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  const exited = new Promise<number>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => {
      const m = /swaps (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
      else reject(new Error(`swapper ended without a count: ${out.trim()}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c: string) => {
      out += c;
      if (out.includes('ready\n')) resolve();
      if (out.includes('error ')) reject(new Error(`swapper: ${out.trim()}`));
    });
    exited.catch(reject);
    child.on('close', () => reject(new Error(`swapper exited early: ${out.trim()}`)));
  });
  return {
    stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
