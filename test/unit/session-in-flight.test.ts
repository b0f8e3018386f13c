import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InFlight } from '../../src/host/session-parts/in-flight';

const later = <T>(v: T, ms = 5) => new Promise<T>((r) => setTimeout(() => r(v), ms));

test('in flight: settled() waits for held work, work held while it waits, and the runtime’s own work after it', async () => {
  const f = new InFlight();
  const log: string[] = [];
  const a = f.hold(async () => {
    await later(null, 10);
    log.push('a');
    // Work started by held work while the end waits is waited for too.
    void f.hold(async () => {
      await later(null, 10);
      log.push('b');
    });
    return 1;
  });
  let ownDone = 0;
  const ended = f.settled(async () => {
    await later(null, 2);
    ownDone++;
  }).then(() => log.push('settled'));
  assert.equal(await a, 1);
  await ended;
  assert.deepEqual(log, ['a', 'b', 'settled']);
  assert.ok(ownDone >= 1);
  assert.equal(f.size, 0);
});

test('in flight: hold runs fn at once and passes its result or failure; failures do not stop settled()', async () => {
  const f = new InFlight();
  let ran = false;
  const p = f.hold(() => {
    ran = true;
    return 'sync';
  });
  assert.equal(ran, true, 'started synchronously');
  assert.equal(await p, 'sync');
  await assert.rejects(
    f.hold(() => {
      throw new Error('boom');
    }),
    /boom/,
  );
  await assert.rejects(f.hold(async () => Promise.reject(new Error('late'))), /late/);
  await f.settled(() => Promise.reject(new Error('own work failed')));
  assert.equal(f.size, 0);
  // Called again: the same end.
  assert.equal(f.settled(), f.settled());
});
