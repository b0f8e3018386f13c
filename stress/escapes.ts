/**
 * Escapes by pattern and by link (issue 18, items 9 and 10): glob and search_files with {a,b}
 * alternatives, `..`, absolute and home prefixes, through symlinks to outside folders (at several
 * depths, absolute and relative, chained, dangling); and every tool against nested repositories' `.git`
 * (folders at any depth, submodule and worktree `.git` files, case variants). Nothing outside may be
 * listed or read, every listed path must resolve inside the root, every `.git` attempt must be refused
 * and leave the file as it was. Run: `node --import tsx stress/escapes.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openWorkspace } from '../src/index';
import type { ToolResult } from '../src/tools/tool';
import { Checks, mainIfDirect, sameTree, sha256, snapshotTree, tempDir, treeDiff, type SuiteReport } from './lib';

const CANARY = 'OUTSIDE-ESCAPE-CANARY';
const OUTSIDE_NAME = 'outside-only-file';

const PREFIXES = [
  '..', '../..', '.{.,}', '{..,x}', '{x,..}', '{.,..}/{.,..}', 'x/../..', 'x/{..,y}/..', '{/etc,x}', '{/usr,x}', '{/usr/bin,x}', '{/,x}',
  '/', '//', '{~,x}', '~', 'ld', 'lr', 'sub/ld2', 'sub/up', 'l{d,x}', '{ld,sub}', '{lr,x}', 'lchain', 'dangling', '{lparent,x}/outside',
  'lparent', '**/..', '{a,b,c,d,e,f,g,h,../outside}', '@(..|x)', '+(..)', '!(x)/..',
];
const SUFFIXES = ['', '/*', '/**', '/**/*', '/pass*', '/outside/**', `/**/${OUTSIDE_NAME}*`, '/{bin,etc}/*'];

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks(Number(process.env.STRESS_EXAMPLES ?? 20));
  const tmp = tempDir('escapes');
  try {
    const base = tmp.dir;
    const root = path.join(base, 'ws');
    const outside = path.join(base, 'outside');
    fs.mkdirSync(path.join(outside, 'deep', 'er'), { recursive: true });
    fs.writeFileSync(path.join(outside, `${OUTSIDE_NAME}.txt`), `${CANARY}\n`);
    fs.writeFileSync(path.join(outside, 'deep', 'er', `${OUTSIDE_NAME}-2.txt`), `${CANARY}\n`);
    fs.mkdirSync(path.join(root, 'sub', 'x'), { recursive: true });
    fs.mkdirSync(path.join(root, 'x', 'y'), { recursive: true });
    fs.writeFileSync(path.join(root, 'x', 'inside.txt'), 'inside\n');
    fs.symlinkSync(outside, path.join(root, 'ld'));
    fs.symlinkSync('../outside', path.join(root, 'lr'));
    fs.symlinkSync('../../outside/deep', path.join(root, 'sub', 'ld2'));
    fs.symlinkSync('../..', path.join(root, 'sub', 'up'));
    fs.symlinkSync('ld', path.join(root, 'lchain'));
    fs.symlinkSync('../outside/not-yet', path.join(root, 'dangling'));
    fs.symlinkSync('..', path.join(root, 'lparent'));
    fs.symlinkSync(path.join(outside, `${OUTSIDE_NAME}.txt`), path.join(root, 'lfile.txt'));
    // Nested repositories.
    const gitFiles: string[] = [];
    for (const repo of ['vendor/lib', 'a/b/c/d', 'packages/p1', 'x/y']) {
      fs.mkdirSync(path.join(root, repo, '.git', 'hooks'), { recursive: true });
      fs.writeFileSync(path.join(root, repo, '.git', 'config'), '[core]\n\tbare = false\n');
      gitFiles.push(`${repo}/.git/config`);
    }
    fs.mkdirSync(path.join(root, 'mods', 'sm'), { recursive: true });
    fs.writeFileSync(path.join(root, 'mods', 'sm', '.git'), 'gitdir: ../../.git/modules/sm\n');
    gitFiles.push('mods/sm/.git');
    fs.mkdirSync(path.join(root, 'wt'), { recursive: true });
    fs.writeFileSync(path.join(root, 'wt', '.git'), 'gitdir: /somewhere/.git/worktrees/wt\n');
    gitFiles.push('wt/.git');
    fs.writeFileSync(path.join(root, 'x', 'b.txt'), 'beta\n');
    const ws = openWorkspace({ root, dataDir: path.join(base, 'data'), sessionId: 'stress-escapes', denyGlobs: [] });
    const outsideBefore = snapshotTree(outside);
    const gitBefore = new Map(gitFiles.map((g) => [g, fs.readFileSync(path.join(root, g))]));
    let attempts = 0;
    let refused = 0;
    let escaped = 0;

    // 1. Patterns.
    const leaked = (res: ToolResult): string | null => {
      const text = JSON.stringify(res.ok ? res.data : '');
      if (text.includes(CANARY) || text.includes(OUTSIDE_NAME) || /passwd|"\/usr|"\/etc|\.\.\//.test(text)) return text.slice(0, 300);
      if (!res.ok) return null;
      const paths = ((res.data as { paths?: string[] }).paths ?? []).map((p) => p.replace(/\/$/, ''));
      for (const p of paths) {
        const abs = path.join(root, p);
        let real: string;
        try {
          real = fs.realpathSync(abs);
        } catch {
          const t = fs.lstatSync(abs, { throwIfNoEntry: false })?.isSymbolicLink() ? path.resolve(path.dirname(abs), fs.readlinkSync(abs)) : abs;
          real = t;
        }
        if (real !== root && !real.startsWith(root + path.sep)) return `${p} resolves to ${real}`;
      }
      return null;
    };
    for (const pre of PREFIXES) {
      for (const suf of SUFFIXES) {
        const pattern = `${pre}${suf}`;
        for (const start of [undefined, 'sub', 'x']) {
          for (const call of [
            () => ws.call('glob', { pattern, ...(start ? { path: start } : {}), includeIgnored: true }),
            () => ws.call('search_files', { mode: 'glob', query: pattern, ...(start ? { path: start } : {}) }),
          ]) {
            attempts++;
            const res = await call();
            if (!res.ok) refused++;
            const l = leaked(res);
            if (l) escaped++;
            checks.record('glob/search_files: nothing outside listed, every path resolves inside the root', l && `${pattern} (path ${start ?? '.'}): ${l}`);
          }
        }
      }
    }
    // Content searches through the links.
    for (const p of [undefined, 'sub', 'x', 'ld', 'lr', 'sub/ld2', 'lchain', 'lfile.txt', 'lparent', 'sub/up']) {
      for (const call of [
        () => ws.call('grep', { pattern: CANARY, ...(p ? { path: p } : {}), includeIgnored: true }),
        () => ws.call('search_files', { mode: 'text', query: CANARY, ...(p ? { path: p } : {}) }),
        () => ws.call('list_directory', { ...(p ? { path: p } : {}), recursive: true, includeIgnored: true }),
      ]) {
        attempts++;
        const res = await call();
        if (!res.ok) refused++;
        const l = JSON.stringify(res).includes(CANARY) || JSON.stringify(res).includes(OUTSIDE_NAME);
        if (l) escaped++;
        checks.record('grep/search/list through symlinks: no outside name or content', l && `${p}: ${JSON.stringify(res).slice(0, 300)}`);
      }
    }

    // 2. Nested .git: every tool, every variant, refused and unchanged.
    const variants = [...gitFiles, 'vendor/lib/.git/hooks/pre-commit', 'a/b/c/d/.git', 'vendor/lib/.GIT/config', 'vendor/lib/./.git/config', 'x/../vendor/lib/.git/config', 'new/.git/config'];
    let gitAttempts = 0;
    for (const g of variants) {
      const exists = gitBefore.has(g);
      const sha = exists ? sha256(gitBefore.get(g)!) : '';
      const uses: [string, () => Promise<ToolResult>][] = [
        ['read_file', () => ws.call('read_file', { path: g })],
        ['write_file', () => ws.call('write_file', { path: g, content: '[core]\n\tfsmonitor = touch pwned\n', expectedSha256: sha })],
        ['edit_file', () => ws.call('edit_file', { path: g, expectedSha256: sha, edits: [{ oldText: '[core]', newText: '[core]\n\tfsmonitor = x' }] })],
        ['create_file', () => ws.call('create_file', { path: g, content: '#!/bin/sh\n' })],
        ['delete_file', () => ws.call('delete_file', { path: g, expectedSha256: sha })],
        ['move_file from', () => ws.call('move_file', { from: g, to: 'stolen.txt', expectedSha256: sha })],
        ['move_file to', () => ws.call('move_file', { from: 'x/b.txt', to: g, expectedSha256: sha256('beta\n') })],
        ['apply_patch add', () => ws.call('apply_patch', { patch: `*** Begin Patch\n*** Add File: ${g.slice(0, g.toLowerCase().indexOf('.git') + 4)}/hooks/post-merge\n+x\n*** End Patch\n` })],
        ['apply_patch update', () => ws.call('apply_patch', { patch: `*** Begin Patch\n*** Update File: ${g}\n@@\n-[core]\n+[core]\n+\tfsmonitor = x\n*** End Patch\n` })],
        ['grep', () => ws.call('grep', { pattern: 'core', path: g })],
        ['list_directory', () => ws.call('list_directory', { path: path.posix.dirname(g) })],
      ];
      for (const [label, call] of uses) {
        if (label === 'list_directory' && !path.posix.dirname(g).split('/').some((s) => s.toLowerCase() === '.git')) continue;
        attempts++;
        gitAttempts++;
        const res = await call();
        if (!res.ok) refused++;
        const ok = !res.ok && res.error.kind === 'permission_denied';
        if (!ok) escaped++;
        checks.record('nested .git (any depth, .git files, case variants): every tool refused with permission_denied', !ok && `${label} ${g}: ${JSON.stringify(res).slice(0, 200)}`);
      }
    }
    const gitNow = new Map(gitFiles.map((g) => [g, fs.existsSync(path.join(root, g)) ? fs.readFileSync(path.join(root, g)) : Buffer.alloc(0)]));
    for (const g of gitFiles) checks.record('every .git file unchanged', !gitNow.get(g)!.equals(gitBefore.get(g)!) && `${g} changed`);
    checks.record('no hook or config created in a .git folder', fs.existsSync(path.join(root, 'vendor/lib/.git/hooks/pre-commit')) && 'pre-commit created');
    const listed = JSON.stringify([await ws.call('glob', { pattern: '**', includeIgnored: true }), await ws.call('grep', { pattern: 'core|gitdir', includeIgnored: true })]);
    checks.record('a listing of the whole workspace names no .git entry', /\.git[/"]/i.test(listed) && listed.slice(0, 300));
    const after = snapshotTree(outside);
    checks.record('files outside the root unchanged', !sameTree(outsideBefore, after) && treeDiff(outsideBefore, after));
    ws.close();
    checks.figures.push(`${PREFIXES.length} prefixes × ${SUFFIXES.length} suffixes × 3 start folders × 2 tools of glob patterns, 30 content searches and listings through links, ${gitAttempts} calls on ${variants.length} nested .git paths.`);
    checks.figures.push(`In all: ${attempts} attempts, ${refused} refused, ${escaped} escaped.`);
  } finally {
    tmp.remove();
  }
  return checks.report('escapes', 'Glob, search and link escapes; nested .git', started);
}

mainIfDirect(module, run);
