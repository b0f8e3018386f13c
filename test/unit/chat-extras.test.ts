/** Issue 22: the debug view's masking and the image attachments' rules (pure parts). */
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { debugView, maskSecrets } from '../../src/host/debug-view';
import { formatSize, imagePolicyFor, imageType, readImages } from '../../src/host/image-attachments';
import { clearSecrets, registerSecret } from '../../src/store/redact';
import type { Exchange } from '../../src/agent/provider';
import { composeMessage } from '../../src/host/message-context';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex');

describe('debug view', () => {
  afterEach(() => clearSecrets());
  const exchange = (over: Partial<Exchange> = {}): Exchange => ({
    url: 'http://user:pw-secret-1@host/v1/chat/completions',
    model: 'm',
    body: { model: 'm', messages: [{ role: 'user', content: 'key sk-live-ABCDEFGH "quoted"' }] },
    headers: { 'X-Api-Key': 'abc', 'OpenAI-Organization': 'org-1', 'X-Auth-Token': 't' },
    authorization: true,
    startedAt: 0,
    chunks: 3,
    done: true,
    ...over,
  });

  it('says null before any request', () => {
    assert.deepEqual(debugView(undefined, []), { request: null });
  });

  it('masks the Authorization header, credential headers, the URL password, registered and configured secrets (as in JSON text too)', () => {
    registerSecret('sk-live-ABCDEFGH');
    const v = debugView(exchange({ status: 200, finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 } }), ['other-provider-key"x']);
    assert.equal(v.request!.headers.Authorization, 'Bearer [redacted]');
    assert.equal(v.request!.headers['X-Api-Key'], '[redacted]');
    assert.equal(v.request!.headers['X-Auth-Token'], '[redacted]');
    assert.equal(v.request!.headers['OpenAI-Organization'], 'org-1');
    assert.equal(v.request!.url, 'http://[redacted]@host/v1/chat/completions');
    const body = JSON.parse(v.request!.body_json) as { messages: { content: string }[] };
    assert.equal(body.messages[0].content, 'key [redacted] "quoted"');
    assert.equal(v.response!.status, 200);
    assert.deepEqual(v.response!.usage, { promptTokens: 1, completionTokens: 2, totalTokens: 3 });
    // A configured secret holding a quote is masked in its JSON-escaped form too.
    assert.equal(maskSecrets(JSON.stringify({ k: 'other-provider-key"x' }), ['other-provider-key"x']), '{"k":"[redacted]"}');
  });

  it("keeps a failed request's error body, masked", () => {
    registerSecret('sk-live-ABCDEFGH');
    const v = debugView(exchange({ status: 401, error: { kind: 'auth', message: 'bad key sk-live-ABCDEFGH', status: 401, body: { message: 'Incorrect API key sk-live-ABCDEFGH' } } }), []);
    assert.equal(v.response!.error!.message, 'bad key [redacted]');
    assert.ok(!v.response!.error!.body_json!.includes('sk-live'));
  });
});

describe('image attachments', () => {
  let dir: string | undefined;
  const setup = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-img-'));
    dir = d;
    fs.mkdirSync(path.join(d, 'ws'));
    return path.join(d, 'ws');
  };
  afterEach(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('recognises PNG and JPEG by their bytes only', () => {
    assert.equal(imageType(PNG)?.mime, 'image/png');
    assert.equal(imageType(Buffer.from([0xff, 0xd8, 0xff, 0xdb]))?.mime, 'image/jpeg');
    assert.equal(imageType(Buffer.from('SECRET=1\n')), undefined);
    assert.equal(formatSize(12 * 1024), '12 KB');
  });

  it('reads an image as a data URL part; refuses renamed text, big files, non-image names, escapes by a relative path; accepts an absolute path', async () => {
    const root = setup();
    const dir = path.dirname(root);
    fs.writeFileSync(path.join(root, 'a.png'), PNG);
    fs.writeFileSync(path.join(root, 'key.png'), 'PRIVATE KEY');
    fs.writeFileSync(path.join(root, 'big.jpg'), Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(100)]));
    fs.writeFileSync(path.join(dir, 'out.png'), PNG);
    fs.symlinkSync(path.join(dir, 'out.png'), path.join(root, 'link.png'));
    const r = await readImages(
      [
        { kind: 'image', path: 'a.png', name: '#image' },
        { kind: 'image', path: 'a.png', name: '#image' },
        { kind: 'image', path: 'key.png' },
        { kind: 'image', path: 'big.jpg' },
        { kind: 'image', path: 'notes.txt' },
        { kind: 'image', path: '../out.png' },
        { kind: 'image', path: 'link.png' },
        { kind: 'image', path: path.join(dir, 'out.png') },
      ],
      imagePolicyFor(root),
      50,
    );
    assert.equal(r.parts.length, 2);
    assert.deepEqual(r.parts[0], { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } });
    assert.deepEqual(r.labels, [
      '#image a.png (PNG, 20 B)',
      'image key.png — not attached: not a PNG or JPEG file',
      'image big.jpg — not attached: 103 B is over the 50 B limit for an image',
      'image notes.txt — not attached: only .png, .jpg and .jpeg files are attached as images',
      'image ../out.png — not attached: outside the workspace (type its absolute path to attach it anyway)',
      'image link.png — not attached: outside the workspace (type its absolute path to attach it anyway)',
      `image out.png (PNG, 20 B)`,
    ]);
    assert.deepEqual(r.notes, ['[image a.png (PNG, 20 B) attached]', '[image out.png (PNG, 20 B) attached]']);
  });

  it('an image reaching composeMessage (an agent without image support) is labelled, never read as text', async () => {
    const m = await composeMessage('look', [{ kind: 'image', path: 'a.png', name: '#image' }], async () => {
      throw new Error('must not read');
    });
    assert.deepEqual(m.labels, ['#image a.png — not attached: this agent takes no images']);
  });
});

describe('a message with images in the session store', () => {
  it("is the user's message (shown with its labels when reopened) and restores with its image parts; a tool's media stays out of the chat", async () => {
    const { openStore } = await import('../../src/store');
    const { SessionRecorder } = await import('../../src/host/session-recorder');
    const { restoreConversation, transcriptItems } = await import('../../src/host/session-history');
    const store = openStore(':memory:');
    const rec = new SessionRecorder(store.sessions, 's1', { cwd: '/w', model: 'm' });
    const parts = [
      { type: 'text' as const, text: 'what is this\n\n[image a.png (PNG, 20 B) attached]' },
      { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
    ];
    rec.turnStart({ text: 'what is this #image:a.png', labels: ['#image a.png (PNG, 20 B)'] });
    rec.messageAdded({ role: 'user', content: parts });
    rec.messageAdded({ role: 'assistant', content: 'a pixel' });
    rec.messageAdded({ role: 'user', content: [{ type: 'text', text: 'Media returned by tool call x:' }] });
    rec.flush();
    const items = transcriptItems(store.sessions.rows('s1')) as { t: string; text?: string; labels?: string[] }[];
    assert.deepEqual(items.filter((i) => i.t === 'user'), [{ t: 'user', text: 'what is this #image:a.png', labels: ['#image a.png (PNG, 20 B)'] }]);
    const restored = restoreConversation(store.sessions.contextRows('s1')).map((r) => r.message);
    assert.deepEqual(restored[0], { role: 'user', content: parts });
  });
});

describe('vision setting', () => {
  it("provider.vision and a model's vision are read (never sent as a request field)", async () => {
    const { resolveProvider } = await import('../../src/host/provider-config');
    const { HostConfigSchema } = await import('../../src/host/protocol');
    const config = HostConfigSchema.parse({
      providers: { local: { base_url: 'http://127.0.0.1:1/v1', api_key: 'k', model: 'coder', vision: true, models: { coder: { vision: false, temperature: 0.2 }, llava: {} } } },
    });
    const coder = await resolveProvider(config, {}, { provider: 'local', model: 'coder' });
    assert.equal(coder.vision, false);
    assert.deepEqual(coder.options, { temperature: 0.2 });
    const llava = await resolveProvider(config, {}, { provider: 'local', model: 'llava' });
    assert.equal(llava.vision, true);
    assert.equal(llava.options, undefined);
  });
});
