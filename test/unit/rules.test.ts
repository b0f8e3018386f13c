import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  cutAtBoundary,
  DEFAULT_RULES_FILES,
  findRepoRoot,
  isValidRulesPattern,
  literalBase,
  loadRules,
  searchDirs,
  splitFrontMatter,
  type RulesOptions,
  type RulesSnapshot,
} from '../../src/workspace/rules';
import { projectRulesSection } from '../../src/agent/prompt';
import { ConversationRules, rulesChatLines, rulesOptions } from '../../src/host/project-rules';
import type { LuaUi } from '../../src/host/lua-ui';
import type { Logger } from '../../src/host/logger';
import { HostConfigSchema } from '../../src/host/protocol';

const OPTS: RulesOptions = { files: DEFAULT_RULES_FILES, maxBytesPerFile: 32 * 1024, maxTotalBytes: 64 * 1024 };

/** A temporary tree: `repo/` (with .git unless `git: false`) holding `repo/pkg/app/`, the working directory. */
function tree(files: Record<string, string | Buffer>, o: { git?: boolean } = {}): { top: string; repo: string; cwd: string; done(): void } {
  const top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-rules-')));
  const repo = path.join(top, 'repo');
  const cwd = path.join(repo, 'pkg', 'app');
  fs.mkdirSync(cwd, { recursive: true });
  if (o.git !== false) fs.mkdirSync(path.join(repo, '.git'));
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(top, rel);
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, content);
  }
  return { top, repo, cwd, done: () => fs.rmSync(top, { recursive: true, force: true }) };
}

describe('project rules: where to look', () => {
  it('walks from the working directory up to the repository root, nearest first', async () => {
    const t = tree({});
    try {
      assert.equal(await findRepoRoot(t.cwd, '/nonexistent-home'), t.repo);
      assert.deepEqual(searchDirs(t.cwd, t.repo), [t.cwd, path.join(t.repo, 'pkg'), t.repo]);
    } finally {
      t.done();
    }
  });

  it('a .git file (worktree, submodule) marks a root too; without a repository only the working directory is searched', async () => {
    const t = tree({ 'repo/pkg/.git': 'gitdir: ../.git/modules/pkg\n' }, { git: false });
    try {
      assert.equal(await findRepoRoot(t.cwd, '/nonexistent-home'), path.join(t.repo, 'pkg'));
      fs.rmSync(path.join(t.repo, 'pkg', '.git'));
      assert.equal(await findRepoRoot(t.cwd, '/nonexistent-home'), null);
      assert.deepEqual(searchDirs(t.cwd, null), [t.cwd]);
    } finally {
      t.done();
    }
  });

  it('a .git in the home folder does not make it a project root', async () => {
    const t = tree({}, { git: false });
    try {
      fs.mkdirSync(path.join(t.top, '.git'));
      assert.equal(await findRepoRoot(t.cwd, t.top), null);
      assert.equal(await findRepoRoot(t.cwd, '/nonexistent-home'), t.top);
    } finally {
      t.done();
    }
  });

  it('patterns must stay inside the folder searched', () => {
    for (const ok of ['AGENTS.md', '.cursor/rules/*.mdc', 'docs/**/*.md']) assert.equal(isValidRulesPattern(ok), true, ok);
    for (const bad of ['', ' ', '/etc/passwd', '../AGENTS.md', 'a/../../b', 'a\0b']) assert.equal(isValidRulesPattern(bad), false, bad);
    assert.equal(HostConfigSchema.safeParse({ rules: { files: ['../x'] } }).success, false);
    assert.equal(HostConfigSchema.safeParse({ rules: { max_total_bytes: 0 } }).success, false);
    assert.equal(HostConfigSchema.safeParse({ rules: false }).success, true);
    assert.equal(HostConfigSchema.safeParse({ rules: { files: ['AGENTS.md'], max_bytes_per_file: 100 } }).success, true);
  });

  it('rules = false or an empty list turns them off; keys left out keep their defaults', () => {
    assert.equal(rulesOptions({ rules: false }), null);
    assert.equal(rulesOptions({ rules: { files: [] } }), null);
    assert.deepEqual(rulesOptions({ rules: { max_total_bytes: 10 }, deny_globs: ['x'] }), { ...OPTS, maxTotalBytes: 10, denyGlobs: ['x'] });
    assert.deepEqual(rulesOptions({}), { ...OPTS, denyGlobs: undefined });
  });
});

describe('project rules: reading', () => {
  it('finds every configured file in each folder, nearest folder first, in the configured order', async () => {
    const t = tree({
      'repo/pkg/app/CLAUDE.md': 'app claude\n',
      'repo/pkg/app/AGENTS.md': 'app agents\n',
      'repo/pkg/app/.cursor/rules/b.mdc': 'cursor b\n',
      'repo/pkg/app/.cursor/rules/a.mdc': 'cursor a\n',
      'repo/pkg/app/.cursor/rules/notes.txt': 'not a rule\n',
      'repo/pkg/AGENTS.md': 'pkg agents\n',
      'repo/.github/copilot-instructions.md': 'copilot\n',
      'repo/AGENTS.md': 'root agents\n',
      'AGENTS.md': 'outside the repository\n',
    });
    try {
      const snap = await loadRules(t.cwd, OPTS);
      assert.equal(snap.root, t.repo);
      assert.deepEqual(
        snap.files.map((f) => [f.rel, f.text]),
        [
          ['AGENTS.md', 'app agents\n'],
          ['CLAUDE.md', 'app claude\n'],
          ['.cursor/rules/a.mdc', 'cursor a\n'],
          ['.cursor/rules/b.mdc', 'cursor b\n'],
          ['../AGENTS.md', 'pkg agents\n'],
          ['../../AGENTS.md', 'root agents\n'],
          ['../../.github/copilot-instructions.md', 'copilot\n'],
        ],
      );
      assert.deepEqual(snap.skipped, []);
      assert.equal(snap.files[0].path, path.join(t.cwd, 'AGENTS.md'));
    } finally {
      t.done();
    }
  });

  it('outside a repository only the working directory is read', async () => {
    const t = tree({ 'repo/pkg/app/AGENTS.md': 'here\n', 'repo/pkg/AGENTS.md': 'parent\n' }, { git: false });
    try {
      const snap = await loadRules(t.cwd, OPTS);
      assert.equal(snap.root, null);
      assert.deepEqual(snap.files.map((f) => f.rel), ['AGENTS.md']);
    } finally {
      t.done();
    }
  });

  it('caps: a long file is cut at a line break with the cap named; past the total cap files are skipped', async () => {
    const line = (c: string) => c.repeat(99) + '\n'; // 100 bytes
    const t = tree({
      'repo/pkg/app/AGENTS.md': line('a').repeat(30), // 3000 bytes: cut to 2000 by the per-file cap
      'repo/pkg/app/CLAUDE.md': line('c').repeat(15), // 1500: fits (3500 used)
      'repo/pkg/AGENTS.md': line('p').repeat(20), // 2000: only 1500 left, cut by the total cap
      'repo/AGENTS.md': line('r').repeat(5), // nothing left: skipped
    });
    try {
      const snap = await loadRules(t.cwd, { files: ['AGENTS.md', 'CLAUDE.md'], maxBytesPerFile: 2000, maxTotalBytes: 5000 });
      assert.deepEqual(
        snap.files.map((f) => [f.rel, f.size, f.bytes, f.truncated]),
        [
          ['AGENTS.md', 3000, 2000, 'max_bytes_per_file'],
          ['CLAUDE.md', 1500, 1500, undefined],
          ['../AGENTS.md', 2000, 1500, 'max_total_bytes'],
        ],
      );
      assert.equal(snap.files[0].text, line('a').repeat(20));
      assert.equal(snap.files[2].text, line('p').repeat(15));
      assert.deepEqual(snap.skipped, [{ path: path.join(t.repo, 'AGENTS.md'), rel: '../../AGENTS.md', size: 500, reason: 'total cap reached', overTotal: true }]);
    } finally {
      t.done();
    }
  });

  it('with less than 1 KB of the total cap left, a file that does not fit is skipped, one that fits is read', async () => {
    const t = tree({ 'repo/pkg/app/AGENTS.md': 'a'.repeat(4500), 'repo/pkg/app/CLAUDE.md': 'c'.repeat(2000), 'repo/pkg/AGENTS.md': 'small\n' });
    try {
      const snap = await loadRules(t.cwd, { files: ['AGENTS.md', 'CLAUDE.md'], maxBytesPerFile: 10_000, maxTotalBytes: 5000 });
      assert.deepEqual(snap.files.map((f) => f.rel), ['AGENTS.md', '../AGENTS.md']);
      assert.deepEqual(snap.skipped.map((s) => [s.rel, s.reason]), [['CLAUDE.md', 'total cap reached']]);
    } finally {
      t.done();
    }
  });

  it('binary, non-UTF-8, empty, unreadable and duplicate files are skipped with a reason', async () => {
    const t = tree({
      'repo/pkg/app/AGENTS.md': Buffer.from([0x68, 0x69, 0x00, 0x01]),
      'repo/pkg/app/CLAUDE.md': Buffer.from('caf\xe9\n', 'latin1'),
      'repo/pkg/app/.github/copilot-instructions.md': '',
      'repo/pkg/app/.cursor/rules/locked.mdc': 'secret\n',
      'repo/pkg/AGENTS.md': 'shared\n',
      'repo/pkg/CLAUDE.md': 'shared\n',
      'repo/AGENTS.md': 'root\n',
    });
    try {
      fs.chmodSync(path.join(t.cwd, '.cursor/rules/locked.mdc'), 0o000);
      fs.symlinkSync('AGENTS.md', path.join(t.repo, 'CLAUDE.md'));
      const snap = await loadRules(t.cwd, OPTS);
      const root = process.getuid?.() === 0; // root reads any file
      assert.deepEqual(snap.files.map((f) => f.rel), [...(root ? ['.cursor/rules/locked.mdc'] : []), '../AGENTS.md', '../../AGENTS.md']);
      const reasons = Object.fromEntries(snap.skipped.map((s) => [s.rel, s.reason]));
      assert.deepEqual(reasons, {
        'AGENTS.md': 'binary',
        'CLAUDE.md': 'not UTF-8',
        '.github/copilot-instructions.md': 'empty',
        ...(root ? {} : { '.cursor/rules/locked.mdc': 'permission denied' }),
        '../CLAUDE.md': 'same text as ../AGENTS.md',
        '../../CLAUDE.md': 'same file as ../../AGENTS.md',
      });
    } finally {
      fs.chmodSync(path.join(t.cwd, '.cursor/rules/locked.mdc'), 0o644);
      t.done();
    }
  });

  it('a cut never splits a UTF-8 character; CRLF and a BOM are normalized', async () => {
    const t = tree({ 'repo/pkg/app/AGENTS.md': 'é'.repeat(100), 'repo/pkg/app/CLAUDE.md': '\ufeffa\r\nb\r\n' });
    try {
      const snap = await loadRules(t.cwd, { files: ['AGENTS.md', 'CLAUDE.md'], maxBytesPerFile: 51, maxTotalBytes: 10_000 });
      assert.equal(snap.files[0].text, 'é'.repeat(25));
      assert.equal(snap.files[0].bytes, 50);
      assert.equal(snap.files[1].text, 'a\nb\n');
      assert.deepEqual([...cutAtBoundary(Buffer.from('abc\nd'))], [...Buffer.from('abc\n')]);
      assert.deepEqual([...cutAtBoundary(Buffer.from('a\nbcdef'))], [...Buffer.from('a\nbcdef')]);
      assert.deepEqual([...cutAtBoundary(Buffer.from('abc€').subarray(0, 5))], [...Buffer.from('abc')]);
    } finally {
      t.done();
    }
  });

  it('files under the working directory matched by deny_globs are skipped', async () => {
    const t = tree({ 'repo/pkg/app/AGENTS.md': 'ok\n', 'repo/pkg/app/.cursor/rules/x.mdc': 'hidden\n' });
    try {
      const snap = await loadRules(t.cwd, { ...OPTS, denyGlobs: ['.git/**', '.cursor'] });
      assert.deepEqual(snap.files.map((f) => f.rel), ['AGENTS.md']);
      assert.deepEqual(snap.skipped.map((s) => [s.rel, s.reason]), [['.cursor/rules/x.mdc', 'denied by deny_globs']]);
    } finally {
      t.done();
    }
  });
});

describe('project rules: Cursor front matter', () => {
  it('takes description, globs and alwaysApply off the text', () => {
    assert.deepEqual(splitFrontMatter('---\ndescription: "TS style."\nglobs: src/**/*.ts, *.tsx\nalwaysApply: false\n---\nUse strict.\n'), {
      text: 'Use strict.\n',
      meta: { description: 'TS style.', globs: 'src/**/*.ts, *.tsx', alwaysApply: false },
    });
    assert.deepEqual(splitFrontMatter('---\nglobs:\n  - "*.py"\n  - tests/*.py\nalwaysApply: true\n---\nBody'), { text: 'Body', meta: { globs: '*.py, tests/*.py', alwaysApply: true } });
    assert.deepEqual(splitFrontMatter('---\nglobs: ["*.go"]\n---\nx'), { text: 'x', meta: { globs: '*.go' } });
    assert.deepEqual(splitFrontMatter('---\nno end\nbody'), { text: '---\nno end\nbody' });
    assert.deepEqual(splitFrontMatter('plain'), { text: 'plain' });
  });

  it('only .mdc files lose their front matter; one with nothing after it is skipped as empty', async () => {
    const t = tree({
      'repo/pkg/app/AGENTS.md': '---\ntitle: kept\n---\nagents\n',
      'repo/pkg/app/.cursor/rules/go.mdc': '---\nglobs: "*.go"\n---\ngofmt\n',
      'repo/pkg/app/.cursor/rules/void.mdc': '---\nalwaysApply: true\n---\n\n',
    });
    try {
      const snap = await loadRules(t.cwd, OPTS);
      assert.deepEqual(snap.files.map((f) => [f.rel, f.text, f.meta]), [
        ['AGENTS.md', '---\ntitle: kept\n---\nagents\n', undefined],
        ['.cursor/rules/go.mdc', 'gofmt\n', { globs: '*.go' }],
      ]);
      assert.deepEqual(snap.skipped.map((s) => [s.rel, s.reason]), [['.cursor/rules/void.mdc', 'empty']]);
    } finally {
      t.done();
    }
  });
});

describe('project rules: the prompt section and the chat lines', () => {
  const files = [
    { rel: 'AGENTS.md', size: 10, bytes: 10, text: 'Use tabs.\n' },
    { rel: '../CLAUDE.md', size: 5000, bytes: 2000, text: 'Use spaces.', truncated: 'max_bytes_per_file' as const },
    { rel: '.cursor/rules/ts.mdc', size: 9, bytes: 9, text: 'strict', meta: { globs: '*.ts', description: 'TypeScript.' } },
  ];

  it('nearest first, each file in a tag naming its path, the conflict rule and the caps stated', () => {
    const skipped = [
      { rel: '../../AGENTS.md', size: 700, reason: 'total cap reached', overTotal: true as const },
      { rel: 'x.mdc', reason: 'binary' },
    ];
    const s = projectRulesSection({ cwd: '/w/app', files, skipped })!;
    assert.match(s, /When instructions conflict, the file nearer to the working directory wins\./);
    assert.match(s, /relative to the working directory \(\/w\/app\)/);
    assert.ok(s.indexOf('<project_instructions path="AGENTS.md">\nUse tabs.\n</project_instructions>') > 0, s);
    assert.ok(s.indexOf('path="AGENTS.md"') < s.indexOf('path="../CLAUDE.md"'));
    assert.match(s, /Use spaces\.\n\[truncated: only the first 2000 of 5000 bytes are included \(max_bytes_per_file\); read the file for the rest\]\n<\/project_instructions>/);
    assert.match(s, /<project_instructions path="\.cursor\/rules\/ts\.mdc">\n\(This rule applies to files matching \*\.ts: TypeScript\.\)\nstrict/);
    assert.match(s, /Not included because the size cap for these files \(max_total_bytes\) was reached: \.\.\/\.\.\/AGENTS\.md \(700 bytes\)\./);
    assert.doesNotMatch(s, /x\.mdc/, 'files skipped for other reasons stay out of the prompt');
    assert.equal(projectRulesSection({ cwd: '/w', files: [], skipped: [{ rel: 'a' }] }), undefined);
  });

  it('the chat names the files, the truncated ones and the skipped ones with their reason', () => {
    assert.deepEqual(rulesChatLines({ files: files.map((f) => ({ ...f, path: '/x' })), skipped: [{ path: '/y', rel: 'CLAUDE.md', reason: 'not UTF-8' }] }), [
      'Rules: AGENTS.md, ../CLAUDE.md (truncated), .cursor/rules/ts.mdc',
      'Rules skipped: CLAUDE.md (not UTF-8)',
    ]);
    assert.deepEqual(rulesChatLines({ files: [], skipped: [] }), []);
  });
});

describe('project rules: one conversation', () => {
  const snap = (text: string): RulesSnapshot => ({
    cwd: '/w',
    root: null,
    dirs: ['/w'],
    files: [{ path: '/w/AGENTS.md', rel: 'AGENTS.md', size: text.length, bytes: text.length, text }],
    skipped: [],
  });
  const harness = (texts: string[], stored?: unknown) => {
    const events: unknown[] = [];
    const records: string[][] = [];
    let reads = 0;
    const rules = new ConversationRules({
      options: OPTS,
      cwd: '/w',
      ui: { emit: (name: string, payload: unknown) => void events.push([name, payload]) } as unknown as LuaUi,
      log: { info() {}, warn() {}, debug() {}, error() {} } as unknown as Logger,
      stored,
      record: (_s, lines) => void records.push(lines),
      load: async () => snap(texts[Math.min(reads++, texts.length - 1)]),
    });
    return { rules, events, records, reads: () => reads };
  };

  it('shown at the start, read again at the first message (the chat is redrawn only when it changed), then fixed', async () => {
    const h = harness(['one\n', 'two\n', 'three\n']);
    assert.equal(h.rules.prompt(), undefined);
    h.rules.start();
    await h.rules.freeze();
    assert.match(h.rules.prompt()!, /two/);
    assert.deepEqual(h.events, [['rules', { lines: ['Rules: AGENTS.md'] }]], 'same names: no second event');
    assert.deepEqual(h.records, [['Rules: AGENTS.md']]);
    await h.rules.freeze();
    assert.equal(h.reads(), 2, 'fixed: not read again');
    assert.match(h.rules.prompt()!, /two/);
  });

  it('a message that arrived before the first reading began: that reading is used, not read again (issue 24); one that arrived earlier than it: read again', async () => {
    const arrived = performance.now();
    const h = harness(['one\n', 'two\n']);
    h.rules.start();
    await h.rules.freeze(arrived);
    assert.equal(h.reads(), 1, 'the reading that began after the message arrived is used');
    assert.match(h.rules.prompt()!, /one/);
    assert.deepEqual(h.records, [['Rules: AGENTS.md']]);
    // The chat opened (and read the rules) before the message was sent: the files may have changed since.
    const w = harness(['one\n', 'two\n']);
    w.rules.start();
    await new Promise((r) => setTimeout(r, 2));
    await w.rules.freeze(performance.now());
    assert.equal(w.reads(), 2);
    assert.match(w.rules.prompt()!, /two/);
    // A reading that found nothing usable (failed) is not reused.
    let n = 0;
    const failing = new ConversationRules({
      options: OPTS,
      cwd: '/w',
      ui: { emit: () => undefined } as unknown as LuaUi,
      log: { info() {}, warn() {}, debug() {}, error() {} } as unknown as Logger,
      load: async () => {
        if (n++ === 0) throw new Error('EIO');
        return snap('after\n');
      },
    });
    const at = performance.now();
    failing.start();
    await failing.freeze(at);
    assert.equal(n, 2);
    assert.match(failing.prompt()!, /after/);
  });

  it('a reopened conversation uses its stored rules and reads nothing; unreadable stored rules are read again', async () => {
    const h = harness(['fresh\n'], snap('stored\n'));
    h.rules.start();
    await h.rules.freeze();
    assert.match(h.rules.prompt()!, /stored/);
    assert.equal(h.reads(), 0);
    assert.deepEqual(h.events, []);
    const bad = harness(['fresh\n'], { nonsense: true });
    await bad.rules.freeze();
    assert.match(bad.rules.prompt()!, /fresh/);
  });
});

describe('project rules: fast-glob only for a glob whose folder exists', () => {
  it('literalBase: the leading folders written without glob syntax', () => {
    assert.equal(literalBase('AGENTS.md'), null);
    assert.equal(literalBase('.github/copilot-instructions.md'), null);
    assert.equal(literalBase('.cursor/rules/*.mdc'), '.cursor/rules');
    assert.equal(literalBase('docs/**/*.md'), 'docs');
    assert.equal(literalBase('*.md'), '');
    assert.equal(literalBase('a/{b,c}/x.md'), 'a');
    assert.equal(literalBase('a/b\\*/x.md'), 'a');
    assert.equal(literalBase('a/@(b|c)/x.md'), 'a');
  });

  it('rules are read without loading fast-glob when no glob folder exists, and globs still match when it does', async () => {
    const t = tree({ 'repo/AGENTS.md': 'root rules\n', 'repo/pkg/app/.github/copilot-instructions.md': 'copilot\n' });
    try {
      // A fresh process: whether fast-glob was loaded is read from its module cache.
      const script = `
        const { loadRules, DEFAULT_RULES_FILES } = require(${JSON.stringify(path.resolve(__dirname, '..', '..', 'src', 'workspace', 'rules.ts'))});
        loadRules(${JSON.stringify(t.cwd)}, { files: DEFAULT_RULES_FILES, maxBytesPerFile: 32768, maxTotalBytes: 65536 }).then((s) => {
          const loaded = Object.keys(require.cache).some((k) => k.includes('/node_modules/fast-glob/'));
          process.stdout.write(JSON.stringify({ files: s.files.map((f) => f.rel), loaded }));
        });`;
      const run = () => JSON.parse(require('node:child_process').execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' })) as { files: string[]; loaded: boolean };
      const before = run();
      assert.deepEqual(before.files, ['.github/copilot-instructions.md', '../../AGENTS.md']);
      assert.equal(before.loaded, false, 'no .cursor/rules folder: fast-glob not loaded');
      fs.mkdirSync(path.join(t.cwd, '.cursor', 'rules'), { recursive: true });
      fs.writeFileSync(path.join(t.cwd, '.cursor', 'rules', 'a.mdc'), 'cursor a\n');
      const after = run();
      assert.deepEqual(after.files, ['.github/copilot-instructions.md', '.cursor/rules/a.mdc', '../../AGENTS.md']);
      assert.equal(after.loaded, true);
    } finally {
      t.done();
    }
  });
});
