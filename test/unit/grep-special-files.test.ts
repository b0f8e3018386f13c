/**
 * Issue 18 item 17: a `path` that is a FIFO hung grep (and edit_file on a FIFO answered stale_file);
 * one unreadable file turned every grep without matches into "ripgrep failed: exit 2"; every match was
 * held in memory before the cap. Both engines: JS always, ripgrep when it is installed.
 */
import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace } from '../../src/index';
import { grep, ripgrepAvailable } from '../../src/workspace/search';

const sha = (b: string): string => createHash('sha256').update(b).digest('hex');
let tmp: string;
let root: string;
let ws: OpenedWorkspace;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-grep-')));
  root = path.join(tmp, 'ws');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'a.txt'), 'hello\n');
  execFileSync('mkfifo', [path.join(root, 'pipe')]);
  ws = openWorkspace({ root, dataDir: path.join(tmp, 'data'), sessionId: 'g' });
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const engines: ('js' | 'rg')[] = ['js', 'rg'];
for (const engine of engines) {
  const skip = engine === 'rg' && !ripgrepAvailable() ? 'skipped: ripgrep (rg) not found on PATH' : false;

  test(`${engine}: grep with a FIFO as path returns at once with a note (nothing opened)`, { skip, timeout: 20_000 }, async () => {
    process.env.CABOOSE_GREP_ENGINE = engine;
    const r = await ws.call('grep', { pattern: 'hello', path: 'pipe' });
    assert.ok(r.ok, JSON.stringify(r));
    const d = (r as { data: { matches: unknown[]; notice?: string; skipped?: unknown[] } }).data;
    assert.deepEqual(d.matches, []);
    assert.match(d.notice ?? '', /skipped pipe: it is a FIFO/);
  });

  test(`${engine}: a folder holding a FIFO is searched without hanging`, { skip, timeout: 20_000 }, async () => {
    process.env.CABOOSE_GREP_ENGINE = engine;
    const r = await ws.call('grep', { pattern: 'hello' });
    assert.ok(r.ok, JSON.stringify(r));
    assert.deepEqual((r as { data: { matches: { path: string }[] } }).data.matches.map((m) => m.path), ['a.txt']);
  });

  test(`${engine}: the search stops at the cap (it does not collect every match first)`, { skip }, async () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `match ${i}`).join('\n') + '\n';
    for (let f = 0; f < 4; f++) fs.writeFileSync(path.join(root, `m${f}.txt`), lines);
    const res = await grep({ rootAbs: root, isDenied: () => false }, { pattern: 'match', startRel: '', gitignore: true, engine, maxMatches: 1001 });
    assert.equal(res.stopped, true);
    assert.equal(res.matches.length, 1001, 'held no more than the cap');
    assert.deepEqual(res.matches.slice(0, 2).map((m) => [m.path, m.line]), [['m0.txt', 1], ['m0.txt', 2]], 'the first matches in path order');
    const r = await ws.call('grep', { pattern: 'match' });
    assert.ok(r.ok);
    const d = (r as { data: { truncated: boolean; notice?: string } }).data;
    assert.equal(d.truncated, true);
    assert.match(d.notice ?? '', /stopped after 1001 matches; there are more/);
  });
}

test('edit_file and write_file on a FIFO say it is not a regular file (not stale_file)', { timeout: 20_000 }, async () => {
  for (const [tool, args] of [
    ['edit_file', { path: 'pipe', edits: [{ oldText: 'a', newText: 'b' }], expectedSha256: sha('x') }],
    ['write_file', { path: 'pipe', content: 'x', expectedSha256: sha('x') }],
    ['delete_file', { path: 'pipe', expectedSha256: sha('x') }],
  ] as const) {
    const r = await ws.call(tool, args);
    assert.equal(r.ok ? 'ok' : r.error.kind, 'permission_denied', `${tool}: ${JSON.stringify(r)}`);
    assert.match(r.ok ? '' : r.error.message, /FIFO|not a regular file/, tool);
  }
});

/** Runs grep as an unprivileged user (root reads any file), in a child. */
function grepAsNobody(engine: 'js' | 'rg', pattern: string): { matches: { path: string }[]; notice?: string; unreadable?: { path: string }[]; error?: unknown } {
  const code = `
    process.env.CABOOSE_GREP_ENGINE = ${JSON.stringify(engine)};
    const { openWorkspace } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'src', 'index.ts'))});
    const ws = openWorkspace({ root: ${JSON.stringify(root)}, dataDir: ${JSON.stringify(path.join(tmp, 'data-nobody'))}, sessionId: 'n' });
    ws.call('grep', { pattern: ${JSON.stringify(pattern)} }).then((r) => { process.stdout.write(JSON.stringify(r.ok ? r.data : { error: r.error, matches: [] })); ws.close(); });`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', code], { uid: 65534, gid: 65534, encoding: 'utf8', cwd: path.resolve(__dirname, '..', '..'), env: process.env });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as ReturnType<typeof grepAsNobody>;
}

for (const engine of engines) {
  const skip =
    process.getuid?.() === 0
      ? engine === 'rg' && !ripgrepAvailable()
        ? 'skipped: ripgrep (rg) not found on PATH'
        : false
      : 'skipped: needs root to run the search as another user (uid 65534)';
  test(`${engine}: an unreadable file is reported, and the search stands (with and without matches)`, { skip }, () => {
    fs.rmSync(path.join(root, 'pipe'));
    fs.writeFileSync(path.join(root, 'locked.txt'), 'hello secret\n', { mode: 0o600 });
    fs.chmodSync(tmp, 0o755);
    fs.chmodSync(root, 0o777);
    fs.mkdirSync(path.join(tmp, 'data-nobody'), { recursive: true });
    fs.chownSync(path.join(tmp, 'data-nobody'), 65534, 65534);
    const none = grepAsNobody(engine, 'nothing-matches-this');
    assert.equal(none.error, undefined, JSON.stringify(none));
    assert.deepEqual(none.matches, []);
    assert.deepEqual(none.unreadable?.map((u) => u.path), ['locked.txt']);
    assert.match(none.notice ?? '', /1 file\(s\) could not be read .*locked\.txt \(permission denied\)/);
    const some = grepAsNobody(engine, 'hello');
    assert.deepEqual(some.matches.map((m) => m.path), ['a.txt']);
    assert.deepEqual(some.unreadable?.map((u) => u.path), ['locked.txt']);
  });
}
