/**
 * Hostile paths: every path-taking tool (and both ends of move_file and apply_patch, its Move to
 * included) is called with paths that try to leave the workspace or reach protected files. Each attempt
 * must be refused with the right error kind, nothing outside the root may change, and no outside name
 * or content may show up in any result. Run: `node --import tsx stress/paths.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openWorkspace, type OpenedWorkspace } from '../src/index';
import { createBashTool } from '../src/tools/bash';
import type { ToolResult } from '../src/tools/tool';
import { swapFolderForLinkAt } from '../test/support/symlink-swap';
import { Checks, mainIfDirect, sha256, snapshotTree, tempDir, treeDiff, sameTree, type SuiteReport } from './lib';

const SECRET = 'OUTSIDE-SECRET-CANARY';
/** Only in the outside files, never in any argument: seeing it in a result means outside content leaked. */
const HIDDEN = 'HIDDEN-OUTSIDE-TAIL';
const OUTSIDE_TEXT = `${SECRET}\n${HIDDEN}\n`;
const DENY = ['.git/**', '.env', 'secrets/**'];

type Category = 'traversal' | 'home' | 'nul' | 'too long' | 'look-alike' | 'backslash' | 'percent-encoded' | 'deny glob';

const EXPECTED: Record<Category, string[]> = {
  traversal: ['outside_workspace'],
  home: ['outside_workspace'],
  nul: ['invalid_arguments'],
  'too long': ['invalid_arguments'],
  'look-alike': ['outside_workspace'],
  backslash: ['outside_workspace'],
  'percent-encoded': ['outside_workspace'],
  'deny glob': ['permission_denied'],
};

interface HostilePath {
  category: Category;
  path: string;
}

function hostilePaths(outside: string): HostilePath[] {
  const t = (category: Category, ...ps: string[]) => ps.map((p) => ({ category, path: p }));
  return [
    ...t(
      'traversal',
      '../outside/secret.txt',
      '../../../../../../../../../../etc/passwd',
      'sub/../../outside/secret.txt',
      'sub/../../../outside/dir/inner.txt',
      `${outside}/secret.txt`,
      `${outside}/new.txt`,
      '/etc/passwd',
      'lf', // symlink to an outside file (absolute target)
      'lfr', // symlink to an outside file (relative target)
      'ld/secret.txt', // through a symlinked folder
      'ld/new.txt',
      'ld',
      'dangling', // symlink to an outside file that does not exist yet
      'sub/ld2/inner.txt',
      './../outside/secret.txt',
      'sub/./../../outside/secret.txt',
      'sub//..//..//outside/secret.txt',
      '..',
      '../',
      '../ws/../outside/secret.txt', // out, back in by name, out again
      `${outside}/../outside/secret.txt`,
      'lchain', // symlink to a symlink to an outside file
      'lparent/outside/secret.txt', // symlink to the root's parent
      'sub/up/outside/dir/inner.txt', // symlink two levels up, in a subfolder
    ),
    ...t('home', '~/.bashrc', '~', '~root/.profile', '~/', '~/../../etc/passwd'),
    ...t('nul', 'a.txt\0', 'a\0/../../outside/secret.txt', '\0', 'sub/\0b.txt'),
    ...t('too long', 'n'.repeat(300), `${'deep/'.repeat(1000)}f.txt`, `sub/${'x'.repeat(256)}/f.txt`, 'a/'.repeat(2100)),
    ...t(
      'look-alike',
      '\uff0e\uff0e/outside/secret.txt', // fullwidth full stops
      '\u2025/outside/secret.txt', // two dot leader
      '..\uff0foutside\uff0fsecret.txt', // fullwidth solidus
      '..\u2215outside\u2215secret.txt', // division slash
      '..\u2044..\u2044outside\u2044secret.txt', // fraction slash
      '\ufe52\ufe52/outside/secret.txt', // small full stops
      '\u2024\u2024/outside/secret.txt', // one dot leaders
      '..\u29f8outside\u29f8secret.txt', // big solidus
      '..\u2571outside\u2571secret.txt', // box drawing diagonal
    ),
    ...t('backslash', '..\\outside\\secret.txt', '..\\..\\..\\..\\etc\\passwd', 'sub\\..\\..\\outside\\secret.txt', '..\\', 'sub/..\\../outside/secret.txt'),
    ...t(
      'percent-encoded',
      '%2e%2e/outside/secret.txt',
      '%2e%2e%2foutside%2fsecret.txt',
      '..%2F..%2Foutside%2Fsecret.txt',
      '%252e%252e/outside/secret.txt',
      '%2E%2E%5Coutside%5Csecret.txt',
      '.%2e/outside/secret.txt',
    ),
    ...t(
      'deny glob',
      '.git/config',
      './.git/config',
      'sub/../.git/config',
      'gitlink/config',
      '.git/hooks/new-hook',
      '.env',
      'secrets/key',
      'secrets/new.txt',
      '.git',
      'sub/../secrets/key',
      'lenv', // symlink to .env
    ),
  ];
}

interface ToolUse {
  label: string;
  call(ws: OpenedWorkspace, p: string, ctx: Ctx): Promise<ToolResult>;
  /** Categories this use does not apply to (bash is not bound by deny globs). */
  skip?: Category[];
  /** Extra kinds accepted for some categories (e.g. a patch whose header cannot hold the path). */
  alsoAccept?: Partial<Record<Category, string[]>>;
}

interface Ctx {
  trashId: string;
  secretSha: string;
  bash: ReturnType<typeof createBashTool>;
}

const envelope = (body: string) => `*** Begin Patch\n${body}*** End Patch\n`;

const USES: ToolUse[] = [
  { label: 'read_file', call: (ws, p) => ws.call('read_file', { path: p }) },
  { label: 'diagnostics (path)', call: (ws, p) => ws.call('diagnostics', { path: p }) },
  { label: 'list_directory', call: (ws, p) => ws.call('list_directory', { path: p, recursive: true }) },
  { label: 'glob (path)', call: (ws, p) => ws.call('glob', { pattern: '**/*', path: p }) },
  { label: 'grep (path)', call: (ws, p) => ws.call('grep', { pattern: '.', path: p }) },
  { label: 'search_files (path)', call: (ws, p) => ws.call('search_files', { mode: 'text', query: SECRET, path: p }) },
  { label: 'create_file', call: (ws, p) => ws.call('create_file', { path: p, content: 'pwned\n' }) },
  { label: 'write_file (replace)', call: (ws, p, c) => ws.call('write_file', { path: p, content: 'pwned\n', expectedSha256: c.secretSha }) },
  { label: 'write_file (create, sha "")', call: (ws, p) => ws.call('write_file', { path: p, content: 'pwned\n', expectedSha256: '' }) },
  {
    label: 'edit_file',
    call: (ws, p, c) => ws.call('edit_file', { path: p, expectedSha256: c.secretSha, edits: [{ oldText: SECRET, newText: 'PWNED' }] }),
  },
  // expectedSha256 is required (the hash of a hostile path's target is never known: any valid one will do).
  { label: 'delete_file', call: (ws, p) => ws.call('delete_file', { path: p, expectedSha256: sha256('alpha\n') }) },
  { label: 'move_file (from)', call: (ws, p) => ws.call('move_file', { from: p, to: 'stolen.txt', expectedSha256: sha256('alpha\n') }) },
  { label: 'move_file (to)', call: (ws, p) => ws.call('move_file', { from: 'a.txt', to: p, expectedSha256: sha256('alpha\n') }) },
  { label: 'restore_file (targetPath)', call: (ws, p, c) => ws.call('restore_file', { trashId: c.trashId, targetPath: p }) },
  { label: 'apply_patch (Add File)', call: (ws, p) => ws.call('apply_patch', { patch: envelope(`*** Add File: ${p}\n+pwned\n`) }) },
  {
    label: 'apply_patch (Update File)',
    call: (ws, p) => ws.call('apply_patch', { patch: envelope(`*** Update File: ${p}\n@@\n-${SECRET}\n+PWNED\n`) }),
  },
  { label: 'apply_patch (Delete File)', call: (ws, p) => ws.call('apply_patch', { patch: envelope(`*** Delete File: ${p}\n`) }) },
  {
    label: 'apply_patch (Move to)',
    call: (ws, p) => ws.call('apply_patch', { patch: envelope(`*** Update File: a.txt\n*** Move to: ${p}\n@@\n-alpha\n+alpha moved\n`) }),
  },
  {
    label: 'apply_patch (unified diff)',
    call: (ws, p) => ws.call('apply_patch', { patch: `--- a/${p}\n+++ b/${p}\n@@ -1 +1 @@\n-${SECRET}\n+PWNED\n` }),
  },
  {
    label: 'apply_patch (expectedSha256ByPath key)',
    call: (ws, p) => ws.call('apply_patch', { patch: envelope('*** Update File: a.txt\n@@\n-alpha\n+alpha changed\n'), expectedSha256ByPath: { [p]: '' } }),
  },
  {
    label: 'bash (cwd)',
    skip: ['deny glob'],
    call: async (ws, p, c) => {
      try {
        const data = await c.bash.execute({ command: `cat secret.txt 2>/dev/null; echo pwned > pwned.txt`, cwd: p }, { signal: new AbortController().signal, workspace: ws.workspace, sessionId: 'stress' });
        return { ok: true, data };
      } catch (err) {
        const e = err as { kind?: string; message?: string };
        return { ok: false, error: { kind: (e.kind ?? 'internal_error') as never, message: e.message ?? String(err) } };
      }
    },
  },
];

function setUp(base: string): { root: string; outside: string; data: string } {
  const outside = path.join(base, 'outside');
  const root = path.join(base, 'ws');
  const data = path.join(base, 'data');
  fs.mkdirSync(path.join(outside, 'dir'), { recursive: true });
  fs.writeFileSync(path.join(outside, 'secret.txt'), OUTSIDE_TEXT);
  fs.writeFileSync(path.join(outside, 'dir', 'inner.txt'), `${SECRET} inner ${HIDDEN}\n`);
  fs.mkdirSync(path.join(outside, 'swapdir'));
  fs.writeFileSync(path.join(outside, 'swapdir', 'f.txt'), 'same content\n');
  fs.mkdirSync(path.join(outside, 'racedir'));
  fs.mkdirSync(path.join(root, 'sub'), { recursive: true });
  fs.mkdirSync(path.join(root, '.git', 'hooks'), { recursive: true });
  fs.mkdirSync(path.join(root, 'secrets'));
  fs.writeFileSync(path.join(root, 'a.txt'), 'alpha\n');
  fs.writeFileSync(path.join(root, 'sub', 'b.txt'), 'beta\n');
  fs.writeFileSync(path.join(root, '.git', 'config'), '[core]\n');
  fs.writeFileSync(path.join(root, '.env'), 'TOKEN=inside\n');
  fs.writeFileSync(path.join(root, 'secrets', 'key'), 'inside key\n');
  fs.writeFileSync(path.join(root, 'victim.txt'), 'to be trashed\n');
  fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'lf'));
  fs.symlinkSync('../outside/secret.txt', path.join(root, 'lfr'));
  fs.symlinkSync('../outside', path.join(root, 'ld'));
  fs.symlinkSync('../../outside/dir', path.join(root, 'sub', 'ld2'));
  fs.symlinkSync('../outside/new.txt', path.join(root, 'dangling'));
  fs.symlinkSync('.git', path.join(root, 'gitlink'));
  fs.symlinkSync('lf', path.join(root, 'lchain'));
  fs.symlinkSync('..', path.join(root, 'lparent'));
  fs.symlinkSync('../..', path.join(root, 'sub', 'up'));
  fs.symlinkSync('.env', path.join(root, 'lenv'));
  return { root, outside, data };
}

/** Resets the inside files a successful (wrong) call could have consumed. */
function restoreInside(root: string): void {
  if (!fs.existsSync(path.join(root, 'a.txt'))) fs.writeFileSync(path.join(root, 'a.txt'), 'alpha\n');
}

export async function run(): Promise<SuiteReport> {
  const started = Date.now();
  const checks = new Checks(Number(process.env.STRESS_EXAMPLES ?? 30));
  const tmp = tempDir('paths');
  try {
    const { root, outside, data } = setUp(tmp.dir);
    const ws = openWorkspace({ root, dataDir: data, sessionId: 'stress-paths', denyGlobs: DENY });
    const del = await ws.call('delete_file', { path: 'victim.txt', expectedSha256: sha256('to be trashed\n') });
    if (!del.ok) throw new Error(`set-up: delete_file failed: ${JSON.stringify(del.error)}`);
    const ctx: Ctx = { trashId: (del.data as { trashId: string }).trashId, secretSha: sha256(OUTSIDE_TEXT), bash: createBashTool({ killGraceMs: 200 }) };
    const outsideBefore = snapshotTree(outside);
    const protectedFiles = ['.git/config', '.env', 'secrets/key'];
    const protectedBefore = protectedFiles.map((p) => fs.readFileSync(path.join(root, p)));
    const kinds = new Map<string, number>();
    const leaks = (res: ToolResult): string | null => (JSON.stringify(res).includes(HIDDEN) ? 'outside content in the result' : null);

    for (const hp of hostilePaths(outside)) {
      for (const use of USES) {
        if (use.skip?.includes(hp.category)) continue;
        restoreInside(root);
        let res: ToolResult;
        try {
          res = await use.call(ws, hp.path, ctx);
        } catch (err) {
          checks.record(`${hp.category}: refused with ${EXPECTED[hp.category].join('/')}`, `${use.label} ${JSON.stringify(hp.path)} threw ${String(err)}`);
          continue;
        }
        const expected = [...EXPECTED[hp.category], ...(use.alsoAccept?.[hp.category] ?? [])];
        const kind = res.ok ? 'ok' : res.error.kind;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        const what = `${use.label} ${JSON.stringify(hp.path.length > 60 ? hp.path.slice(0, 60) + '…' : hp.path)}`;
        checks.record(
          `${hp.category}: refused with ${EXPECTED[hp.category].join('/')}`,
          res.ok ? `${what} succeeded: ${JSON.stringify(res.data).slice(0, 200)}` : expected.includes(res.error.kind) ? null : `${what} → ${res.error.kind}: ${res.error.message}`,
        );
        checks.record('no outside content in any result', leaks(res) && `${what}: ${leaks(res)}`);
      }
    }

    // Searches and listings from the root must not follow symlinks out of the workspace.
    const rootSearches: [string, () => Promise<ToolResult>][] = [
      ['grep root', () => ws.call('grep', { pattern: SECRET })],
      ['grep root (includeIgnored)', () => ws.call('grep', { pattern: SECRET, includeIgnored: true })],
      ['search_files text root', () => ws.call('search_files', { mode: 'text', query: SECRET })],
      ['glob **/* root', () => ws.call('glob', { pattern: '**/*' })],
      ['glob ../outside/*', () => ws.call('glob', { pattern: '../outside/*' })],
      ['glob ../**', () => ws.call('glob', { pattern: '../**' })],
      [`glob ${outside}/*`, () => ws.call('glob', { pattern: `${outside}/*` })],
      ['glob **/../../outside/*', () => ws.call('glob', { pattern: '**/../../outside/*' })],
      ['search_files glob ../**', () => ws.call('search_files', { mode: 'glob', query: '../**' })],
      ['list_directory root recursive', () => ws.call('list_directory', { recursive: true, includeIgnored: true })],
      ['grep include ../*', () => ws.call('grep', { pattern: SECRET, include: '../*' })],
    ];
    for (const [label, fn] of rootSearches) {
      const res = await fn();
      const text = JSON.stringify(res);
      const leaked = text.includes(HIDDEN) || /secret\.txt|inner\.txt|swapdir|racedir/.test(text);
      checks.record('searches and listings stay inside (no outside names or content)', leaked ? `${label}: ${text.slice(0, 300)}` : null);
    }

    // A symlink swapped in between the agent's read and its write (the file, and its folder).
    fs.writeFileSync(path.join(root, 'swap.txt'), OUTSIDE_TEXT);
    fs.mkdirSync(path.join(root, 'swapdir'));
    fs.writeFileSync(path.join(root, 'swapdir', 'f.txt'), 'same content\n');
    const swapWrites: [string, (p: string, sha: string, text: string) => Promise<ToolResult>][] = [
      ['write_file', (p, sha) => ws.call('write_file', { path: p, content: 'pwned\n', expectedSha256: sha })],
      ['edit_file', (p, sha, text) => ws.call('edit_file', { path: p, expectedSha256: sha, edits: [{ oldText: text.trim(), newText: 'PWNED' }] })],
      ['delete_file', (p, sha) => ws.call('delete_file', { path: p, expectedSha256: sha })],
      ['move_file', (p, sha) => ws.call('move_file', { from: p, to: 'swapped-away.txt', expectedSha256: sha })],
      ['apply_patch', (p, sha, text) => ws.call('apply_patch', { patch: envelope(`*** Update File: ${p}\n@@\n${text.trim().split('\n').map((l) => `-${l}`).join('\n')}\n+PWNED\n`), expectedSha256ByPath: { [p]: sha } })],
    ];
    for (const [label, write] of swapWrites) {
      for (const which of ['file', 'folder'] as const) {
        const rel = which === 'file' ? 'swap.txt' : 'swapdir/f.txt';
        const abs = path.join(root, rel);
        // Start from a regular file inside, read it, then swap in the symlink.
        for (const p of [path.join(root, 'swap.txt'), path.join(root, 'swapdir')]) fs.rmSync(p, { recursive: true, force: true });
        fs.writeFileSync(path.join(root, 'swap.txt'), OUTSIDE_TEXT);
        fs.mkdirSync(path.join(root, 'swapdir'));
        fs.writeFileSync(path.join(root, 'swapdir', 'f.txt'), 'same content\n');
        const read = await ws.call('read_file', { path: rel });
        if (!read.ok) throw new Error(`swap set-up: ${JSON.stringify(read.error)}`);
        const { sha256: sha, content } = read.data as { sha256: string; content: string };
        if (which === 'file') {
          fs.rmSync(abs);
          fs.symlinkSync(path.join(outside, 'secret.txt'), abs);
        } else {
          fs.rmSync(path.join(root, 'swapdir'), { recursive: true });
          fs.symlinkSync(path.join(outside, 'swapdir'), path.join(root, 'swapdir'));
        }
        const res = await write(rel, sha, content);
        checks.record(
          'symlink swapped in between read and write: refused with outside_workspace',
          res.ok ? `${label} (${which}) succeeded` : res.error.kind === 'outside_workspace' ? null : `${label} (${which}) → ${res.error.kind}: ${res.error.message}`,
        );
      }
    }

    // The same swap inside one call: the folder becomes a symlink after the plan, before the temp file is
    // written ('prepare') or before it is renamed into place ('commit').
    for (const [label0, write] of swapWrites) for (const phase of ['prepare', 'commit'] as const) {
      const label = `${label0} (${phase})`;
      fs.rmSync(path.join(root, 'race'), { recursive: true, force: true });
      fs.mkdirSync(path.join(root, 'race'));
      fs.writeFileSync(path.join(root, 'race', 'f.txt'), 'race content\n');
      fs.writeFileSync(path.join(outside, 'racedir', 'f.txt'), 'race content\n');
      const read = await ws.call('read_file', { path: 'race/f.txt' });
      if (!read.ok) throw new Error(`race set-up: ${JSON.stringify(read.error)}`);
      const { sha256: sha, content } = read.data as { sha256: string; content: string };
      const swap = swapFolderForLinkAt(ws.workspace, phase, 'race', path.join(outside, 'racedir'));
      const racedBefore = snapshotTree(outside);
      let res: ToolResult;
      try {
        res = await write('race/f.txt', sha, content);
      } finally {
        swap.clear();
      }
      const swapped = swap.swapped();
      const racedAfter = snapshotTree(outside);
      checks.record(
        'symlink swapped in during the commit: refused with outside_workspace, outside unchanged',
        !swapped
          ? null
          : !sameTree(racedBefore, racedAfter)
            ? `${label}: outside changed (${treeDiff(racedBefore, racedAfter)}); result ${res.ok ? 'ok' : res.error.kind}`
            : res.ok
              ? `${label}: reported success`
              : res.error.kind === 'outside_workspace'
                ? null
                : `${label}: ${res.error.kind}: ${res.error.message}`,
      );
      fs.rmSync(path.join(root, 'race'), { force: true });
      fs.rmSync(path.join(root, 'race-moved'), { recursive: true, force: true });
      fs.writeFileSync(path.join(outside, 'racedir', 'f.txt'), 'race content\n');
      for (const f of fs.readdirSync(path.join(outside, 'racedir'))) if (f !== 'f.txt') fs.rmSync(path.join(outside, 'racedir', f), { force: true });
    }

    // Read-only and unreadable files (issue 11, defect 4).
    fs.writeFileSync(path.join(root, 'ro.txt'), 'read only\n');
    fs.chmodSync(path.join(root, 'ro.txt'), 0o444);
    const roSha = sha256('read only\n');
    const roWrites: [string, () => Promise<ToolResult>][] = [
      ['write_file', () => ws.call('write_file', { path: 'ro.txt', content: 'changed\n', expectedSha256: roSha })],
      ['edit_file', () => ws.call('edit_file', { path: 'ro.txt', expectedSha256: roSha, edits: [{ oldText: 'read only', newText: 'changed' }] })],
      ['apply_patch', () => ws.call('apply_patch', { patch: envelope('*** Update File: ro.txt\n@@\n-read only\n+changed\n') })],
    ];
    for (const [label, call] of roWrites) {
      const res = await call();
      const now = fs.readFileSync(path.join(root, 'ro.txt'), 'utf8');
      const mode = fs.statSync(path.join(root, 'ro.txt')).mode & 0o777;
      checks.record(
        'a read-only (0444) file is refused with permission_denied, unchanged',
        !res.ok && res.error.kind === 'permission_denied' && now === 'read only\n' && mode === 0o444 ? null : `${label}: ${res.ok ? 'ok' : res.error.kind}, content ${JSON.stringify(now)}, mode ${mode.toString(8)}`,
      );
      if (now !== 'read only\n') {
        fs.chmodSync(path.join(root, 'ro.txt'), 0o644);
        fs.writeFileSync(path.join(root, 'ro.txt'), 'read only\n');
        fs.chmodSync(path.join(root, 'ro.txt'), 0o444);
      }
    }
    checks.known('a read-only (0444) file is refused with permission_denied, unchanged', 4);
    if (process.getuid?.() !== 0) {
      fs.writeFileSync(path.join(root, 'noread.txt'), 'secret\n');
      fs.chmodSync(path.join(root, 'noread.txt'), 0o000);
      const res = await ws.call('read_file', { path: 'noread.txt' });
      checks.record('an unreadable (0000) file is permission_denied, not internal_error', !res.ok && res.error.kind === 'permission_denied' ? null : `read_file: ${res.ok ? 'ok' : res.error.kind}`);
      checks.known('an unreadable (0000) file is permission_denied, not internal_error', 4);
      fs.chmodSync(path.join(root, 'noread.txt'), 0o644);
    } else {
      checks.figures.push('Running as root: the unreadable-file (0000) check is skipped (root reads any file).');
    }

    // Nothing outside changed; nothing protected inside changed.
    fs.writeFileSync(path.join(outside, 'racedir', 'f.txt'), 'race content\n');
    const outsideAfter = snapshotTree(outside);
    outsideBefore.set('racedir/f.txt', Buffer.from('race content\n'));
    checks.record('files outside the root unchanged (sha256 before/after, no new files)', sameTree(outsideBefore, outsideAfter) ? null : treeDiff(outsideBefore, outsideAfter));
    protectedFiles.forEach((p, i) => {
      checks.record('deny-glob files inside unchanged', fs.readFileSync(path.join(root, p)).equals(protectedBefore[i]) ? null : `${p} changed`);
    });
    checks.record('audit chain verifies', ws.verifyAuditLog().ok ? null : JSON.stringify(ws.verifyAuditLog()));
    checks.figures.push(`Outcomes of the hostile calls: ${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}.`);
    checks.figures.push(`${hostilePaths(outside).length} hostile paths × ${USES.length} tool uses (bash cwd skips deny globs: bash is not bound by them).`);
    ws.close();
  } finally {
    tmp.remove();
  }
  return checks.report('paths', 'Hostile paths', started);
}

mainIfDirect(module, run);
