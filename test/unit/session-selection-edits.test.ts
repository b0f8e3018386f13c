import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SelectionEdits } from '../../src/host/session-parts/selection-edits';
import type { ModelClient, ModelEvent } from '../../src/agent/provider';
import { fakeModel } from '../support/session-parts';

const params = { id: 1, instruction: 'uppercase', start_line: 1, end_line: 2, text: 'a\nb' };

test('selection edits: the replacement lines and their hunks, nothing written', async () => {
  const edits = new SelectionEdits(() => fakeModel({ replacement: 'A\nb' }));
  const r = await edits.run(params);
  assert.ok(!('cancelled' in r));
  assert.deepEqual(r.lines, ['A', 'b']);
  assert.equal(r.hunks.length, 1);
  assert.deepEqual([r.hunks[0].removed, r.hunks[0].added], [['a'], ['A']]);
  assert.equal(edits.cancel(1), false, 'a finished request is no longer running');
});

test('selection edits: a cancelled request says so; dispose cancels the running ones', async () => {
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const hanging: ModelClient = {
    model: 'slow',
    async *stream(req): AsyncIterable<ModelEvent> {
      started();
      await new Promise((_, reject) => req.signal!.addEventListener('abort', () => reject(new Error('aborted'))));
    },
  };
  const edits = new SelectionEdits(() => hanging);
  const a = edits.run(params);
  await running;
  assert.equal(edits.cancel(1), true);
  assert.deepEqual(await a, { cancelled: true });
  const b = edits.run({ ...params, id: 2 });
  await new Promise((r) => setImmediate(r));
  edits.dispose();
  assert.deepEqual(await b, { cancelled: true });
});
