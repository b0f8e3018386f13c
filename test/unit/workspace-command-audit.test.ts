import { test, describe, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openWorkspace, verifyAuditLog, type OpenedWorkspace } from '../../src/index';
import { createBashTool } from '../../src/tools/bash';
import { Agent, type ApprovalDecision, type PermissionMode } from '../../src/agent/loop';
import { CommandAudit, type CommandAuditDetails } from '../../src/workspace/command-audit';
import { AUDIT_GENESIS_HASH, auditRowHash, MIGRATIONS, openStore, type AuditEntry, type AuditRow } from '../../src/store';
import { startFakeOpenAI } from '../support/fake-openai';

let tmp: string;
let root: string;
let dataDir: string;
let ws: OpenedWorkspace;

const write = (rel: string, content: string): void => {
  fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  fs.writeFileSync(path.join(root, rel), content);
};
const bashRows = (): AuditRow[] => ws.workspace.audit.list().filter((r) => r.tool === 'bash');
const details = (r: AuditRow): CommandAuditDetails => JSON.parse(r.details ?? 'null') as CommandAuditDetails;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-cmd-audit-')));
  root = path.join(tmp, 'ws');
  dataDir = path.join(tmp, 'data');
  fs.mkdirSync(root);
  ws = openWorkspace({ root, dataDir, sessionId: 'sess-1' });
  ws.registry.add(createBashTool({ killGraceMs: 200 }));
});
afterEach(() => {
  ws.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('bash calls in the audit log', () => {
  test('one row per call: command, cwd, exit status and the files created, changed and deleted', async () => {
    write('a.txt', 'a\n');
    write('gone.txt', 'bye\n');
    write('sub/keep.txt', 'k\n');
    const res = await ws.call('bash', { command: 'echo new > ../made.txt && echo more >> ../a.txt && rm ../gone.txt && exit 3', cwd: 'sub' });
    assert.equal(res.ok, true);
    const rows = bashRows();
    assert.equal(rows.length, 1);
    const r = rows[0];
    assert.deepEqual([r.operation, r.ok, r.errorKind, r.sessionId, r.workspace], ['exec', true, null, 'sess-1', root]);
    const d = details(r);
    assert.equal(d.command, 'echo new > ../made.txt && echo more >> ../a.txt && rm ../gone.txt && exit 3');
    assert.equal(d.cwd, 'sub');
    assert.equal(d.exitCode, 3);
    assert.equal(typeof d.durationMs, 'number');
    assert.deepEqual(d.files, { created: ['made.txt'], changed: ['a.txt'], deleted: ['gone.txt'] });
    assert.equal(d.scan, 'complete');
    assert.deepEqual(ws.verifyAuditLog(), { ok: true, rows: 1 });
  });

  test('a command that changes nothing lists no files; .gitignored files and the data folder are not scanned', async () => {
    ws.close();
    dataDir = path.join(root, '.caboose-data');
    ws = openWorkspace({ root, dataDir, sessionId: 's' });
    ws.registry.add(createBashTool());
    write('.gitignore', 'build/\n');
    await ws.call('bash', { command: 'true' });
    await ws.call('bash', { command: 'mkdir -p build && echo x > build/out.js && echo y > src.js' });
    const [quiet, build] = bashRows().map(details);
    assert.deepEqual(quiet.files, { created: [], changed: [], deleted: [] });
    assert.deepEqual(build.files, { created: ['src.js'], changed: [], deleted: [] }, 'no build/, no database or WAL files');
  });

  test('timeouts, signals and a cwd outside the workspace are recorded as failures', async () => {
    await ws.call('bash', { command: 'sleep 5', timeoutMs: 100 });
    await ws.call('bash', { command: 'kill -9 $$' });
    await ws.call('bash', { command: 'ls', cwd: '../..' });
    const rows = bashRows();
    assert.deepEqual(rows.map((r) => [r.operation, r.ok, r.errorKind]), [
      ['exec', false, 'timeout'],
      ['exec', true, null],
      ['exec', false, 'outside_workspace'],
    ]);
    assert.equal(details(rows[0]).timedOut, true);
    assert.deepEqual([details(rows[1]).exitCode, details(rows[1]).signal], [null, 'SIGKILL']);
    assert.equal(details(rows[2]).cwd, '../..');
  });

  test('invalid arguments are recorded as refused, without running or scanning', async () => {
    const res = await ws.call('bash', { command: '', cwd: 7 });
    assert.equal(res.ok, false);
    const [r] = bashRows();
    assert.deepEqual([r.operation, r.ok, r.errorKind], ['refused', false, 'invalid_arguments']);
    assert.deepEqual(details(r), { command: '', cwd: '.' });
  });

  test('calls the agent refuses (unparsable arguments, mode, user) are recorded through the registry', async (t) => {
    const fake = await startFakeOpenAI();
    t.after(() => fake.close());
    const runAgent = async (mode: PermissionMode, decision: ApprovalDecision, command: string) => {
      fake.script({ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'ok' });
      const agent = new Agent({
        provider: { baseURL: fake.url, apiKey: 'k', model: 'm' },
        registry: ws.registry,
        mode,
        makeContext: (signal) => ({ signal, workspace: ws.workspace, sessionId: 'sess-1' }),
        requestApproval: async () => decision,
      });
      agent.send('go');
      await agent.idle();
    };
    fake.script({ toolCalls: [{ name: 'bash', arguments: '{"command": "rm -r' }] }, { text: 'ok' });
    const broken = new Agent({
      provider: { baseURL: fake.url, apiKey: 'k', model: 'm' },
      registry: ws.registry,
      mode: 'chug',
      makeContext: (signal) => ({ signal, workspace: ws.workspace, sessionId: 'sess-1' }),
      requestApproval: async () => ({ decision: 'once' }),
    });
    broken.send('go');
    await broken.idle();
    await runAgent('plan', { decision: 'once' }, 'touch planned.txt');
    await runAgent('create', { decision: 'reject', reason: 'no' }, 'rm -rf /');
    await runAgent('create', { decision: 'once' }, 'touch approved.txt');
    const rows = bashRows();
    assert.deepEqual(rows.map((r) => [r.operation, r.ok, r.errorKind, details(r).command]), [
      ['refused', false, 'invalid_arguments', ''],
      ['refused', false, 'blocked_by_mode', 'touch planned.txt'],
      ['refused', false, 'rejected_by_user', 'rm -rf /'],
      ['exec', true, null, 'touch approved.txt'],
    ]);
    assert.deepEqual(details(rows[3]).files?.created, ['approved.txt']);
    assert.equal(fs.existsSync(path.join(root, 'planned.txt')), false);
  });

  test('long file lists are capped with a count; a scan cut by its limits says so', async () => {
    await ws.call('bash', { command: 'for i in $(seq 1 130); do echo $i > f$i.txt; done' });
    const d = details(bashRows()[0]);
    assert.equal(d.files?.created.length, 100);
    assert.equal(d.filesOmitted, 30);

    const audit = new CommandAudit(ws.workspace, { maxFiles: 10 });
    await audit.run('bash', { command: 'x' }, true, async () => ({ ok: true, data: { exitCode: 0, timedOut: false, durationMs: 1 } }));
    assert.equal(details(bashRows().at(-1)!).scan, 'incomplete');
  });

  test('a failing audit write is logged and the command\'s result still comes back', async () => {
    ws.workspace.recordAudit = () => {
      throw new Error('database is locked');
    };
    const logged: string[] = [];
    const ctx = { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 's', log: (_l: string, msg: string) => void logged.push(msg) };
    const res = await ws.registry.call('bash', { command: 'echo out' }, ctx);
    assert.equal(res.ok, true);
    assert.match(JSON.stringify(res), /out/);
    assert.deepEqual(logged, ['could not write the audit row of a command']);
  });

  test('the command line is stored up to 8 KiB', async () => {
    await ws.call('bash', { command: `true # ${'x'.repeat(20_000)}` });
    const d = details(bashRows()[0]);
    assert.ok(d.command.length < 8300);
    assert.match(d.command, /cut at 8192 characters/);
  });
});

describe('the chain covers workspace and details', () => {
  test('editing or removing a bash row\'s details breaks the chain at that row', async () => {
    await ws.call('bash', { command: 'echo a > a.txt' });
    await ws.call('bash', { command: 'echo b > b.txt' });
    ws.close();
    assert.deepEqual(verifyAuditLog(dataDir), { ok: true, rows: 2 });
    for (const sql of [
      "UPDATE audit_log SET details = replace(details, 'b.txt', 'c.txt') WHERE id = 2",
      'UPDATE audit_log SET details = NULL WHERE id = 2',
      "UPDATE audit_log SET workspace = '/elsewhere' WHERE id = 2",
    ]) {
      const copy = path.join(tmp, `copy-${Math.random()}.sqlite`);
      fs.copyFileSync(path.join(dataDir, 'caboose.sqlite'), copy);
      const db = new Database(copy);
      db.exec('DROP TRIGGER audit_log_no_update');
      db.prepare(sql).run();
      db.close();
      assert.deepEqual({ ...verifyAuditLog(copy), problem: undefined }, { ok: false, rows: 2, firstBadRowId: 2, problem: undefined }, sql);
    }
  });

  test('rows written before schema 4 keep verifying after the upgrade, next to new rows', () => {
    const file = path.join(tmp, 'old.sqlite');
    const db = new Database(file);
    for (const m of MIGRATIONS.filter((x) => x.version <= 2)) db.exec(m.sql);
    db.pragma('user_version = 2');
    let prev = AUDIT_GENESIS_HASH;
    for (const p of ['x.txt', 'y.txt']) {
      const e: AuditEntry = { time: '2024-01-01T00:00:00.000Z', sessionId: 'old', tool: 'write_file', operation: 'write', path: p, toPath: null, beforeSha256: null, afterSha256: createHash('sha256').update(p).digest('hex'), diff: '+x', ok: true, errorKind: null };
      const hash = auditRowHash(prev, e);
      db.prepare('INSERT INTO audit_log (time, session_id, tool, operation, path, to_path, before_sha256, after_sha256, diff, ok, error_kind, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)')
        .run(e.time, e.sessionId, e.tool, e.operation, e.path, e.toPath, e.beforeSha256, e.afterSha256, e.diff, 1, null, prev, hash);
      prev = hash;
    }
    db.close();
    const store = openStore(file);
    try {
      assert.equal(store.db.pragma('user_version', { simple: true }), MIGRATIONS.at(-1)!.version);
      store.audit.append({ time: new Date().toISOString(), sessionId: 'new', tool: 'bash', operation: 'exec', path: null, toPath: null, beforeSha256: null, afterSha256: null, diff: null, ok: true, errorKind: null, workspace: '/w', details: '{"command":"ls"}' });
      assert.deepEqual(store.audit.verify(), { ok: true, rows: 3 });
      assert.deepEqual(store.audit.list({ workspace: '/w' }).map((r) => r.tool), ['bash']);
      store.db.exec('DROP TRIGGER audit_log_no_update');
      store.db.prepare("UPDATE audit_log SET details = '{}' WHERE id = 1").run();
      assert.deepEqual({ ...store.audit.verify(), problem: undefined }, { ok: false, rows: 1, firstBadRowId: 1, problem: undefined }, 'details added to an old row');
    } finally {
      store.close();
    }
  });
});
