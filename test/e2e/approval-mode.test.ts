/** Issue 17, defect 7: a pending approval follows :CabooseMode (approved, refused or retitled). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { approvalFloat, waitApprovalFloat } from '../support/approval';
import { lastToolResults } from '../support/chat-requests';

// sandbox off: bash asks in auto-edit whether or not bwrap works here (with a sandbox, auto-edit runs it).
const SETUP = (mode: string) => `require('caboose').setup({ mode = '${mode}', provider = { max_retries = 0 }, approval = { style = 'float' }, sandbox = { mode = 'off' } })`;

forEachNvim((bin) => {
  describe(`pending approvals follow the mode (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const chat = async () => (await e.t.chatLines()).join('\n');
    const state = async () => (await e.t.lua<{ state: string }>("return require('caboose').state()")).state;

    it('create → chug while bash waits: approved (said in the chat), the command runs', async () => {
      await e.start({ initLua: SETUP('create') });
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo ran > ran.txt' } }] }, { text: 'finished' });
      await e.t.cmd('Caboose run it');
      await waitApprovalFloat(e.t, 'bash');
      await e.t.cmd('CabooseMode chug');
      await e.t.waitFor(async () => /finished/.test(await chat()), 'the turn goes on').catch(async (err) => {
        throw new Error(`${err}\nstate: ${await state()}`);
      });
      assert.equal(await approvalFloat(e.t), null, 'the float closed');
      assert.ok(fs.existsSync(path.join(e.t.cwd, 'ran.txt')), 'the command ran');
      assert.match(await chat(), /^> approved bash: chug mode runs it without asking$/m);
      assert.match(await chat(), /^✓ bash echo ran > ran\.txt → exit 0$/m);
    });

    it('create → plan while write_file waits: refused, said in the chat, the model learns why', async () => {
      await e.start({ initLua: SETUP('create') });
      e.fake.script({ toolCalls: [{ name: 'write_file', arguments: { path: 'new.txt', content: 'x\n', expectedSha256: '' } }] }, { text: 'ok, a plan then' });
      await e.t.cmd('Caboose write it');
      await waitApprovalFloat(e.t, 'write_file');
      await e.t.cmd('CabooseMode plan');
      await e.t.waitFor(async () => /ok, a plan then/.test(await chat()), 'the turn goes on');
      assert.equal(await approvalFloat(e.t), null);
      assert.equal(fs.existsSync(path.join(e.t.cwd, 'new.txt')), false, 'nothing written');
      assert.match(await chat(), /^> refused write_file: plan mode blocks it$/m);
      assert.match(await chat(), /^⊘ write_file new\.txt/m);
      const result = [...lastToolResults(e.fake.chatRequests.at(-1)!).values()][0];
      assert.equal(result.ok, false);
      assert.match(result.error!.message, /plan mode/);
    });

    it('create → auto-edit while bash waits: it keeps waiting, its title says auto-edit', async () => {
      await e.start({ initLua: SETUP('create') });
      e.fake.script({ toolCalls: [{ name: 'bash', arguments: { command: 'echo hi' } }] }, { text: 'done now' });
      await e.t.cmd('Caboose run it');
      const before = await waitApprovalFloat(e.t, 'bash');
      assert.match(before.title, /\(create mode\)/);
      await e.t.cmd('CabooseMode auto-edit');
      const after = await e.t.waitFor(async () => {
        const f = await approvalFloat(e.t);
        return f && /\(auto-edit mode\)/.test(f.title) ? f : null;
      }, 'the title says auto-edit');
      assert.match(after.title, /approve bash\?/);
      // The request goes out just before the agent's state event (see approval.ts), so wait for it.
      await e.t.waitFor(async () => (await state()) === 'pending_approval', 'still waiting');
      await e.t.lua("require('caboose').approval_respond('once')");
      await e.t.waitFor(async () => /done now/.test(await chat()), 'the turn ends');
    });
  });
});
