/**
 * A fake Anthropic Messages API (`POST /v1/messages`, streamed as SSE; `POST /v1/messages/count_tokens`)
 * for agents that only speak it (Claude Code through claude-code-acp). Replies are scripted like the fake
 * OpenAI server's: text, or tool_use blocks; every request is recorded.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AnthropicRequest {
  path: string;
  /** A hung request whose client went away (a cancelled turn). */
  clientClosed?: boolean;
  body: { model?: string; messages?: { role: string; content: unknown }[]; tools?: { name: string }[]; system?: unknown; stream?: boolean; max_tokens?: number } | undefined;
}
export type AnthropicReplySpec = { text: string } | { toolUses: { name: string; input: Record<string, unknown> }[]; text?: string } | { hang: true };
export type AnthropicReply = AnthropicReplySpec | ((req: AnthropicRequest) => AnthropicReplySpec);

export interface FakeAnthropic {
  /** Base URL for ANTHROPIC_BASE_URL (no /v1). */
  readonly url: string;
  readonly requests: AnthropicRequest[];
  /** Requests that carry tools (the agent's own turns, not its side requests). */
  readonly turnRequests: AnthropicRequest[];
  script(...replies: AnthropicReply[]): void;
  close(): Promise<void>;
}

/** The text of a message's content (string or blocks; tool results included). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b: { type?: string; text?: string; content?: unknown }) => (b.type === 'text' ? (b.text ?? '') : b.type === 'tool_result' ? contentText(b.content) : ''))
    .join('\n');
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const requests: AnthropicRequest[] = [];
  const queue: AnthropicReply[] = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString('utf8')));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0];
      let body: AnthropicRequest['body'];
      try {
        body = raw ? (JSON.parse(raw) as AnthropicRequest['body']) : undefined;
      } catch {
        body = undefined;
      }
      const r: AnthropicRequest = { path, body };
      requests.push(r);
      if (path.endsWith('/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 100 }));
        return;
      }
      if (!path.endsWith('/v1/messages')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `no ${path}` } }));
        return;
      }
      // Side requests (titles, summaries) carry no tools: they get a short text and leave the script alone.
      const isTurn = (body?.tools?.length ?? 0) > 0;
      const next = isTurn ? queue.shift() : undefined;
      const picked: AnthropicReplySpec = next ? (typeof next === 'function' ? next(r) : next) : { text: 'ok' };
      if ('hang' in picked) {
        // Never answered: the request stays open until the client goes away.
        req.socket.on('close', () => (r.clientClosed = true));
        return;
      }
      const spec = picked;
      const id = `msg_${++n}`;
      const events: [string, unknown][] = [];
      events.push(['message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model: body?.model ?? 'fake', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 0 } } }]);
      let index = 0;
      const text = 'toolUses' in spec ? spec.text : spec.text;
      if (text) {
        events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
        events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } }]);
        events.push(['content_block_stop', { type: 'content_block_stop', index }]);
        index++;
      }
      if ('toolUses' in spec) {
        for (const t of spec.toolUses) {
          events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: `toolu_${n}_${index}`, name: t.name, input: {} } }]);
          events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(t.input) } }]);
          events.push(['content_block_stop', { type: 'content_block_stop', index }]);
          index++;
        }
      }
      events.push(['message_delta', { type: 'message_delta', delta: { stop_reason: 'toolUses' in spec ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }]);
      events.push(['message_stop', { type: 'message_stop' }]);
      if (body?.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const [ev, data] of events) res.write(`event: ${ev}\ndata: ${JSON.stringify(data)}\n\n`);
        res.end();
        return;
      }
      const content = [
        ...(text ? [{ type: 'text', text }] : []),
        ...('toolUses' in spec ? spec.toolUses.map((t, i) => ({ type: 'tool_use', id: `toolu_${n}_${i}`, name: t.name, input: t.input })) : []),
      ];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model: body?.model ?? 'fake', content, stop_reason: 'toolUses' in spec ? 'tool_use' : 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 5 } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get turnRequests() {
      return requests.filter((r) => r.path.endsWith('/v1/messages') && (r.body?.tools?.length ?? 0) > 0);
    },
    script: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
