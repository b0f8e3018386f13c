/**
 * The transcript's key for the pending approval is `gA` (chat.keys.approval), not `ga`: `ga` (the character's
 * code, :ascii) stays Neovim's in the chat. `q` closes the read-only transcript (as in help windows). The
 * keys list (g?), the approval float's footer and the key itself agree; the key can be changed or disabled.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { waitApprovalFloat } from '../support/approval';

const SETUP = (extra = '') => `require('caboose').setup({ mode = 'create', provider = { max_retries = 0 }, approval = { style = 'float' } ${extra} })`;

forEachNvim((bin) => {
  describe(`the chat's approval key (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    /** The transcript's buffer-local Normal-mode mapping of `lhs` (its description), or null. */
    const localMap = (lhs: string) =>
      e.t.lua<string | null>(
        `local m = vim.fn.maparg(..., 'n', false, true)
         if type(m) == 'table' and m.buffer == 1 then return m.desc or '' end
         return vim.NIL`,
        [lhs],
      );
    const toTranscript = () => e.t.lua("vim.api.nvim_set_current_win(vim.fn.win_findbuf(require('caboose.chat').buf())[1])");
    const pending = async () => {
      e.fake.script({ toolCalls: [{ name: 'create_file', arguments: { path: 'n.txt', content: 'x\n' } }] }, { text: 'created' });
      await e.t.cmd('Caboose make n.txt');
      return waitApprovalFloat(e.t, 'create_file');
    };

    it('gA goes to the pending approval; ga is Neovim\'s :ascii there; g? and the float name gA; q closes the read-only transcript', async () => {
      await e.start({ initLua: SETUP() });
      const float = await pending();
      assert.match(float.footer, /answer: :CabooseApproval \(gA in the chat\)/);
      await toTranscript();
      assert.equal(await e.t.lua<boolean>('return vim.bo.modifiable'), false, 'the transcript is read-only');
      assert.equal(await localMap('ga'), null, 'ga is not mapped in the transcript');
      assert.match((await localMap('gA')) ?? '', /pending approval/);
      // ga: Neovim's own (it shows the character under the cursor); the float is not focused.
      await e.t.nvim.input('ga');
      await e.t.lua('return 1'); // the input was handled
      assert.equal(await e.t.lua<boolean>("return vim.api.nvim_get_current_buf() == require('caboose.chat').buf()"), true, 'still in the transcript');
      assert.equal((await waitApprovalFloat(e.t, 'create_file')).focused, false);
      await e.t.nvim.input('gA');
      await e.t.waitFor(async () => (await waitApprovalFloat(e.t, 'create_file')).focused, 'gA focuses the approval float');
      await e.t.lua("require('caboose').approval_respond('reject')");
      await toTranscript();
      await e.t.nvim.input('g?');
      await e.t.waitFor(async () => (await e.t.lua<string>('return vim.bo.filetype')) === 'caboose_keys', 'the keys float');
      const keys = (await e.t.lua<string[]>('return vim.api.nvim_buf_get_lines(0, 0, -1, false)')).join('\n');
      assert.match(keys, /^ gA +go to the pending approval/m);
      assert.doesNotMatch(keys, /^ ga /m);
      await e.t.nvim.input('q');
      await toTranscript();
      await e.t.nvim.input('q');
      await e.t.waitFor(async () => (await e.t.lua<number>("return #vim.fn.win_findbuf(require('caboose.chat').buf())")) === 0, 'q closed the chat');
    });

    it('chat.keys.approval changes the key (and the footer); "" disables it', async () => {
      await e.start({ initLua: SETUP(", chat = { keys = { approval = '<LocalLeader>p' } }") });
      await e.t.lua("vim.g.maplocalleader = ','");
      const float = await pending();
      assert.match(float.footer, /\(<LocalLeader>p in the chat\)/);
      await toTranscript();
      assert.equal(await localMap('gA'), null);
      await e.t.nvim.input(',p');
      await e.t.waitFor(async () => (await waitApprovalFloat(e.t, 'create_file')).focused, 'the configured key focuses the float');
      await e.t.lua("require('caboose').approval_respond('reject')");
      await e.t.close();
      await e.start({ initLua: SETUP(", chat = { keys = { approval = '' } }") });
      const off = await pending();
      assert.match(off.footer, /answer: :CabooseApproval\s*$/);
      await toTranscript();
      assert.equal(await localMap('gA'), null, 'disabled');
    });
  });
});
