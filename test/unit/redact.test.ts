/** Issue 18, item 12: credentials are redacted from stored and logged text and from tool results. */
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { clearSecrets, redact, redactDeep, redactForLog, redactUrl, registerSecret, registerUrlCredentials } from '../../src/store/redact';

afterEach(() => clearSecrets());

test('registered secrets are replaced everywhere, in JSON and URL-encoded forms too; short values are not secrets', () => {
  registerSecret('sk-abc"123/+=');
  registerSecret('abc');
  assert.equal(redact('key sk-abc"123/+= end'), 'key [redacted] end');
  assert.equal(redact(JSON.stringify({ k: 'sk-abc"123/+=' })), '{"k":"[redacted]"}');
  assert.equal(redact(`u=${encodeURIComponent('sk-abc"123/+=')}`), 'u=[redacted]');
  assert.equal(redact('abc stays'), 'abc stays');
  const r = { ok: true, data: { output: 'OPENAI_API_KEY=sk-abc"123/+=\n', n: 1, list: ['x', 'sk-abc"123/+='] } };
  assert.deepEqual(redactDeep(r), { ok: true, data: { output: 'OPENAI_API_KEY=[redacted]\n', n: 1, list: ['x', '[redacted]'] } });
});

test('URL userinfo: the base_url password is registered; log lines lose any URL userinfo', () => {
  registerUrlCredentials('http://alice:s3cret-pass@example.com/v1');
  assert.equal(redact('cannot reach http://alice:s3cret-pass@example.com/v1'), 'cannot reach http://alice:[redacted]@example.com/v1');
  assert.ok(!redact('password s3cret-pass').includes('s3cret-pass'));
  assert.equal(redactForLog('GET https://bob:pw@host:8080/x and ftp://u@h/'), 'GET https://[redacted]@host:8080/x and ftp://[redacted]@h/');
  assert.equal(redactUrl('http://a:b@h/p'), 'http://[redacted]@h/p');
});

test('two copies of the module (the first-request bundle and the host bundle each hold one) share the secrets', () => {
  const id = require.resolve('../../src/store/redact');
  const mine = require(id) as typeof import('../../src/store/redact');
  delete require.cache[id];
  const other = require(id) as typeof import('../../src/store/redact');
  assert.notEqual(other, mine, 'precondition: a second copy of the module');
  other.registerSecret('sk-registered-by-the-host-bundle');
  assert.equal(mine.redactForLog('key sk-registered-by-the-host-bundle'), 'key [redacted]', 'the first copy redacts what the second registered');
  mine.registerSecret('sk-registered-by-the-first-bundle');
  assert.equal(other.redact('sk-registered-by-the-first-bundle'), '[redacted]');
});
