/**
 * The plain client the stream benchmarks compare the host with: node:http, events split on blank lines, each
 * `data:` JSON-parsed and its delta.content handed on. Used by bench/raw-stream.ts (in a process of its own,
 * like the host) and bench/provider-cpu.ts (beside the provider layer).
 */
import http from 'node:http';

const BODY = JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'stream please' }] });

/** Reads one chat-completions stream from `base` (ending in /v1); resolves at `[DONE]` or when the body ends. */
export function plainSseRead(base: string, onDelta: (delta: string) => void): Promise<void> {
  const url = new URL(base.replace(/\/+$/, '') + '/chat/completions');
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY), authorization: 'Bearer test-key' };
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, i);
          buf = buf.slice(i + 2);
          for (const line of event.split('\n')) {
            if (!line.startsWith('data: ')) continue;
            const data = line.slice(6);
            if (data === '[DONE]') return resolve();
            const delta = (JSON.parse(data) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content;
            if (delta) onDelta(delta);
          }
        }
      });
      res.on('end', () => resolve());
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(BODY);
  });
}
