import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageQueue, metaOf, queueFullMessage } from '../../src/host/session-parts/message-queue';

test('message queue: messages reach the agent one after another, numbered in order, a failure keeps its place', async () => {
  const order: string[] = [];
  let release!: () => void;
  const slow = new Promise<void>((r) => (release = r));
  const q = new MessageQueue(async (text, _context, nextId) => {
    if (text === 'bad') throw new Error('context unreadable');
    if (text === 'first') await slow; // its context takes a moment to read
    const id = nextId();
    order.push(`${id}:${text}`);
    return { id };
  });
  const a = q.send('first', []);
  const b = q.send('bad', []);
  const c = q.send('third', []);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [], 'nothing overtakes the first message');
  release();
  assert.deepEqual(await a, { id: 1 });
  await assert.rejects(b, /context unreadable/);
  assert.deepEqual(await c, { id: 2 }, 'a message that failed before it was numbered takes no number');
  await q.sent();
  assert.deepEqual(order, ['1:first', '2:third']);
});

test('message queue: what the chat shows of a message, and the queue-full message', () => {
  assert.deepEqual(metaOf({ text: 'hi', meta: { id: 3, display: 'hi', labels: ['a.ts'] } }), { id: 3, display: 'hi', labels: ['a.ts'] });
  assert.deepEqual(metaOf({ text: 'plain' }), { id: 0, display: 'plain', labels: [] });
  assert.equal(queueFullMessage(1), 'The agent is busy and 1 message is already queued; wait or :CabooseStop.');
  assert.equal(queueFullMessage(3), 'The agent is busy and 3 messages are already queued; wait or :CabooseStop.');
});
