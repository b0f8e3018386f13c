/** Fakes shared by the host's unit tests (src/host/session-parts/, the chat's events, the first-request handover). */
import type { Logger } from '../../src/host/logger';
import type { NvimNotifier } from '../../src/host/lua-ui';
import type { ModelClient, ModelEvent, ModelRequest } from '../../src/agent/provider';

export const silentLog = { debug() {}, info() {}, warn() {}, error() {}, setFile() {}, setLevel() {} } as unknown as Logger;

/** An editor channel for LuaUi that keeps every chat event it is notified of. */
export function recorder(): { nvim: NvimNotifier; events: [string, Record<string, unknown>][] } {
  const events: [string, Record<string, unknown>][] = [];
  return {
    events,
    nvim: {
      notify: (_name, args) => {
        const [, [event, payload]] = args as [string, [string, Record<string, unknown>]];
        events.push([event, payload]);
      },
      request: async () => null,
    },
  };
}

/** A UI that keeps what it is sent. */
export function fakeUi(): { emit(name: string, payload?: Record<string, unknown>): void; events: [string, Record<string, unknown>][] } {
  const events: [string, Record<string, unknown>][] = [];
  return { events, emit: (name, payload = {}) => void events.push([name, payload]) };
}

/** A model that answers every request with `text` (or with a replace_selection call), keeping the requests. */
export function fakeModel(answer: { text?: string; replacement?: string }, model = 'fake'): ModelClient & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    model,
    requests,
    async *stream(req: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(req);
      if (req.signal?.aborted) throw new Error('aborted');
      const toolCalls =
        answer.replacement !== undefined ? [{ id: 'c1', name: 'replace_selection', arguments: JSON.stringify({ replacement: answer.replacement }) }] : [];
      yield { type: 'done', finishReason: toolCalls.length ? 'tool_calls' : 'stop', text: answer.text ?? '', toolCalls } as ModelEvent;
    },
  };
}
