/**
 * CPU work a write call needs before it returns but not before its disk work (edit_file's diff): queued
 * here, run by the disk commit once its longest wait has begun (the temp file's fsync), so it neither
 * delays the writes nor adds to the call after them. Whoever needs the result first runs it (`run`).
 */
const queue = new Set<() => void>();

export interface Deferred<T> {
  readonly promise: Promise<T>;
  /** Runs the work now, unless it already ran. */
  run: () => void;
}

/** Queues `fn`; its promise settles once it ran (runQueuedWork, or `run`). */
export function duringIo<T>(fn: () => T): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const run = (): void => {
    if (!queue.delete(run)) return;
    try {
      resolve(fn());
    } catch (err) {
      reject(err);
    }
  };
  queue.add(run);
  return { promise, run };
}

/** Runs every queued piece of work (the disk commit calls it while an fsync is under way). */
export function runQueuedWork(): void {
  for (const run of [...queue]) run();
}
