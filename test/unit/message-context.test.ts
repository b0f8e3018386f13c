import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { composeMessage, MAX_ATTACHMENT_CHARS } from '../../src/host/message-context';
import type { ToolResult } from '../../src/tools/tool';

const noRead = async (): Promise<ToolResult> => ({ ok: false, error: { kind: 'not_found', message: 'no file' } });

describe('composeMessage: attachments from the insertables registry', () => {
  it('an attachment goes with its name, path, line count and filetype; the label says what and how big', async () => {
    const r = await composeMessage('fix #diagnostics', [{ kind: 'attachment', name: '#diagnostics', path: 'a.lua', text: 'a.lua:1:1: ERROR: x\na.lua:2:1: WARN: y' }], noRead);
    assert.equal(r.text, 'fix #diagnostics\n\n#diagnostics a.lua (2 lines):\n```\na.lua:1:1: ERROR: x\na.lua:2:1: WARN: y\n```');
    assert.deepEqual(r.labels, ['#diagnostics a.lua (2 lines)']);
  });

  it('text over the limit is cut with a notice in the text and the label (attachment, selection, outside buffer)', async () => {
    const big = 'y'.repeat(MAX_ATTACHMENT_CHARS + 10);
    for (const item of [
      { kind: 'attachment' as const, name: '#gitdiff', path: '', filetype: 'diff', text: big },
      { kind: 'selection' as const, path: '', text: big, startLine: 1, endLine: 1 },
      { kind: 'buffer' as const, path: '', text: big },
    ]) {
      const r = await composeMessage('m', [item], noRead);
      assert.match(r.text, new RegExp(`\\[cut: the first ${MAX_ATTACHMENT_CHARS} of ${MAX_ATTACHMENT_CHARS + 10} characters are shown; the rest was not sent\\]`), item.kind);
      assert.ok(!r.text.includes('y'.repeat(MAX_ATTACHMENT_CHARS + 1)), item.kind);
      assert.match(r.labels[0], new RegExp(`cut at ${MAX_ATTACHMENT_CHARS} characters`), item.kind);
    }
  });

  it("a buffer whose read the user refused (a secret file) or a rule denied is not attached: its text never stands in", async () => {
    for (const kind of ['rejected_by_user', 'permission_denied', 'cancelled'] as const) {
      const r = await composeMessage('m', [{ kind: 'buffer', path: '.env', text: 'TOKEN=hunter2' }], async () => ({ ok: false, error: { kind, message: 'no' } }));
      assert.ok(!r.text.includes('hunter2'), kind);
      assert.deepEqual(r.labels, [`#buffer — not attached: ${kind}`], kind);
    }
  });

  it('a buffer, a selection or a buffer\'s diagnostics from a file outside the workspace (or denied) is not sent; an ordinary one is', async () => {
    const outsideRead = async (): Promise<ToolResult> => ({ ok: false, error: { kind: 'outside_workspace', message: 'no' } });
    const policy = (p: string) => (p.startsWith('/') ? { refused: 'outside_workspace', message: 'outside' } : p === '.git/config' ? { refused: 'permission_denied', message: 'denied' } : 'ok');
    const outside = await composeMessage('m', [{ kind: 'buffer', name: '#buffer', path: '/home/u/.ssh/config', text: 'Host secret-box' }], outsideRead, undefined, policy);
    assert.ok(!outside.text.includes('secret-box'), 'the outside buffer text never goes');
    assert.deepEqual(outside.labels, ['#buffer /home/u/.ssh/config — not attached: outside the workspace']);
    let reads = 0;
    const counting = async (): Promise<ToolResult> => {
      reads++;
      return { ok: true, data: {} };
    };
    const sel = await composeMessage('m', [{ kind: 'selection', name: '#selection', path: '/etc/app.conf', text: 'password=x', startLine: 1, endLine: 1 }], counting, undefined, policy);
    assert.ok(!sel.text.includes('password=x'));
    assert.deepEqual(sel.labels, ['#selection /etc/app.conf — not attached: outside the workspace']);
    const diag = await composeMessage('m', [{ kind: 'attachment', name: '#diagnostics', path: '.git/config', text: '.git/config:1:1: ERROR: token=abc' }], counting, undefined, policy);
    assert.ok(!diag.text.includes('token=abc'));
    assert.deepEqual(diag.labels, ['#diagnostics .git/config — not attached: permission_denied']);
    assert.equal(reads, 0, 'nothing was read for a refused path');
    // Ordinary ones still go: a selection and diagnostics in the workspace, an unnamed buffer.
    const ok = await composeMessage(
      'm',
      [
        { kind: 'selection', name: '#selection', path: 'a.lua', text: 'local a', startLine: 1, endLine: 1 },
        { kind: 'attachment', name: '#diagnostics', path: 'a.lua', text: 'a.lua:1:1: WARN: unused' },
        { kind: 'buffer', name: '#buffer', path: '', text: 'scratch' },
      ],
      counting,
      undefined,
      policy,
    );
    assert.match(ok.text, /local a[\s\S]*unused[\s\S]*scratch/);
    assert.equal(ok.labels.length, 3);
    assert.ok(ok.labels.every((l) => !l.includes('not attached')), ok.labels.join('\n'));
  });

  it('a git diff, the quickfix list and all diagnostics leave out secret, denied and outside files, and say so', async () => {
    const policy = (p: string) => (p === '.env' || p === 'conf/id_rsa' ? 'secret' : p.startsWith('/') ? { refused: 'outside_workspace', message: '' } : 'ok');
    const diff = [
      'diff --git a/a.lua b/a.lua',
      'index 1..2 100644',
      '--- a/a.lua',
      '+++ b/a.lua',
      '@@ -1 +1 @@',
      '-local a = 1',
      '+local a = 2',
      'diff --git a/.env b/.env',
      'index 3..4 100644',
      '--- a/.env',
      '+++ b/.env',
      '@@ -1 +1 @@',
      '-TOKEN=old-hunter2',
      '+TOKEN=new-hunter2',
      'diff --git a/key b/conf/id_rsa',
      'similarity index 100%',
      'rename from key',
      'rename to conf/id_rsa',
      'diff --git a/b.lua b/b.lua',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/b.lua',
      '@@ -0,0 +1 @@',
      '+local b = 1',
      '',
    ].join('\n');
    const r = await composeMessage('review', [{ kind: 'attachment', name: '#gitdiff', path: '', filetype: 'diff', text: diff }], noRead, undefined, policy);
    assert.ok(!r.text.includes('hunter2'), 'the secret hunk is left out');
    assert.ok(!r.text.includes('rename to conf/id_rsa'));
    assert.match(r.text, /\+local a = 2[\s\S]*\+local b = 1/, 'the other files stay');
    assert.match(r.text, /left out: \.env, conf\/id_rsa \(secret_globs, deny_globs or outside the workspace\)/);
    assert.match(r.labels[0], /^#gitdiff \(\d+ lines; left out: \.env, conf\/id_rsa\)$/);
    const qf = 'title: grep\na.lua:1:1: local a\n.env:1:1: TOKEN=hunter2\n/home/u/.netrc:2:1: password hunter2\n:3:1: no file';
    const q = await composeMessage('m', [{ kind: 'attachment', name: '#quickfix', path: '', text: qf }], noRead, undefined, policy);
    assert.ok(!q.text.includes('hunter2'));
    assert.match(q.text, /title: grep\na\.lua:1:1: local a\n:3:1: no file/);
    assert.deepEqual(q.labels, ['#quickfix (3 lines; left out: .env, /home/u/.netrc)']);
    const plain = await composeMessage('m', [{ kind: 'attachment', name: '#quickfix', path: '', text: 'a.lua:1:1: x' }], noRead, undefined, policy);
    assert.deepEqual(plain.labels, ['#quickfix (1 line)'], 'nothing left out, nothing said');
  });

  it("a secret file's diagnostics go only after the read (which asks) succeeds", async () => {
    const item = { kind: 'attachment' as const, name: '#diagnostics', path: '.env', text: '.env:1:1: WARN: TOKEN=hunter2 unquoted' };
    const refused = await composeMessage('m', [item], async () => ({ ok: false, error: { kind: 'rejected_by_user', message: 'no' } }), undefined, () => 'secret');
    assert.ok(!refused.text.includes('hunter2'));
    assert.deepEqual(refused.labels, ['#diagnostics .env — not attached: rejected_by_user']);
    const allowed = await composeMessage('m', [item], async () => ({ ok: true, data: {} }), undefined, () => 'secret');
    assert.match(allowed.text, /hunter2/);
  });

  it('a selection from a secret file goes only after the read (which asks) succeeds', async () => {
    const sel = { kind: 'selection' as const, name: '#selection', path: '.env', text: 'TOKEN=hunter2', startLine: 1, endLine: 1 };
    const isSecret = (p: string) => p === '.env';
    const refused = await composeMessage('m', [sel], async () => ({ ok: false, error: { kind: 'rejected_by_user', message: 'no' } }), undefined, isSecret);
    assert.ok(!refused.text.includes('hunter2'));
    assert.deepEqual(refused.labels, ['#selection .env — not attached: rejected_by_user']);
    let reads = 0;
    const allowed = await composeMessage('m', [sel], async () => {
      reads++;
      return { ok: true, data: {} };
    }, undefined, isSecret);
    assert.equal(reads, 1);
    assert.match(allowed.text, /TOKEN=hunter2/);
    const plain = await composeMessage('m', [{ ...sel, path: 'a.lua' }], async () => {
      reads++;
      return { ok: true, data: {} };
    }, undefined, isSecret);
    assert.equal(reads, 1, 'a selection from another file is not read again');
    assert.match(plain.text, /TOKEN=hunter2/);
  });

  it('a fetch item runs the fetch callback; a failure is labelled; without one (ACP) it is not attached', async () => {
    const page = { url: 'https://x.test/p', status: 200, contentType: 'text/plain', content: 'hello\nworld', truncated: false };
    const ok = await composeMessage('read', [{ kind: 'fetch', name: '/fetch', path: '', url: 'https://x.test/p' }], noRead, async (url) => {
      assert.equal(url, 'https://x.test/p');
      return { ok: true, data: page };
    });
    assert.equal(ok.text, 'read\n\nFetched https://x.test/p (HTTP 200, text/plain):\n```\nhello\nworld\n```');
    assert.deepEqual(ok.labels, ['/fetch https://x.test/p (2 lines)']);
    const refused = await composeMessage('read', [{ kind: 'fetch', path: '', url: 'http://10.0.0.1/' }], noRead, async () => ({ ok: false, error: { kind: 'rejected_by_user', message: 'no' } }));
    assert.deepEqual(refused.labels, ['/fetch http://10.0.0.1/ — not attached: rejected_by_user']);
    const none = await composeMessage('read', [{ kind: 'fetch', path: '', url: 'https://x.test/p' }], noRead);
    assert.match(none.labels[0], /not attached: this agent cannot fetch/);
  });
});
