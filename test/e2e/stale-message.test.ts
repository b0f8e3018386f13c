/**
 * Issue 17 defect 6, through Neovim: a made-up or never-read expectedSha256 is reported as one the file
 * never had since the agent read it; a real change since the read names its side (disk or buffer).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim, startNvim, type TestNvim } from '../support/nvim';
import { toolCall } from '../support/buffers';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

forEachNvim((bin) => {
  describe(`stale_file says which it is (Neovim ${bin.version})`, () => {
    let t: TestNvim;
    before(async () => {
      t = await startNvim({ nvim: bin, initLua: "require('caboose').setup({})" });
    });
    after(async () => {
      await t.close();
    });

    it('made up, never read, changed on disk, changed in the buffer', async () => {
      const f = path.join(t.cwd, 'f.txt');
      fs.writeFileSync(f, 'alpha\n');
      const madeUp = await toolCall(t, 'write_file', { path: 'f.txt', content: 'x\n', expectedSha256: sha('invented\n') });
      assert.equal(madeUp.error?.kind, 'stale_file');
      assert.match(madeUp.error!.message, /is not one this file had since the agent read it \(this file was not read in this session\)/);

      const read = await toolCall(t, 'read_file', { path: 'f.txt' });
      const wrong = await toolCall(t, 'edit_file', { path: 'f.txt', edits: [{ oldText: 'alpha', newText: 'beta' }], expectedSha256: sha('other\n') });
      assert.match(wrong.error!.message, /is not one this file had since the agent read it \(no read or write of this file returned it\)/);

      fs.writeFileSync(f, 'alpha\ndisk\n');
      const disk = await toolCall(t, 'write_file', { path: 'f.txt', content: 'x\n', expectedSha256: read.data!.sha256 });
      assert.match(disk.error!.message, /changed since you read it: the file on disk changed/);

      const again = await toolCall(t, 'read_file', { path: 'f.txt' });
      await t.cmd('edit f.txt');
      await t.lua("vim.api.nvim_buf_set_lines(0, 0, 1, false, {'typed'})");
      const buf = await toolCall(t, 'write_file', { path: 'f.txt', content: 'x\n', expectedSha256: again.data!.sha256 });
      assert.match(buf.error!.message, /changed since you read it: the Neovim buffer changed/);
      assert.equal(fs.readFileSync(f, 'utf8'), 'alpha\ndisk\n');
    });
  });
});
