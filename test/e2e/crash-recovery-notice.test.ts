/**
 * Issue 18 item 3: recovery "says in the chat what it restored". A commit journal left by a dead process
 * (a replace cut off after its rename) is recovered when the session opens the workspace; the chat names
 * the file put back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

forEachNvim((bin) => {
  describe(`crash recovery notice (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);

    it('the chat says which file an interrupted change put back', async () => {
      const t = await e.start();
      const root = fs.realpathSync(t.cwd);
      const target = path.join(root, 'src.txt');
      const backup = path.join(root, '.src.txt.caboose-0123456789ab.bak');
      fs.writeFileSync(target, 'NEW\n');
      fs.writeFileSync(backup, 'old\n');
      const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
      const journal = path.join(t.dataDir, 'journal');
      fs.mkdirSync(journal, { recursive: true });
      fs.writeFileSync(
        path.join(journal, `${dead}-x-00cc.pending`),
        JSON.stringify({ root, steps: [{ kind: 'replace', target, tmp: path.join(root, '.src.txt.caboose-0123456789ab.tmp'), backup, newSha256: sha('NEW\n') }] }),
      );
      e.fake.script({ text: 'hello back' });
      await t.cmd('Caboose hello');
      await t.waitFor(async () => (await t.chatLines()).join('\n').includes('hello back'), 'answer');
      const chat = (await t.chatLines()).join('\n');
      assert.match(chat, /A change interrupted by a crash was undone\. Files put back to their version before the interrupted change: src\.txt/);
      assert.equal(fs.readFileSync(target, 'utf8'), 'old\n');
      assert.equal(fs.existsSync(backup), false);
    });
  });
});
