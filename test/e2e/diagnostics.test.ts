/**
 * Diagnostics, the editor's own truth about the code: the `diagnostics` tool over vim.diagnostic (set
 * directly in a test namespace), and the report of an agent edit with a real language server
 * (typescript-language-server, a devDependency) started by the test.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forEachNvim, REPO_ROOT, type TestNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { toolCall } from '../support/buffers';
import { firstToolResult } from '../support/chat-requests';
import type { Diagnostic } from '../../src/workspace/diagnostics';

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

type Entry = Omit<Diagnostic, 'severity'> & { path: string; severity: string };
interface FileInfo {
  path: string;
  modified: boolean;
  clients: string[];
  counts: Record<string, number>;
}
interface ListData {
  loaded?: boolean;
  files: FileInfo[];
  diagnostics: Entry[];
  total: number;
  truncated: boolean;
  notice?: string;
}
interface Report {
  introduced: Entry[];
  resolved: Entry[];
  unchangedCount: number;
  waitedMs: number;
  timedOut?: boolean;
}

/** Loads `file` (workspace-relative or absolute) in a buffer and sets diagnostics on it in the test namespace. */
const setDiagnostics = (t: TestNvim, file: string, items: Record<string, unknown>[]) =>
  t.lua(
    `local file, items = ...
    local b = vim.fn.bufadd(file)
    vim.fn.bufload(b)
    vim.bo[b].buflisted = true
    _G.diag_ns = _G.diag_ns or vim.api.nvim_create_namespace('caboose-test-diagnostics')
    for _, d in ipairs(items) do d.severity = vim.diagnostic.severity[d.severity] end
    vim.diagnostic.set(_G.diag_ns, b, items)`,
    [file, items],
  );

const diagnostics = async (t: TestNvim, args: Record<string, unknown>) => {
  const r = await toolCall(t, 'diagnostics', args);
  assert.ok(r.ok, JSON.stringify(r));
  return r.data as unknown as ListData;
};

forEachNvim((bin) => {
  describe(`diagnostics tool (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    const start = async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ deny_globs = { '.git/**', 'secret/**' } })" });
      fs.writeFileSync(path.join(t.cwd, 'a.ts'), 'const é = 1;\nlet x: number = "s";\n');
      fs.writeFileSync(path.join(t.cwd, 'b.ts'), 'export {};\n');
      fs.mkdirSync(path.join(t.cwd, 'sub'));
      fs.writeFileSync(path.join(t.cwd, 'sub', 'c.ts'), 'x\n');
      fs.writeFileSync(path.join(t.cwd, 'not-open.ts'), 'y\n');
      fs.mkdirSync(path.join(t.cwd, 'secret'));
      fs.writeFileSync(path.join(t.cwd, 'secret', 'k.ts'), 'k\n');
      return t;
    };

    it('returns what vim.diagnostic holds for a file: severity, 1-based range in characters, message, source, code', async () => {
      const t = await start();
      await setDiagnostics(t, 'a.ts', [
        { lnum: 0, col: 8, end_lnum: 0, end_col: 9, severity: 'WARN', message: 'unused é', source: 'lint' },
        { lnum: 1, col: 4, end_lnum: 1, end_col: 5, severity: 'ERROR', message: "Type 'string' is not assignable to type 'number'.", source: 'ts', code: 2322 },
        { lnum: 1, col: 0, severity: 'HINT', message: 'a hint', code: 'H1' },
      ]);
      const d = await diagnostics(t, { path: 'a.ts' });
      assert.equal(d.loaded, true);
      assert.deepEqual(d.files, [{ path: 'a.ts', modified: false, clients: [], counts: { error: 1, warning: 1, info: 0, hint: 1 } }]);
      assert.equal(d.total, 3);
      assert.equal(d.truncated, false);
      assert.match(d.notice ?? '', /No language server is attached/);
      // Sorted by severity then position; byte column 8 (after the 2-byte "é") is character column 8.
      assert.deepEqual(d.diagnostics, [
        { path: 'a.ts', severity: 'error', line: 2, col: 5, endLine: 2, endCol: 6, message: "Type 'string' is not assignable to type 'number'.", source: 'ts', code: 2322 },
        { path: 'a.ts', severity: 'warning', line: 1, col: 8, endLine: 1, endCol: 9, message: 'unused é', source: 'lint' },
        { path: 'a.ts', severity: 'hint', line: 2, col: 1, endLine: 2, endCol: 1, message: 'a hint', code: 'H1' },
      ]);
    });

    it('filters by minimum severity and caps with limit, keeping the most severe', async () => {
      const t = await start();
      await setDiagnostics(t, 'a.ts', [
        { lnum: 0, col: 0, severity: 'HINT', message: 'h' },
        { lnum: 0, col: 1, severity: 'INFO', message: 'i' },
        { lnum: 1, col: 0, severity: 'WARN', message: 'w' },
      ]);
      await setDiagnostics(t, 'b.ts', [{ lnum: 0, col: 0, severity: 'ERROR', message: 'e' }]);
      const warnings = await diagnostics(t, { severity: 'warning' });
      assert.deepEqual(warnings.diagnostics.map((x) => `${x.path} ${x.severity} ${x.message}`), ['a.ts warning w', 'b.ts error e']);
      assert.equal(warnings.total, 2);
      const errors = await diagnostics(t, { path: 'a.ts', severity: 'error' });
      assert.deepEqual(errors.diagnostics, []);
      assert.equal(errors.files[0].counts.hint, 1, 'counts cover every severity');
      const capped = await diagnostics(t, { limit: 2 });
      assert.deepEqual(capped.diagnostics.map((x) => x.message), ['w', 'e'], 'the two most severe, sorted by path');
      assert.equal(capped.total, 4);
      assert.equal(capped.truncated, true);
      assert.match(capped.notice ?? '', /2 of 4 diagnostics omitted/);
      const bad = await toolCall(t, 'diagnostics', { severity: 'fatal' });
      assert.equal(bad.ok, false);
      assert.equal(bad.error?.kind, 'invalid_arguments');
    });

    it('an unsaved buffer: its own diagnostics, marked modified', async () => {
      const t = await start();
      await t.cmd('edit b.ts');
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'let broken = ;' })");
      await setDiagnostics(t, 'b.ts', [{ lnum: 0, col: 13, severity: 'ERROR', message: 'Expression expected.' }]);
      const d = await diagnostics(t, { path: 'b.ts' });
      assert.equal(d.files[0].modified, true);
      assert.deepEqual(d.diagnostics.map((x) => [x.line, x.col, x.message]), [[1, 14, 'Expression expected.']]);
      assert.equal(fs.readFileSync(path.join(t.cwd, 'b.ts'), 'utf8'), 'export {};\n', 'nothing written');
    });

    it('a file not loaded says so; a missing one is not_found; outside the root and denied paths are refused', async () => {
      const t = await start();
      const notOpen = await diagnostics(t, { path: 'not-open.ts' });
      assert.equal(notOpen.loaded, false);
      assert.deepEqual(notOpen.diagnostics, []);
      assert.match(notOpen.notice ?? '', /not loaded in Neovim: only loaded buffers have diagnostics/);
      assert.equal((await toolCall(t, 'diagnostics', { path: 'nope.ts' })).error?.kind, 'not_found');
      const outsideFile = path.join(os.tmpdir(), `caboose-outside-${process.pid}-${Date.now()}.ts`);
      fs.writeFileSync(outsideFile, 'o\n');
      try {
        await setDiagnostics(t, outsideFile, [{ lnum: 0, col: 0, severity: 'ERROR', message: 'outside' }]);
        await setDiagnostics(t, path.join(t.cwd, 'secret', 'k.ts'), [{ lnum: 0, col: 0, severity: 'ERROR', message: 'secret' }]);
        await setDiagnostics(t, 'sub/c.ts', [{ lnum: 0, col: 0, severity: 'ERROR', message: 'in sub' }]);
        assert.equal((await toolCall(t, 'diagnostics', { path: outsideFile })).error?.kind, 'outside_workspace');
        assert.equal((await toolCall(t, 'diagnostics', { path: '../x.ts' })).error?.kind, 'outside_workspace');
        assert.equal((await toolCall(t, 'diagnostics', { path: 'secret/k.ts' })).error?.kind, 'permission_denied');
        const all = await diagnostics(t, {});
        assert.deepEqual(all.files.map((f) => f.path), ['sub/c.ts'], 'only loaded buffers inside the root and not denied');
        assert.deepEqual(all.diagnostics.map((x) => x.message), ['in sub']);
        const folder = await diagnostics(t, { path: 'sub' });
        assert.deepEqual(folder.files.map((f) => f.path), ['sub/c.ts']);
        const empty = await diagnostics(t, { path: '.', severity: 'error' });
        assert.equal(empty.total, 1);
      } finally {
        fs.rmSync(outsideFile, { force: true });
      }
    });

    it('setup() validates the diagnostics options and hands them to the host', async () => {
      const t = await e.start();
      const err = (opts: string) => t.lua<string>(`local ok, e = pcall(require('caboose').setup, ${opts}) return e`);
      assert.match(await err('{ diagnostics = { wait_ms = 0 } }'), /`diagnostics\.wait_ms` should be a positive number/);
      assert.match(await err("{ diagnostics = { enabled = 'yes' } }"), /`diagnostics\.enabled` should be a boolean/);
      assert.match(await err('{ diagnostics = { settle_ms = -1 } }'), /`diagnostics\.settle_ms` should be a number >= 0/);
      const part = await t.lua("require('caboose').setup({ diagnostics = { wait_ms = 500 } }) return require('caboose.config').host_part(require('caboose').config()).diagnostics");
      assert.deepEqual(part, { enabled: true, wait_ms: 500, settle_ms: 300 });
    });

    it('the agent sees the tool; an edit to a buffer without a language server reports nothing and does not wait', async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ mode = 'chug', diagnostics = { wait_ms = 20000 } })" });
      const body = 'let x = 1;\n';
      fs.writeFileSync(path.join(t.cwd, 'a.ts'), body);
      await t.cmd('edit a.ts');
      await setDiagnostics(t, 'a.ts', [{ lnum: 0, col: 4, severity: 'ERROR', message: 'set by a test' }]);
      e.fake.script(
        { toolCalls: [{ name: 'diagnostics', arguments: { path: 'a.ts' } }] },
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.ts', expectedSha256: sha(body), edits: [{ oldText: 'x = 1', newText: 'x = 2' }] } }] },
        { text: 'edited' },
      );
      const n = e.fake.chatRequests.length;
      const t0 = Date.now();
      await t.cmd('Caboose check and edit');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('edited'), 'answer');
      assert.ok(Date.now() - t0 < 15000, 'no wait for a language server that is not there');
      const listed = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.deepEqual((listed.data as unknown as ListData).diagnostics.map((x) => x.message), ['set by a test']);
      const edited = firstToolResult(e.fake.chatRequests[n + 2]);
      assert.equal(edited.ok, true);
      assert.equal('diagnostics' in (edited.data ?? {}), false);
      assert.match((await t.chatLines()).join('\n'), /diagnostics a\.ts .*1 error in 1 file/);
    });
  });

  describe(`diagnostics after an agent edit, with typescript-language-server (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const server = path.join(REPO_ROOT, 'node_modules', '.bin', 'typescript-language-server');
    const tsserver = path.join(REPO_ROOT, 'node_modules', 'typescript', 'lib', 'tsserver.js');
    const clean = 'export const a: number = 1;\nlet unused = 2;\n';
    const broken = 'export const a: number = "s";\nlet unused = 2;\n';
    const TYPE_ERROR = /Type 'string' is not assignable to type 'number'/;

    it('an edit that introduces a type error reports it; fixing it in an unsaved buffer lists it as resolved', { timeout: 180_000 }, async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ mode = 'chug', diagnostics = { wait_ms = 8000 } })" });
      const cwd = t.cwd;
      fs.writeFileSync(path.join(cwd, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2020' }, include: ['*.ts'] }));
      fs.writeFileSync(path.join(cwd, 'a.ts'), clean);
      await t.cmd('edit a.ts');
      const started = Date.now();
      await t.lua(
        `local server, tsserver, root = ...
        _G.lsp_client = vim.lsp.start({
          name = 'tsls',
          cmd = { server, '--stdio' },
          root_dir = root,
          init_options = { tsserver = { path = tsserver }, disableAutomaticTypingAcquisition = true },
        })`,
        [server, tsserver, fs.realpathSync(cwd)],
      );
      // tsserver takes seconds to start: wait for its first report (the unused variable's hint).
      await t.waitFor(
        () => t.lua<boolean>('return #vim.lsp.get_clients({ bufnr = 0 }) > 0 and #vim.diagnostic.get(0) > 0'),
        'the language server to attach and report',
        90_000,
      );
      const ready = Date.now() - started;

      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.ts', expectedSha256: sha(clean), edits: [{ oldText: '= 1;', newText: '= "s";' }] } }] },
        { text: 'broke it' },
      );
      let n = e.fake.chatRequests.length;
      const edit1 = Date.now();
      await t.cmd('Caboose break it');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('broke it'), 'first answer', 30_000);
      const first = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(first.ok, true, JSON.stringify(first));
      assert.equal(first.data?.savedToDisk, true, 'a clean buffer: written to disk');
      const r1 = first.data?.diagnostics as Report;
      assert.ok(r1, `a report: ${JSON.stringify(first.data)}`);
      assert.equal(r1.timedOut, undefined, JSON.stringify(r1));
      assert.equal(r1.introduced.length, 1, JSON.stringify(r1));
      assert.match(r1.introduced[0].message, TYPE_ERROR);
      assert.equal(r1.introduced[0].severity, 'error');
      assert.equal(r1.introduced[0].path, 'a.ts');
      assert.equal(r1.introduced[0].line, 1);
      assert.equal(r1.introduced[0].source, 'typescript');
      assert.equal(r1.introduced[0].code, 2322);
      assert.deepEqual(r1.resolved, []);
      assert.equal(r1.unchangedCount, 1, 'the unused variable hint stays');
      assert.match((await t.chatLines()).join('\n'), /edit_file a\.ts \+1 −1 · 1 new error/);
      const edit1Ms = Date.now() - edit1;

      // The user types in the buffer (unsaved); the agent fixes the error in that buffer.
      await t.lua("vim.api.nvim_buf_set_lines(0, -1, -1, false, { '// note' })");
      const unsaved = broken + '// note\n';
      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.ts', expectedSha256: sha(unsaved), edits: [{ oldText: '= "s";', newText: '= 1;' }] } }] },
        { text: 'fixed it' },
      );
      n = e.fake.chatRequests.length;
      await t.cmd('Caboose fix it');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('fixed it'), 'second answer', 30_000);
      const second = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(second.ok, true, JSON.stringify(second));
      assert.equal(second.data?.savedToDisk, false, 'an unsaved buffer: the change stays in the buffer');
      const r2 = second.data?.diagnostics as Report;
      assert.ok(r2, `a report: ${JSON.stringify(second.data)}`);
      assert.equal(r2.timedOut, undefined, JSON.stringify(r2));
      assert.deepEqual(r2.introduced, []);
      assert.equal(r2.resolved.length, 1, JSON.stringify(r2));
      assert.match(r2.resolved[0].message, TYPE_ERROR);
      assert.match((await t.chatLines()).join('\n'), /edit_file a\.ts \+1 −1 · 1 error fixed/);
      assert.equal(fs.readFileSync(path.join(cwd, 'a.ts'), 'utf8'), broken, 'the disk keeps the saved text');
      const listed = await diagnostics(t, { path: 'a.ts' });
      assert.deepEqual(listed.files[0].clients, ['tsls']);
      assert.equal(listed.files[0].modified, true);
      assert.equal(listed.files[0].counts.error, 0);
      process.stderr.write(`# tsls (Neovim ${bin.version}): ready ${ready} ms, first edit turn ${edit1Ms} ms (waited ${r1.waitedMs} ms), fix waited ${r2.waitedMs} ms\n`);
    });

    it('an edit to a.ts that breaks the open b.ts reports the new error in b.ts, with its path (issue 17, defect 15)', { timeout: 180_000 }, async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ mode = 'chug', diagnostics = { wait_ms = 8000 } })" });
      const cwd = t.cwd;
      fs.writeFileSync(path.join(cwd, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2020' }, include: ['*.ts'] }));
      fs.writeFileSync(path.join(cwd, 'a.ts'), clean);
      const importer = "import { a } from './a';\nexport const n: number = a;\nlet unusedB = 3;\n";
      fs.writeFileSync(path.join(cwd, 'b.ts'), importer);
      const attach = `local server, tsserver, root = ...
        vim.lsp.start({
          name = 'tsls',
          cmd = { server, '--stdio' },
          root_dir = root,
          init_options = { tsserver = { path = tsserver }, disableAutomaticTypingAcquisition = true },
        })`;
      await t.cmd('edit b.ts');
      await t.lua(attach, [server, tsserver, fs.realpathSync(cwd)]);
      await t.cmd('edit a.ts');
      await t.lua(attach, [server, tsserver, fs.realpathSync(cwd)]);
      await t.waitFor(
        () => t.lua<boolean>("local b = vim.fn.bufnr('b.ts') return #vim.lsp.get_clients({ bufnr = b }) > 0 and #vim.diagnostic.get(b) > 0 and #vim.diagnostic.get(0) > 0"),
        'the language server to attach to both and report',
        90_000,
      );
      assert.equal(await t.lua<number>("return #vim.diagnostic.get(vim.fn.bufnr('b.ts'), { severity = vim.diagnostic.severity.ERROR })"), 0, 'precondition: b.ts has no error');

      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.ts', expectedSha256: sha(clean), edits: [{ oldText: 'a: number = 1', newText: 'a: string = "s"' }] } }] },
        { text: 'changed the type' },
      );
      const n = e.fake.chatRequests.length;
      await t.cmd('Caboose change the type');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('changed the type'), 'the answer', 30_000);
      const res = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(res.ok, true, JSON.stringify(res));
      const r = res.data?.diagnostics as Report;
      assert.ok(r, `a report: ${JSON.stringify(res.data)}`);
      // Precondition: the editor now holds the error in b.ts.
      assert.ok(await t.lua<number>("return #vim.diagnostic.get(vim.fn.bufnr('b.ts'), { severity = vim.diagnostic.severity.ERROR })") > 0);
      const inB = r.introduced.filter((d) => d.path === 'b.ts');
      assert.equal(inB.length, 1, JSON.stringify(r));
      assert.match(inB[0].message, TYPE_ERROR);
      assert.equal(inB[0].severity, 'error');
      assert.equal(inB[0].line, 2);
      assert.match((await t.chatLines()).join('\n'), /edit_file a\.ts \+1 −1 · 1 new error/);
    });

    it('an edit that leaves a clean file clean reports nothing new, without waiting out wait_ms', { timeout: 180_000 }, async () => {
      const waitMs = 8000;
      const t = await e.start({ initLua: `require('caboose').setup({ mode = 'chug', diagnostics = { wait_ms = ${waitMs} } })` });
      const cwd = t.cwd;
      // No hint either: typescript-language-server publishes nothing for a file that stays without diagnostics.
      const spotless = 'export const a: number = 1;\n';
      fs.writeFileSync(path.join(cwd, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2020' }, include: ['*.ts'] }));
      fs.writeFileSync(path.join(cwd, 'a.ts'), spotless);
      await t.cmd('edit a.ts');
      await t.lua(
        `local server, tsserver, root = ...
        _G.published = 0
        local orig = vim.lsp.handlers['textDocument/publishDiagnostics']
        vim.lsp.handlers['textDocument/publishDiagnostics'] = function(...) _G.published = _G.published + 1 return orig(...) end
        vim.lsp.start({
          name = 'tsls',
          cmd = { server, '--stdio' },
          root_dir = root,
          init_options = { tsserver = { path = tsserver }, disableAutomaticTypingAcquisition = true },
        })`,
        [server, tsserver, fs.realpathSync(cwd)],
      );
      // The first check of a clean file publishes an empty list; later ones stay silent.
      await t.waitFor(() => t.lua<boolean>('return #vim.lsp.get_clients({ bufnr = 0 }) > 0 and _G.published > 0'), 'the language server to attach and report', 90_000);
      assert.equal(await t.lua<number>('return #vim.diagnostic.get(0)'), 0);

      e.fake.script(
        { toolCalls: [{ name: 'edit_file', arguments: { path: 'a.ts', expectedSha256: sha(spotless), edits: [{ oldText: '= 1;', newText: '= 1;\n// a note\nexport const b = a + 1;' }] } }] },
        { text: 'noted' },
      );
      const n = e.fake.chatRequests.length;
      await t.cmd('Caboose add a note');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('noted'), 'answer', 30_000);
      const result = firstToolResult(e.fake.chatRequests[n + 1]);
      assert.equal(result.ok, true, JSON.stringify(result));
      const r = result.data?.diagnostics as Report;
      assert.ok(r, `a report: ${JSON.stringify(result.data)}`);
      assert.equal(r.timedOut, undefined, JSON.stringify(r));
      assert.deepEqual(r.introduced, []);
      assert.deepEqual(r.resolved, []);
      assert.equal(r.unchangedCount, 0);
      assert.ok(r.waitedMs < waitMs / 4, `answered well within wait_ms: ${JSON.stringify(r)}`);
      process.stderr.write(`# tsls (Neovim ${bin.version}): a no-change edit waited ${r.waitedMs} ms\n`);
    });
  });
});
