import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { createBashTool, type BashResult } from '../../src/tools/bash';
import { Sandbox, TRIAL_FILE, detectSandbox, detectSandboxAsync, findGitEntries, rememberTrial, rememberedTrial, resetSandboxDetection, trialKey, trialNeeded } from '../../src/workspace/sandbox/sandbox';
import { bwrapArgs, explainBlocked, hostAllowed, networkPolicy, seatbeltProfile, tmpFoldersNamed, type SandboxPolicy } from '../../src/workspace/sandbox/policy';
import { PERMISSION_MODES, permissionFor } from '../../src/tools/permissions';
import { testToolContext } from '../support/tool-context';
import { processesByCmdline as findProcs } from '../support/processes';

// ------------------------------------------------------------------------------------------------
// Pure parts

test('permissions: sandboxed commands run in auto-edit and chug, escalations and missing sandboxes always ask', () => {
  const kinds = ['sandboxed', 'escalated', 'unsandboxed', 'unavailable'] as const;
  const table = Object.fromEntries(PERMISSION_MODES.map((m) => [m, kinds.map((k) => permissionFor(m, 'exec', undefined, k)).join(' ')]));
  assert.deepEqual(table, {
    plan: 'block block block block',
    create: 'ask ask ask ask',
    'auto-edit': 'run ask ask ask',
    chug: 'run ask run ask',
  });
  // Tools that do not say where they run keep the old table.
  assert.equal(permissionFor('auto-edit', 'exec'), 'ask');
  assert.equal(permissionFor('chug', 'exec'), 'run');
});

test('network allow-list: exact names, *.suffix, IP literals; true and "*" mean everything', () => {
  assert.deepEqual(networkPolicy(undefined), { kind: 'none' });
  assert.deepEqual(networkPolicy(false), { kind: 'none' });
  assert.deepEqual(networkPolicy([]), { kind: 'none' });
  assert.deepEqual(networkPolicy(true), { kind: 'all' });
  assert.deepEqual(networkPolicy(['*']), { kind: 'all' });
  const hosts = ['registry.npmjs.org', '*.example.com', '127.0.0.1', '::1'];
  assert.equal(hostAllowed('registry.npmjs.org', hosts), true);
  assert.equal(hostAllowed('REGISTRY.npmjs.org.', hosts), true);
  assert.equal(hostAllowed('evil-registry.npmjs.org', hosts), false);
  assert.equal(hostAllowed('a.example.com', hosts), true);
  assert.equal(hostAllowed('example.com', hosts), false);
  assert.equal(hostAllowed('badexample.com', hosts), false);
  assert.equal(hostAllowed('127.0.0.1', hosts), true);
  assert.equal(hostAllowed('[::1]', hosts), true);
  assert.equal(hostAllowed('localhost', hosts), false);
  assert.equal(hostAllowed('2130706433', hosts), false);
});

const policy: SandboxPolicy = {
  mode: 'workspace-write',
  root: '/w',
  writable: ['/extra'],
  readOnly: ['/w/.git', '/w/sub/.git'],
  hidden: [
    { path: '/home/u/.ssh', dir: true },
    { path: '/home/u/.npmrc', dir: false },
  ],
  network: { kind: 'none' },
};

test('bwrap arguments: private /tmp before the workspace, .git read-only after it, secrets last, caps dropped', () => {
  const a = bwrapArgs(policy, { cwd: '/w/sub' });
  const at = (...xs: string[]): number => a.findIndex((_, i) => xs.every((x, j) => a[i + j] === x));
  assert.ok(at('--ro-bind', '/', '/') === 0);
  assert.ok(at('--tmpfs', '/tmp') < at('--bind', '/w', '/w'));
  assert.ok(at('--bind', '/w', '/w') < at('--ro-bind', '/w/.git', '/w/.git'));
  assert.ok(at('--ro-bind', '/w/sub/.git', '/w/sub/.git') < at('--tmpfs', '/home/u/.ssh'));
  assert.ok(at('--ro-bind', '/dev/null', '/home/u/.npmrc') > 0);
  assert.ok(at('--bind', '/extra', '/extra') > 0);
  for (const flag of ['--unshare-all', '--die-with-parent', '--new-session']) assert.ok(a.includes(flag), flag);
  assert.ok(at('--cap-drop', 'ALL') > 0);
  assert.ok(!a.includes('--share-net'));
  assert.deepEqual(a.slice(-2), ['--chdir', '/w/sub']);
  assert.ok(bwrapArgs({ ...policy, network: { kind: 'all' } }, { cwd: '/w' }).includes('--share-net'));
  // read-only: nothing writable, the workspace bound read-only.
  const ro = bwrapArgs({ ...policy, mode: 'read-only' }, { cwd: '/w' });
  assert.ok(!ro.includes('--bind'));
  assert.ok(ro.join(' ').includes('--ro-bind /w /w'));
});

test('a program kept under /tmp (a checkout there) stays visible, read-only, over the private /tmp', () => {
  assert.deepEqual(tmpFoldersNamed(['/usr/bin/node', '/tmp/clone/caboose/test/server.mjs', '--flag', '/tmp/x', '/tmp/../etc/passwd', '/tmp/clone/other']), ['/tmp/clone']);
  const a = bwrapArgs(policy, { cwd: '/w', visibleInTmp: ['/tmp/clone'] });
  const at = (...xs: string[]): number => a.findIndex((_, i) => xs.every((x, j) => a[i + j] === x));
  assert.ok(at('--tmpfs', '/tmp') < at('--ro-bind', '/tmp/clone', '/tmp/clone'));
  assert.ok(at('--ro-bind', '/tmp/clone', '/tmp/clone') < at('--bind', '/w', '/w'));
});

test('Seatbelt profile (macOS, generated only): deny by default, writes to the workspace and tmp, .git and secrets denied', () => {
  const p = seatbeltProfile(policy, { tmp: '/private/tmp/x' });
  assert.match(p, /^\(version 1\)\n\(deny default\)/);
  assert.match(p, /\(allow file-write\* \(subpath "\/private\/tmp\/x"\) \(subpath "\/w"\) \(subpath "\/extra"\)\)/);
  assert.match(p, /\(deny file-write\* \(regex #"\^\\\/w\/\(\.\*\/\)\?\\\.git\(\/\|\$\)"\)\)/);
  assert.match(p, /\(deny file-read\* \(subpath "\/home\/u\/\.ssh"\)\)/);
  assert.match(p, /\(deny file-read\* \(literal "\/home\/u\/\.npmrc"\)\)/);
  assert.doesNotMatch(p, /network/);
  assert.match(seatbeltProfile({ ...policy, network: { kind: 'allow', hosts: ['a'] } }, { tmp: '/t', proxyPort: 4567 }), /\(allow network-outbound \(remote ip "localhost:4567"\)\)/);
  assert.match(seatbeltProfile({ ...policy, network: { kind: 'all' } }, { tmp: '/t' }), /\(allow network\*\)/);
});

test('blocked actions are explained in words the model can act on', () => {
  const none = { mode: 'workspace-write' as const, network: { kind: 'none' as const } };
  assert.match(explainBlocked('bash: /etc/x: Read-only file system', none) ?? '', /^blocked by the sandbox: writes outside the workspace.*escalate: true/);
  assert.match(explainBlocked('curl: (6) Could not resolve host: example.org', none) ?? '', /the network is off/);
  assert.match(explainBlocked('cat: /root/.ssh/id_rsa: Permission denied', none) ?? '', /secrets/);
  assert.match(explainBlocked('x: blocked by the caboose sandbox: a.b is not in sandbox.network.allow', { ...none, network: { kind: 'allow', hosts: ['c'] } }) ?? '', /not in sandbox.network.allow/);
  assert.equal(explainBlocked('npm ERR! missing script: tes', none), null);
});

// ------------------------------------------------------------------------------------------------
// Detection without blocking the host (issue 24: the trial run is off the first request's path)

describe('detectSandboxAsync', { skip: process.platform !== 'linux' ? 'skipped: the bwrap trial is Linux only' : false }, () => {
  const saved = process.env.CABOOSE_BWRAP;
  const withBwrap = async <T>(value: string | undefined, fn: () => Promise<T> | T): Promise<T> => {
    if (value === undefined) delete process.env.CABOOSE_BWRAP;
    else process.env.CABOOSE_BWRAP = value;
    resetSandboxDetection();
    try {
      return await fn();
    } finally {
      if (saved === undefined) delete process.env.CABOOSE_BWRAP;
      else process.env.CABOOSE_BWRAP = saved;
      resetSandboxDetection();
    }
  };

  test('gives what the synchronous trial gives, for a usable, a failing and a missing bwrap', async () => {
    for (const value of [undefined, '/bin/false', 'none', '/nonexistent/bwrap']) {
      const sync = await withBwrap(value, () => detectSandbox());
      const async = await withBwrap(value, () => detectSandboxAsync());
      assert.equal(async.available, sync.available, `CABOOSE_BWRAP=${value}`);
      if (sync.available && async.available) assert.deepEqual(async, sync);
      if (!sync.available && !async.available) assert.equal(async.fix, sync.fix);
    }
  });

  test('a failing trial names bwrap and the failure; one trial serves concurrent callers and the sync detection after it', async () => {
    await withBwrap('/bin/false', async () => {
      const [a, b] = await Promise.all([detectSandboxAsync(), detectSandboxAsync()]);
      assert.equal(a, b);
      assert.equal(a.available, false);
      if (!a.available) assert.match(a.reason, /^bwrap \(\/bin\/false\) cannot create a sandbox: exit 1$/);
      // The answer is cached: the synchronous detection returns it without another trial.
      assert.equal(detectSandbox(), a);
    });
  });

  test('Sandbox.prepare() sets support before anything asks for it', async () => {
    await withBwrap('/bin/false', async () => {
      const sb = new Sandbox({ root: os.tmpdir() });
      await sb.prepare();
      assert.equal(sb.support.available, false);
      assert.equal(sb.unavailable, true);
      const off = new Sandbox({ root: os.tmpdir(), config: { mode: 'off' } });
      await off.prepare();
      assert.equal(off.active, false);
      assert.equal(off.unavailable, false);
    });
  });
});

// ------------------------------------------------------------------------------------------------
// The trial's answer remembered in the data folder (issue 24: the first request never waits for a trial)

describe('remembered bwrap trial', { skip: process.platform !== 'linux' ? 'skipped: the bwrap trial is Linux only' : false }, () => {
  const saved = process.env.CABOOSE_BWRAP;
  let dir: string;
  let dataDir: string;
  let fake: string;
  let gate: string;
  let count: string;
  const runs = (): number => (fs.existsSync(count) ? fs.readFileSync(count, 'utf8').length : 0);
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-trial-'));
    dataDir = path.join(dir, 'data');
    fake = path.join(dir, 'bwrap');
    gate = path.join(dir, 'gate');
    count = path.join(dir, 'count');
    // A bwrap stand-in: counts its runs, waits until the test opens the gate, then passes ($FAKE_EXIT).
    fs.writeFileSync(fake, `#!/bin/sh\nprintf x >> ${JSON.stringify(count)}\nwhile [ ! -e ${JSON.stringify(gate)} ]; do sleep 0.01; done\nexit "\${FAKE_EXIT:-0}"\n`, { mode: 0o755 });
  });
  after(() => {
    if (saved === undefined) delete process.env.CABOOSE_BWRAP;
    else process.env.CABOOSE_BWRAP = saved;
    delete process.env.FAKE_EXIT;
    resetSandboxDetection();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const fresh = (): void => {
    process.env.CABOOSE_BWRAP = fake;
    resetSandboxDetection();
    fs.rmSync(gate, { force: true });
    fs.rmSync(count, { force: true });
  };
  const waitFile = async (p: string, pred: (text: string) => boolean): Promise<string> => {
    for (let i = 0; i < 1000; i++) {
      const t = fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : '';
      if (t && pred(t)) return t;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${p} never matched`);
  };
  /** `sb.prepare()` does not resolve while its trial runs (held at the gate); once the trial passes, the sandbox is active. */
  const preparesAfterTrial = async (sb: Sandbox, why: string): Promise<void> => {
    let prepared = false;
    const p = sb.prepare().then(() => (prepared = true));
    await waitFile(count, (t) => t.length === 1);
    await new Promise((r) => setImmediate(r));
    assert.equal(prepared, false, why);
    fs.writeFileSync(gate, '');
    await p;
    assert.equal(sb.active, true);
  };

  test('no remembered answer: prepare() waits for the trial, whose answer is then remembered; the next host uses it without waiting', async () => {
    fresh();
    fs.rmSync(dataDir, { recursive: true, force: true });
    const sb = new Sandbox({ root: dir, dataDir });
    await preparesAfterTrial(sb, 'the first host waits for its trial');
    const stored = JSON.parse(await waitFile(path.join(dataDir, TRIAL_FILE), (t) => t.includes('"available":true'))) as Record<string, unknown>;
    assert.equal(stored.key, trialKey(fake)?.key);
    assert.equal((fs.statSync(path.join(dataDir, TRIAL_FILE)).mode & 0o777).toString(8), '600');

    // The next host: the gate is closed, so its trial cannot end; prepare() still resolves (cache hit).
    fresh();
    const next = new Sandbox({ root: dir, dataDir });
    await next.prepare();
    assert.equal(next.describedActive, true, 'the model is told about the sandbox from the remembered answer');
    assert.equal(runs(), 0, 'no trial before recheck() (the runtime calls it once the first request left)');
    next.recheck();
    await waitFile(count, (t) => t.length === 1); // the re-check runs in the background
    fs.writeFileSync(gate, '');
    await detectSandboxAsync();
    assert.equal(next.confinement(false), 'sandboxed');
    assert.equal(runs(), 1, 'one trial: the re-check');
  });

  test('a change to what decides the answer (the bwrap binary) → the remembered answer is not used, a new trial is waited for', async () => {
    fresh();
    const before = trialKey(fake);
    assert.ok(before && rememberedTrial(dataDir, before), 'precondition: an answer is remembered for this bwrap');
    fs.appendFileSync(fake, '# changed\n');
    const after = trialKey(fake);
    assert.ok(after && after.key !== before.key);
    assert.equal(rememberedTrial(dataDir, after), null);
    // Another bwrap path, a kernel setting or the uid make another key too (the key lists them).
    assert.match(after.key, /max_user_namespaces/);
    // The settings' values are in it (/proc files report size 0: they must still be read).
    const maxNs = fs.existsSync('/proc/sys/user/max_user_namespaces') ? fs.readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim() : null;
    if (maxNs !== null) assert.ok(after.key.includes(`["/proc/sys/user/max_user_namespaces","${maxNs}"]`), 'the value of user.max_user_namespaces is in the key');
    assert.ok(after.key.includes(JSON.stringify(fs.readFileSync('/proc/self/uid_map', 'utf8')).slice(1, -1).slice(0, 20)), 'the uid map is in the key');
    assert.match(after.key, new RegExp(`"${os.release().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`));
    const sb = new Sandbox({ root: dir, dataDir });
    await preparesAfterTrial(sb, 'waits for the new trial');
  });

  test('a remembered "usable" that is stale: commands use the trial\'s answer (never sandboxed by the stale one), the file is corrected, the description follows', async () => {
    fresh();
    process.env.FAKE_EXIT = '1';
    try {
      const key = trialKey(fake);
      assert.ok(key);
      await rememberTrial(dataDir, key, { available: true, kind: 'bwrap', path: fake });
      assert.equal(rememberedTrial(dataDir, key)?.available, true, 'precondition: "usable" is remembered');
      const sb = new Sandbox({ root: dir, dataDir });
      await sb.prepare();
      assert.equal(sb.describedActive, true);
      fs.writeFileSync(gate, '');
      sb.recheck();
      await detectSandboxAsync();
      // How commands run follows the trial: no sandbox here, so every command asks (as without a cache).
      assert.equal(sb.confinement(false), 'unavailable');
      assert.equal(sb.active, false);
      assert.equal(sb.describedActive, false);
      const bash = createBashTool({ sandbox: sb });
      assert.equal(bash.confinement?.({ command: 'true' }), 'unavailable');
      assert.doesNotMatch(bash.description, /Commands run in a sandbox/);
      await assert.rejects(sb.wrap('/bin/sh', ['-c', 'true'], dir, {}), /no sandbox available/);
      await waitFile(path.join(dataDir, TRIAL_FILE), (t) => t.includes('"available":false'));
      assert.equal(rememberedTrial(dataDir, key)?.available, false);
    } finally {
      delete process.env.FAKE_EXIT;
    }
  });

  test('a stale "usable" read while the trial still runs: a command asked for then runs the trial itself, never the remembered answer', async () => {
    fresh();
    process.env.FAKE_EXIT = '1';
    try {
      const key = trialKey(fake);
      assert.ok(key);
      await rememberTrial(dataDir, key, { available: true, kind: 'bwrap', path: fake });
      const sb = new Sandbox({ root: dir, dataDir });
      await sb.prepare();
      fs.writeFileSync(gate, ''); // the synchronous trial below must be able to end
      assert.equal(runs(), 0, 'precondition: no trial has run yet');
      assert.equal(sb.confinement(false), 'unavailable');
      assert.equal(runs(), 1, 'the command\'s question ran the trial');
      assert.equal(trialNeeded(dataDir), false);
    } finally {
      delete process.env.FAKE_EXIT;
    }
  });

  test('a corrupted or hostile file is ignored', async () => {
    fresh();
    const key = trialKey(fake);
    assert.ok(key);
    const file = path.join(dataDir, TRIAL_FILE);
    fs.mkdirSync(dataDir, { recursive: true });
    const cases: [string, string | (() => void)][] = [
      ['not JSON', '{"key":'],
      ['an array', '[1]'],
      ['null', 'null'],
      ['another key', JSON.stringify({ key: key.key.replace('"format":1', '"format":2'), available: true })],
      ['available not a boolean', JSON.stringify({ key: key.key, available: 'yes' })],
      ['unusable without a reason', JSON.stringify({ key: key.key, available: false })],
      ['oversized', JSON.stringify({ key: key.key, available: true, pad: 'x'.repeat(20_000) })],
      ['a symlink to a valid answer', () => {
        const real = path.join(dir, 'elsewhere.json');
        fs.writeFileSync(real, JSON.stringify({ key: key.key, available: true }));
        fs.symlinkSync(real, file);
      }],
      ['a folder', () => fs.mkdirSync(file)],
      ['a FIFO', () => spawnSyncOk('mkfifo', [file])],
      // Written or writable by someone else: not this user's answer.
      ['writable by the group and others', () => {
        fs.writeFileSync(file, JSON.stringify({ key: key.key, available: true }));
        fs.chmodSync(file, 0o666);
      }],
      ...(process.getuid?.() === 0
        ? ([['owned by another user', () => {
            fs.writeFileSync(file, JSON.stringify({ key: key.key, available: true }), { mode: 0o600 });
            fs.chownSync(file, 4242, 4242);
          }]] as [string, () => void][])
        : []),
    ];
    for (const [what, content] of cases) {
      fs.rmSync(file, { recursive: true, force: true });
      if (typeof content === 'string') fs.writeFileSync(file, content);
      else content();
      assert.equal(rememberedTrial(dataDir, key), null, what);
    }
    // What the file says about the binary is never used: the path is the one found now.
    fs.rmSync(file, { recursive: true, force: true });
    fs.writeFileSync(file, JSON.stringify({ key: key.key, available: true, kind: 'bwrap', path: '/tmp/evil' }));
    assert.deepEqual(rememberedTrial(dataDir, key), { available: true, kind: 'bwrap', path: fake });
    fs.rmSync(file, { force: true });
  });
});

function spawnSyncOk(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args);
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}`);
}

// ------------------------------------------------------------------------------------------------
// Real sandbox (bwrap)

const support = detectSandbox();
const skip = support.available ? false : `skipped: no usable sandbox (${support.reason})`;
/** Not under /tmp: the command's /tmp is private, so paths there would prove nothing. */
const BASE = fs.existsSync('/var/tmp') ? '/var/tmp' : process.cwd();

describe('sandboxed bash (bwrap)', { skip }, () => {
  let dir: string;
  let root: string;
  let home: string;
  let outside: string;
  let dataDir: string;
  let sandbox: Sandbox;
  const KEY = 'sk-test-host-secret-1234567890';

  const run = async (command: string, o: { timeoutMs?: number; sandbox?: Sandbox; escalate?: boolean; signal?: AbortSignal } = {}): Promise<BashResult> => {
    const bash = createBashTool({ sandbox: o.sandbox ?? sandbox, killGraceMs: 300, hideEnvValues: [KEY] });
    return bash.execute({ command, ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}), ...(o.escalate ? { escalate: true } : {}) }, { ...testToolContext(root), ...(o.signal ? { signal: o.signal } : {}) });
  };

  before(async () => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(BASE, 'caboose-sbx-')));
    root = path.join(dir, 'ws');
    home = path.join(dir, 'home');
    outside = path.join(dir, 'outside');
    dataDir = path.join(dir, 'data');
    for (const d of [root, path.join(root, '.git'), path.join(root, 'vendor/lib/.git'), path.join(home, '.ssh'), outside, dataDir]) fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(root, '.git/config'), '[core]\n');
    fs.writeFileSync(path.join(root, 'vendor/lib/.git/config'), '[core]\n');
    fs.writeFileSync(path.join(root, 'edit.txt'), 'one\n');
    // A worktree-style .git file, and a .git that is a symlink to a folder elsewhere in the workspace.
    fs.mkdirSync(path.join(root, 'wt'));
    fs.writeFileSync(path.join(root, 'wt/.git'), 'gitdir: ../.git/worktrees/wt\n');
    fs.mkdirSync(path.join(root, 'gitstore'));
    fs.writeFileSync(path.join(root, 'gitstore/config'), '[core]\n');
    fs.mkdirSync(path.join(root, 'linked'));
    fs.symlinkSync('../gitstore', path.join(root, 'linked/.git'));
    fs.writeFileSync(path.join(home, '.ssh/id_rsa'), 'PRIVATE-KEY-MATERIAL\n');
    fs.writeFileSync(path.join(home, '.npmrc'), '//registry/:_authToken=NPM-TOKEN\n');
    fs.writeFileSync(path.join(dataDir, 'caboose.db'), 'DATA-FOLDER-CONTENT\n');
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'outside\n');
    sandbox = new Sandbox({ root, dataDir, home });
  });
  after(async () => {
    await sandbox.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('creates, edits and deletes files in the workspace', async () => {
    const r = await run('echo new > created.txt && sed -i s/one/two/ edit.txt && mkdir -p d/e && echo x > d/e/f && rm -r d && echo done');
    assert.equal(r.exitCode, 0, r.output);
    assert.equal(r.sandboxed, true);
    assert.equal(fs.readFileSync(path.join(root, 'created.txt'), 'utf8'), 'new\n');
    assert.equal(fs.readFileSync(path.join(root, 'edit.txt'), 'utf8'), 'two\n');
    assert.equal(fs.existsSync(path.join(root, 'd')), false);
    const del = await run('rm created.txt');
    assert.equal(del.exitCode, 0, del.output);
    assert.equal(fs.existsSync(path.join(root, 'created.txt')), false);
  });

  test('a remembered answer never decides how a command runs: "no sandbox" remembered for this very bwrap, the command still runs inside bwrap under a fresh trial', async () => {
    const key = trialKey();
    assert.ok(key, 'precondition: a trial key for the bwrap found here');
    const trialData = path.join(dir, 'trial-data');
    await rememberTrial(trialData, key, { available: false, reason: 'remembered: bwrap cannot run (hostile or stale)', fix: '' });
    assert.equal(rememberedTrial(trialData, key)?.available, false, 'precondition: the "no sandbox" answer is remembered');
    resetSandboxDetection();
    const sb = new Sandbox({ root, dataDir: trialData, home });
    try {
      await sb.prepare();
      assert.equal(sb.describedActive, false, 'precondition: the remembered answer was read (the model is told from it)');
      // No recheck(): the command's own question runs the trial.
      const r = await run(`echo pwned > ${outside}/remembered.txt; echo in > inside.txt`, { sandbox: sb });
      assert.equal(r.sandboxed, true, r.output);
      assert.equal(fs.existsSync(path.join(outside, 'remembered.txt')), false, 'the write outside the workspace was refused');
      assert.match(r.output, /Read-only file system/);
      assert.equal(fs.readFileSync(path.join(root, 'inside.txt'), 'utf8'), 'in\n');
      fs.rmSync(path.join(root, 'inside.txt'));
      assert.equal(sb.describedActive, true, 'the description follows the fresh trial');
    } finally {
      await sb.dispose();
    }
  });

  test('cannot write outside the workspace; /tmp is private to the command', async () => {
    const r = await run(`echo pwned > ${outside}/new.txt; echo pwned >> ${outside}/keep.txt; rm -f ${outside}/keep.txt; echo pwned > ${home}/x; echo t > /tmp/caboose-sbx-probe && cat /tmp/caboose-sbx-probe`);
    assert.equal(fs.existsSync(path.join(outside, 'new.txt')), false);
    assert.equal(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8'), 'outside\n');
    assert.equal(fs.existsSync(path.join(home, 'x')), false);
    assert.match(r.output, /Read-only file system/);
    // The command's own /tmp works, and nothing of it reaches the host's.
    assert.match(r.output, /^t$/m);
    assert.equal(fs.existsSync('/tmp/caboose-sbx-probe'), false);
    // Escaping with the root's privileges: remount and unmount are refused (capabilities dropped).
    const esc = await run(`mount -o remount,rw / 2>&1; mount -o remount,bind,rw ${outside} 2>&1; umount ${home}/.ssh 2>&1; echo pwned > ${outside}/after-remount.txt; cat ${home}/.ssh/id_rsa; unshare -Urm sh -c "umount ${home}/.ssh; cat ${home}/.ssh/id_rsa; mount -o remount,rw /; echo pwned > ${outside}/userns.txt" 2>&1`);
    assert.equal(fs.existsSync(path.join(outside, 'userns.txt')), false, esc.output);
    assert.equal(fs.existsSync(path.join(outside, 'after-remount.txt')), false, esc.output);
    assert.doesNotMatch(esc.output, /PRIVATE-KEY-MATERIAL/);
  });

  test('cannot write any .git (root or nested), nor move or remove it', async () => {
    const r = await run('echo "[core] fsmonitor = touch /x" >> .git/config; echo x > .git/new; echo "[core] fsmonitor = x" >> vendor/lib/.git/config; rm -rf vendor; echo "gitdir: /evil" > wt/.git; echo x >> linked/.git/config; echo x >> gitstore/config');
    assert.equal(fs.readFileSync(path.join(root, 'wt/.git'), 'utf8'), 'gitdir: ../.git/worktrees/wt\n');
    assert.equal(fs.readFileSync(path.join(root, 'gitstore/config'), 'utf8'), '[core]\n');
    assert.notEqual(r.exitCode, 0);
    assert.equal(fs.readFileSync(path.join(root, '.git/config'), 'utf8'), '[core]\n');
    assert.equal(fs.readFileSync(path.join(root, 'vendor/lib/.git/config'), 'utf8'), '[core]\n');
    assert.equal(fs.existsSync(path.join(root, '.git/new')), false);
    assert.equal(fs.existsSync(path.join(root, 'vendor/lib/.git/config')), true);
    assert.match(r.sandboxBlocked ?? '', /blocked by the sandbox: writes outside the workspace, into any \.git folder/);
    // A .git created by a command is protected from the next command on.
    await run('mkdir -p later/.git && echo ok > later/.git/HEAD');
    assert.ok((await findGitEntries(root)).includes(path.join(root, 'later/.git')));
    assert.ok((await sandbox.policy()).readOnly.includes(path.join(root, 'later/.git')), 'the next command protects it');
    const again = await run('echo pwned > later/.git/HEAD');
    assert.notEqual(again.exitCode, 0);
    assert.equal(fs.readFileSync(path.join(root, 'later/.git/HEAD'), 'utf8'), 'ok\n');
  });

  test('cannot read ~/.ssh/id_rsa, ~/.npmrc or the data folder', async () => {
    const r = await run(`cat ${home}/.ssh/id_rsa; cat ${home}/.npmrc; cat ${dataDir}/caboose.db; ls ${home}/.ssh; echo pwned > ${dataDir}/x`);
    assert.doesNotMatch(r.output, /PRIVATE-KEY-MATERIAL|NPM-TOKEN|DATA-FOLDER-CONTENT/);
    assert.equal(fs.existsSync(path.join(dataDir, 'x')), false);
  });

  test("cannot read the host's /proc/<pid>/environ (the key is not in the output)", async () => {
    // A stand-in host started with the key in its environment (as a host given OPENAI_API_KEY is).
    const once = async (escalate: boolean): Promise<{ hostPid: number; result: BashResult }> => {
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/sandbox-host.ts'), root, 'cat /proc/$PPID/environ; cat /proc/$HOST_PID/environ; for f in /proc/[0-9]*/environ; do cat "$f"; done; env'], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, CABOOSE_TEST_HOST_KEY: KEY, ONCE: '1', ...(escalate ? { ESCALATE: '1' } : {}) },
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => child.on('close', r));
      return { hostPid: child.pid ?? 0, result: JSON.parse(out) as BashResult };
    };
    // Escalated, the same command reads the host's environ: the precondition of the check.
    const outside = await once(true);
    assert.equal(outside.result.sandboxed, false);
    assert.ok(outside.result.output.includes(KEY), 'precondition: unsandboxed, the key is readable from /proc/<host>/environ');
    const inside = await once(false);
    assert.equal(inside.result.sandboxed, true);
    assert.ok(!inside.result.output.includes(KEY), 'the key leaked');
  });

  test('cannot connect to a server on 127.0.0.1 unless the host is allowed (through the filtering proxy)', async () => {
    const server = http.createServer((_req, res) => res.end('HELLO-FROM-HOST\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const client = path.join(root, 'client.js');
    fs.writeFileSync(
      client,
      `const http=require('http');const p=process.env.HTTP_PROXY;const u=new URL(p||'http://x');
const o=p?{host:u.hostname,port:u.port,path:'http://127.0.0.1:${port}/'}:{host:'127.0.0.1',port:${port},path:'/'};
http.get(o,r=>{let b='';r.on('data',d=>b+=d);r.on('end',()=>{process.stdout.write(r.statusCode+' '+b);process.exit(r.statusCode===200?0:1)})}).on('error',e=>{console.error(e.message);process.exit(2)});`,
    );
    const node = JSON.stringify(process.execPath);
    try {
      assert.match((await run(`${node} client.js`, { escalate: true })).output, /HELLO-FROM-HOST/, 'precondition: the server answers');
      const off = await run(`${node} client.js; (echo > /dev/tcp/127.0.0.1/${port}) 2>&1`);
      assert.doesNotMatch(off.output, /HELLO-FROM-HOST/);
      assert.match(off.sandboxBlocked ?? '', /the network is off/);
      const other = new Sandbox({ root, dataDir, home, config: { network: { allow: ['registry.npmjs.org'] } } });
      const refused = await run(`${node} client.js`, { sandbox: other });
      assert.doesNotMatch(refused.output, /HELLO-FROM-HOST/);
      assert.match(refused.output, /403 blocked by the caboose sandbox: 127\.0\.0\.1 is not in sandbox\.network\.allow/);
      await other.dispose();
      const allowed = new Sandbox({ root, dataDir, home, config: { network: { allow: ['127.0.0.1'] } } });
      const ok = await run(`${node} client.js`, { sandbox: allowed });
      assert.match(ok.output, /200 HELLO-FROM-HOST/);
      // Direct connections still fail: only the proxy leads out.
      const direct = await run(`(echo > /dev/tcp/127.0.0.1/${port}) 2>&1 && echo CONNECTED`, { sandbox: allowed });
      assert.doesNotMatch(direct.output, /CONNECTED/);
      await allowed.dispose();
    } finally {
      server.close();
    }
  });

  test('sandbox.writable opens more folders (the user\'s /tmp too); sandbox.deny_read hides more paths', async () => {
    const extra = path.join(dir, 'extra');
    const secret = path.join(dir, 'more-secrets');
    fs.mkdirSync(extra);
    fs.mkdirSync(secret);
    fs.writeFileSync(path.join(secret, 'token'), 'MORE-SECRET\n');
    const probe = `/tmp/caboose-sbx-shared-${process.pid}`;
    const sb = new Sandbox({ root, dataDir, home, config: { writable: [extra, '/tmp'], deny_read: [secret] } });
    try {
      const r = await run(`echo ok > ${extra}/w.txt && echo shared > ${probe}; cat ${secret}/token`, { sandbox: sb });
      assert.equal(fs.readFileSync(path.join(extra, 'w.txt'), 'utf8'), 'ok\n');
      assert.equal(fs.readFileSync(probe, 'utf8'), 'shared\n');
      assert.doesNotMatch(r.output, /MORE-SECRET/);
      // Without them: refused and readable (the precondition).
      const plain = await run(`echo no > ${extra}/w2.txt; cat ${secret}/token`);
      assert.equal(fs.existsSync(path.join(extra, 'w2.txt')), false);
      assert.match(plain.output, /MORE-SECRET/);
    } finally {
      fs.rmSync(probe, { force: true });
      await sb.dispose();
    }
  });

  test('read-only mode forbids every write, the workspace included', async () => {
    const ro = new Sandbox({ root, dataDir, home, config: { mode: 'read-only' } });
    const r = await run('echo x > ro.txt', { sandbox: ro });
    assert.notEqual(r.exitCode, 0);
    assert.equal(fs.existsSync(path.join(root, 'ro.txt')), false);
    assert.match(r.sandboxBlocked ?? '', /read-only/);
  });

  test('leaves no process behind after its timeout, even ones that left the session and the tag', async () => {
    const n = 3000 + Math.floor(Math.random() * 900);
    const started = Date.now();
    const r = await run(`env -i setsid sleep ${n}.1 & env -u CABOOSE_BASH_RUN nohup sleep ${n}.2 >/dev/null 2>&1 & (trap '' TERM; exec sleep ${n}.3) & sleep ${n}.4`, { timeoutMs: 800 });
    assert.equal(r.timedOut, true);
    assert.ok(Date.now() - started < 60_000);
    assert.deepEqual(await waitGone(`sleep\0${n}.`), []);
  });

  test('abort ends the call and its processes', async () => {
    const n = 4000 + Math.floor(Math.random() * 900);
    const ac = new AbortController();
    const p = run(`env -i setsid sleep ${n}.1 & sleep ${n}.2`, { signal: ac.signal });
    await waitFor(() => findProcs(`sleep\0${n}.`).length === 2);
    ac.abort();
    await assert.rejects(p, /cancelled/);
    assert.deepEqual(await waitGone(`sleep\0${n}.`), []);
  });

  test("the command's processes die with the host, even on SIGKILL", async () => {
    const n = 5000 + Math.floor(Math.random() * 900);
    const host = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/sandbox-host.ts'), root, `env -i setsid sleep ${n}.1 & echo started; sleep ${n}.2`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => host.stdout.on('data', (d: Buffer) => d.toString().includes('started') && resolve()));
    await waitFor(() => findProcs(`sleep\0${n}.`).length === 2);
    assert.equal(findProcs(`sleep\0${n}.`).length, 2, 'precondition: both sleeps run');
    host.kill('SIGKILL');
    assert.deepEqual(await waitGone(`sleep\0${n}.`), []);
  });
});

describe('bash without a sandbox: the call still returns at its timeout', () => {
  test('a process that escaped the group and the tag, holding stdout, does not hold the call', async () => {
    const n = 6000 + Math.floor(Math.random() * 900);
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(BASE, 'caboose-nosbx-')));
    try {
      const bash = createBashTool({ killGraceMs: 200 });
      // Double-forked: re-parented at once, so not a descendant either when the kill comes.
      const r = await bash.execute({ command: `env -i setsid sh -c 'sleep ${n}.1 & exit 0'; sleep ${n}.2`, timeoutMs: 500 }, testToolContext(dir));
      assert.equal(findProcs(`sleep\0${n}.1`).length, 1, 'precondition: the escaped process survived the kill');
      assert.equal(r.timedOut, true);
      assert.equal(r.sandboxed, false);
      assert.equal(r.abandonedOutput, true);
    } finally {
      for (const pid of findProcs(`sleep\0${n}.`)) process.kill(pid, 'SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bash without a sandbox: commands die with the host', () => {
  test('SIGKILL of the host: the watchdog kills the group and the tagged processes that left it', async () => {
    const n = 7000 + Math.floor(Math.random() * 900);
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(BASE, 'caboose-nosbx-')));
    const host = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/sandbox-host.ts'), dir, `sleep ${n}.1 & setsid sleep ${n}.2 & (trap '' TERM HUP; exec sleep ${n}.3) & echo started; sleep ${n}.4`], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, SANDBOX: 'off' },
    });
    try {
      await new Promise<void>((resolve) => host.stdout.on('data', (d: Buffer) => d.toString().includes('started') && resolve()));
      await waitFor(() => findProcs(`sleep\0${n}.`).length === 4);
      assert.equal(findProcs(`sleep\0${n}.`).length, 4, 'precondition: the four sleeps run');
      host.kill('SIGKILL');
      assert.deepEqual(await waitGone(`sleep\0${n}.`), []);
    } finally {
      for (const pid of findProcs(`sleep\0${n}.`)) process.kill(pid, 'SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});


async function waitFor(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

async function waitGone(needle: string): Promise<number[]> {
  await waitFor(() => findProcs(needle).length === 0);
  return findProcs(needle);
}

describe('MCP stdio servers that opt in run in the sandbox', { skip }, () => {
  test('sandbox = true: the server writes in the workspace but not outside; without a sandbox it does not start', async () => {
    const { connectMcpServer } = await import('../../src/mcp/connect');
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(BASE, 'caboose-mcp-sbx-')));
    const root = path.join(dir, 'ws');
    const outside = path.join(dir, 'outside');
    fs.mkdirSync(root);
    fs.mkdirSync(outside);
    const server = path.join(__dirname, '../support/mcp-server.mjs');
    const opts = (sandbox: Sandbox | null) => ({
      cwd: root,
      timeoutMs: 20_000,
      clientVersion: 'test',
      sandbox,
      onStderr: () => {},
      onClosed: () => {},
      onError: () => {},
      onToolsChanged: () => {},
    });
    const sandbox = new Sandbox({ root });
    try {
      const conn = await connectMcpServer({ command: process.execPath, args: [server, '--write-tool'], sandbox: true }, opts(sandbox));
      try {
        const inside = await conn.callTool('write', { path: path.join(root, 'in.txt'), text: 'ok' }, { signal: new AbortController().signal, timeoutMs: 10_000 });
        assert.equal(inside.isError, false);
        assert.equal(fs.readFileSync(path.join(root, 'in.txt'), 'utf8'), 'ok');
        const out = await conn.callTool('write', { path: path.join(outside, 'x.txt'), text: 'pwned' }, { signal: new AbortController().signal, timeoutMs: 10_000 });
        assert.equal(out.isError, true);
        assert.match(JSON.stringify(out.content), /read-only file system/i);
        assert.equal(fs.existsSync(path.join(outside, 'x.txt')), false);
      } finally {
        await conn.close();
      }
      // Without sandbox = true the same server writes outside (the precondition).
      const free = await connectMcpServer({ command: process.execPath, args: [server, '--write-tool'] }, opts(sandbox));
      try {
        const out = await free.callTool('write', { path: path.join(outside, 'x.txt'), text: 'free' }, { signal: new AbortController().signal, timeoutMs: 10_000 });
        assert.equal(out.isError, false);
      } finally {
        await free.close();
      }
      const none = new Sandbox({ root, support: { available: false, reason: 'bwrap not found (test)', fix: 'install bubblewrap' } });
      await assert.rejects(connectMcpServer({ command: process.execPath, args: [server, '--write-tool'], sandbox: true }, opts(none)), /asks for the sandbox.*bwrap not found \(test\)/);
    } finally {
      await sandbox.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
