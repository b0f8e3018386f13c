/**
 * The host's RPC client (src/host/main.ts hostClientClass, issue 24): node-client's NeovimClient without its
 * start-up handshake. The stock client asks Neovim for `nvim_get_api_info` and holds every incoming call
 * until that answer arrives; the host's client handles the first call at once and never asks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { hostClientClass } from '../../src/host/main';

const silent = { level: 'error', debug() {}, info() {}, warn() {}, error() {} };

test('a notification and a request from Neovim are handled without an nvim_get_api_info round trip', async () => {
  const HostClient = hostClientClass();
  // Two clients back to back: `editor` plays Neovim's side of the channel (it never answers anything).
  const toHost = new PassThrough();
  const toEditor = new PassThrough();
  const host = new HostClient({ logger: silent as never });
  host.attach({ reader: toHost, writer: toEditor });
  const editor = new HostClient({ logger: silent as never });
  editor.attach({ reader: toEditor, writer: toHost });
  const askedOfEditor: string[] = [];
  editor.on('request', (method: string, _args: unknown[], resp: { send(v: unknown): void }) => {
    askedOfEditor.push(method);
    resp.send(null);
  });

  const seen = new Promise<[string, unknown[]]>((resolve) => host.on('notification', (m: string, a: unknown[]) => resolve([m, a])));
  host.on('request', (method: string, args: unknown[], resp: { send(v: unknown): void }) => resp.send({ echo: method, args }));

  editor.notify('caboose.call', [{ id: 1, method: 'host.init', params: {} }]);
  const [method, args] = await Promise.race([seen, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the notification was held back')), 2000))]);
  assert.equal(method, 'caboose.call');
  assert.deepEqual(args, [{ id: 1, method: 'host.init', params: {} }]);
  assert.deepEqual(await editor.request('session.send', [{ text: 'hi' }]), { echo: 'session.send', args: [{ text: 'hi' }] });
  // Calls to Neovim still work, and the host never asked for the API's metadata.
  await host.request('nvim_exec_lua', ['return 1', []]);
  assert.deepEqual(askedOfEditor, ['nvim_exec_lua']);
  toHost.end();
  toEditor.end();
});
