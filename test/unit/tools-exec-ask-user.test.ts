import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createAskUserTool } from '../../src/tools/ask_user';
import { ToolRegistry } from '../../src/tools/registry';
import type { AskRequest, ToolContext } from '../../src/tools/tool';
import { testToolContext } from '../support/tool-context';

const makeCtx = (extra: Partial<ToolContext> = {}): ToolContext => testToolContext(undefined, extra);

const registry = new ToolRegistry([createAskUserTool()]);

describe('ask_user', () => {
  test('passes the question and choices to ctx.ask and returns the answer', async () => {
    const asked: AskRequest[] = [];
    const ctx = makeCtx({
      ask: async (req) => {
        asked.push(req);
        return 'tabs';
      },
    });
    const res = await registry.call('ask_user', { question: 'Tabs or spaces?', choices: ['tabs', 'spaces'] }, ctx);
    assert.deepEqual(res, { ok: true, data: { answer: 'tabs' } });
    assert.deepEqual(asked, [{ question: 'Tabs or spaces?', choices: ['tabs', 'spaces'] }]);
  });

  test('without choices only the question is sent', async () => {
    const asked: AskRequest[] = [];
    const ctx = makeCtx({ ask: async (req) => (asked.push(req), 'ok') });
    await registry.call('ask_user', { question: 'Proceed?' }, ctx);
    assert.deepEqual(asked, [{ question: 'Proceed?' }]);
  });

  test('a dismissed question is ok:true with cancelled', async () => {
    const res = await registry.call('ask_user', { question: 'Q?' }, makeCtx({ ask: async () => null }));
    assert.deepEqual(res, { ok: true, data: { answer: null, cancelled: true } });
  });

  test('no UI attached is an error telling the model to proceed', async () => {
    const res = await registry.call('ask_user', { question: 'Q?' }, makeCtx());
    assert.equal(res.ok, false);
    if (!res.ok) {
      assert.match(res.error.message, /No user interface is attached/);
      assert.match(res.error.suggestedAction ?? '', /assumption/);
    }
  });

  test('an ask that rejects is reported the same way, with its reason', async () => {
    const res = await registry.call('ask_user', { question: 'Q?' }, makeCtx({ ask: () => Promise.reject(new Error('nvim detached')) }));
    assert.equal(res.ok, false);
    if (!res.ok) assert.match(res.error.message, /No user interface is attached.*nvim detached/);
  });

  test('aborting while the question is open is cancelled', async () => {
    const controller = new AbortController();
    const ctx = makeCtx({
      signal: controller.signal,
      ask: () => {
        queueMicrotask(() => controller.abort());
        return new Promise<string | null>(() => undefined);
      },
    });
    const res = await registry.call('ask_user', { question: 'Q?' }, ctx);
    assert.equal(res.ok, false);
    if (!res.ok) assert.equal(res.error.kind, 'cancelled');
  });

  test('an empty question or empty choices list is invalid_arguments', async () => {
    const ctx = makeCtx({ ask: async () => 'x' });
    for (const args of [{ question: '' }, { question: 'Q?', choices: [] }]) {
      const res = await registry.call('ask_user', args, ctx);
      assert.equal(res.ok, false);
      if (!res.ok) assert.equal(res.error.kind, 'invalid_arguments');
    }
  });
});
