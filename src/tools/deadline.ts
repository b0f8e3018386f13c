/** An abort signal that fires when the caller aborts or after `timeoutMs`, telling the two apart. */
export interface Deadline {
  readonly signal: AbortSignal;
  timedOut(): boolean;
  dispose(): void;
}

export function deadline(parent: AbortSignal, timeoutMs: number): Deadline {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = (): void => controller.abort();
  parent.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => expired,
    dispose() {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}
