import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { filetypeLines as linesOf, forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import Database from 'better-sqlite3';
import { verifyAuditLog } from '../../src/store';


forEachNvim((bin) => {
  describe(`:CabooseAudit (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('lists a bash call with the files it created, changed and deleted; <CR> shows a diff; the chain verifies', async () => {
      const t = await e.start({ initLua: "require('caboose').setup({ mode = 'chug' })" });
      fs.writeFileSync(`${t.cwd}/keep.txt`, 'keep\n');
      fs.writeFileSync(`${t.cwd}/old.txt`, 'old\n');
      e.fake.script(
        { toolCalls: [{ name: 'bash', arguments: { command: 'echo new > made.txt; echo more >> keep.txt; rm old.txt' } }] },
        { text: 'ran it' },
      );
      await t.cmd('Caboose tidy up');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('ran it'), 'answer');
      const created = await t.lua<{ ok: boolean }>("return require('caboose').tool_call('create_file', { path = 'notes.md', content = 'first line\\n' })");
      assert.equal(created.ok, true);

      await t.cmd('CabooseAudit');
      const lines = await t.waitFor(() => linesOf(t, 'caboose_audit'), 'the audit buffer');
      const text = lines.join("\n");
      assert.match(lines[0], new RegExp(`Caboose audit log: ${fs.realpathSync(t.cwd)}$`));
      const createAt = lines.findIndex((l) => /\bok\s+create_file\s+create\s+notes\.md {2}\[diff\]$/.test(l));
      const bashAt = lines.findIndex((l) => /\bok\s+bash\s+exec\s+\$ echo new > made\.txt; echo more >> keep\.txt; rm old\.txt {2}→ exit 0$/.test(l));
      assert.ok(createAt > 0 && bashAt > createAt, `newest first:\n${text}`);
      assert.deepEqual(lines.slice(bashAt + 1, bashAt + 4), ['    created  made.txt', '    changed  keep.txt', '    deleted  old.txt']);
      assert.match(lines[createAt], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}ok {2}create_file create notes\.md/, 'columns as wide as their values');
      assert.ok((await t.lua<number>('return vim.api.nvim_win_get_height(0)')) >= Math.min(lines.length, 10), 'the split shows the rows');
      assert.equal(await t.lua('return vim.bo.filetype'), 'caboose_audit', 'the split has the cursor');
      assert.equal(await t.lua('return vim.bo.modifiable'), false);
      assert.deepEqual(verifyAuditLog(t.dataDir), { ok: true, rows: 2 });

      await t.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', [createAt + 1]);
      await t.nvim.input('<CR>');
      const diff = await t.waitFor(async () => ((await t.lua('return vim.bo.filetype')) === 'diff' ? t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)') : null), 'the diff');
      assert.ok(diff.includes('+first line'), diff.join('\n'));
      const wins = await t.lua<number>('return #vim.api.nvim_tabpage_list_wins(0)');
      await t.nvim.input('q');
      await t.waitFor(async () => (await t.lua<number>('return #vim.api.nvim_tabpage_list_wins(0)')) === wins - 1, 'q closes the diff');
      assert.equal(await t.lua('return vim.bo.filetype'), 'caboose_audit');
      await t.lua('vim.api.nvim_win_set_cursor(0, { ..., 0 })', [bashAt + 2]);
      await t.nvim.input('<CR>');
      await t.waitFor(async () => (await t.notifications()).some((n) => /has no diff/.test(n.msg)), 'no diff for bash');
      await t.nvim.input('q');
      await t.waitFor(async () => (await linesOf(t, 'caboose_audit')) === null, 'q closes the list');
    });

    it(':CabooseAudit {count} shows that many; a bad count is an error; other workspaces are left out', async () => {
      const t = await e.start();
      for (const p of ['a.txt', 'b.txt', 'c.txt']) {
        await t.lua("return require('caboose').tool_call('create_file', { path = ..., content = 'x' })", [p]);
      }
      await t.cmd('CabooseAudit 2');
      const lines = await t.waitFor(() => linesOf(t, 'caboose_audit'), 'the audit buffer');
      assert.match(lines[1], /^2 entries, newest first/);
      assert.match(lines[3], /create_file\s+create\s+c\.txt/);
      assert.match(lines[4], /create_file\s+create\s+b\.txt/);
      assert.equal(lines.length, 5);

      await t.cmd('CabooseAudit many');
      await t.waitFor(async () => (await t.notifications()).some((n) => /CabooseAudit takes a count/.test(n.msg) && n.level === 4), 'error');

      const other = fs.mkdtempSync(`${t.cwd}-other`);
      try {
        await t.cmd(`cd ${other}`);
        await t.cmd('CabooseAudit');
        await t.waitFor(async () => ((await linesOf(t, 'caboose_audit')) ?? []).some((l) => /nothing recorded for this workspace/.test(l)), 'empty list');
      } finally {
        fs.rmSync(other, { recursive: true, force: true });
      }
    });
  });
});

// Issue 17 defect 4: tampered rows were shown as genuine.
forEachNvim((bin) => {
  describe(`:CabooseAudit marks tampering (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('verifies the chain as :checkhealth does and marks the first broken row and every row after it', async () => {
      const t = await e.start();
      for (const p of ['a.txt', 'b.txt', 'c.txt', 'd.txt']) {
        await t.lua("return require('caboose').tool_call('create_file', { path = ..., content = 'x' })", [p]);
      }
      await t.cmd('CabooseAudit');
      const clean = await t.waitFor(() => linesOf(t, 'caboose_audit'), 'the audit buffer');
      assert.match(clean[1], /the hash chain verifies/);
      assert.ok(!clean.some((l) => /TAMPERED|✗/.test(l)), clean.join('\n'));
      await t.nvim.input('q');
      await t.waitFor(async () => (await linesOf(t, 'caboose_audit')) === null, 'closed');

      const db = new Database(`${t.dataDir}/caboose.sqlite`);
      const ids = (db.prepare("SELECT id FROM audit_log WHERE tool = 'create_file' ORDER BY id").all() as { id: number }[]).map((r) => r.id);
      db.exec('DROP TRIGGER audit_log_no_update');
      db.prepare("UPDATE audit_log SET path = 'forged.txt' WHERE id = ?").run(ids[1]);
      db.close();
      await t.cmd('CabooseAudit');
      const lines = await t.waitFor(async () => {
        const l = await linesOf(t, 'caboose_audit');
        return l && l.some((x) => /TAMPERED/.test(x)) ? l : null;
      }, 'the tampered list');
      const text = lines.join('\n');
      assert.match(text, new RegExp(`TAMPERED: the hash chain breaks at row ${ids[1]}`));
      const row = (p: string): string => lines.find((l) => new RegExp(`create\\s+${p}`).test(l)) ?? '';
      assert.match(row('a\\.txt'), /^ {2}\d/, `a.txt (before the break) is not marked:\n${text}`);
      for (const p of ['forged\\.txt', 'c\\.txt', 'd\\.txt']) assert.match(row(p), /^✗ /, `${p} is marked:\n${text}`);
      const health = await t.lua<string>("vim.cmd('checkhealth caboose'); return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')");
      assert.match(health, new RegExp(`broken at row ${ids[1]}`));
    });
  });
});
