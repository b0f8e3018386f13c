/**
 * The work a session runtime still has going, so that what it owns (its SQLite store above all) is closed
 * only once that work has settled. A session replaced by :CabooseNew, a reopened or a deleted one is
 * stopped at once, but a message on its way to the agent, the stopped turn unwinding, a title request or a
 * command the user ran just before still finish their writes; closing the store under them failed them
 * ("The database connection is not open") and showed that error in the chat that replaced the session.
 */
export class InFlight {
  private readonly pending = new Set<Promise<unknown>>();
  private ending: Promise<void> | null = null;

  /** Runs `fn` now as work of this runtime (what it throws is its promise's rejection); `settled` waits for it. */
  hold<T>(fn: () => Promise<T> | T): Promise<T> {
    let p: Promise<T>;
    try {
      p = Promise.resolve(fn());
    } catch (err) {
      p = Promise.reject(err);
    }
    this.pending.add(p);
    const done = (): void => void this.pending.delete(p);
    p.then(done, done);
    return p;
  }

  /** How many held calls have not settled yet. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Resolves once every held call has settled, those started while it waits included, and `also()` (the
   * runtime's own work: its message queue, its agent's turn) has settled after them. Never rejects.
   */
  settled(also: () => Promise<unknown> = () => Promise.resolve()): Promise<void> {
    this.ending ??= (async () => {
      for (;;) {
        await Promise.allSettled([...this.pending]);
        await also().catch(() => undefined);
        if (this.pending.size === 0) return;
      }
    })();
    return this.ending;
  }
}
