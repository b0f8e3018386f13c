/** Issue 17, defect 10: every tool line names what it acted on (no "move_file a +0 −0", no path-less
 * "restore_file +2 −0", no "1 files"). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { firstToolResult } from '../support/chat-requests';

const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

forEachNvim((bin) => {
  describe(`tool lines (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('move_file, delete_file, restore_file, apply_patch, glob, list_directory, todo_write and recall lines name their target', async () => {
      await e.start({ initLua: SETUP });
      fs.writeFileSync(path.join(e.t.cwd, 'f.txt'), 'one\ntwo\n');
      fs.writeFileSync(path.join(e.t.cwd, 'p.txt'), 'alpha\n');
      let sha = '';
      e.fake.script(
        { toolCalls: [{ name: 'read_file', arguments: { path: 'f.txt' } }] },
        (req) => {
          sha = firstToolResult(req).data!.sha256 as string;
          return { toolCalls: [{ name: 'move_file', arguments: { from: 'f.txt', to: 'sub/new1.txt', expectedSha256: sha } }] };
        },
        () => ({ toolCalls: [{ name: 'delete_file', arguments: { path: 'sub/new1.txt', expectedSha256: sha } }] }),
        (req) => ({ toolCalls: [{ name: 'restore_file', arguments: { trashId: firstToolResult(req).data!.trashId as string } }] }),
        { toolCalls: [{ name: 'apply_patch', arguments: { patch: '*** Begin Patch\n*** Update File: p.txt\n@@\n-alpha\n+ALPHA\n*** End Patch\n' } }] },
        { toolCalls: [{ name: 'glob', arguments: { pattern: 'p.*' } }] },
        { toolCalls: [{ name: 'list_directory', arguments: {} }] },
        { toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'check it', status: 'pending' }] } }] },
        { text: 'all done' },
      );
      await e.t.cmd('Caboose go');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('all done'), 'the end of the turn');
      const lines = (await e.t.chatLines()).filter((l) => /^[✓✗⊘◌] /.test(l));
      const text = lines.join('\n');
      assert.match(text, /^✓ move_file f\.txt → sub\/new1\.txt$/m, 'the move names its destination');
      assert.match(text, /^✓ delete_file sub\/new1\.txt /m);
      assert.match(text, /^✓ restore_file sub\/new1\.txt \+2 −0$/m, 'the restore names its path');
      assert.match(text, /^✓ apply_patch p\.txt \+1 −1$/m, 'no "1 files"');
      assert.match(text, /^✓ glob p\.\* 1 path$/m);
      assert.match(text, /^✓ list_directory \. \d+ entr(y|ies)$/m);
      assert.match(text, /^✓ todo_write 1 task$/m);
      assert.doesNotMatch(text, /\b1 files\b|\+0 −0/);
    });
  });
});
