/**
 * Issue 24, a burst into a long chat: the editor keeps answering while a reply streams faster than it can
 * be parsed, and what the transcript ends with does not depend on how fast the reply came.
 * - A syntax tree is freed when Lua's garbage collector finalizes it (one C call, 20–100 ms for the trees
 *   of a ~400 KB transcript). The trees a boundary move or a deleted chat leave behind are collected once
 *   the chat is quiet, not by the collector in the middle of the next reply's stream.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';

type State = { state: string };
const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

/**
 * Counts the syntax trees Lua's collector frees (TSTree finalizers), in _G.freed_trees, and stops the
 * collector's own cycles: only an explicit collection frees anything from then on (a full collection
 * restarts the automatic cycles, so the test stops them again before each check).
 */
const COUNT_FREED = `
_G.freed_trees = 0
vim.treesitter.language.add('markdown')
local tree = vim.treesitter.get_string_parser('# x', 'markdown'):parse()[1]
local mt = getmetatable(tree)
local gc = mt.__gc
mt.__gc = function(t)
  _G.freed_trees = _G.freed_trees + 1
  return gc(t)
end
collectgarbage('collect')
_G.freed_trees = 0
collectgarbage('stop')
`;

const REPLY = ['First answer.', '', '## Plan', '', '```lua', 'local answer = 42', '```', '', 'Done one.'].join('\n');

forEachNvim((bin) => {
  describe(`chat trees freed when quiet (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const split = bin.version.split('.').map(Number)[1] >= 12;
    const waitState = (s: string) => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === s, `state ${s}`);
    const freed = () => e.t.lua<number>('return _G.freed_trees');
    const regions = () =>
      e.t.lua<number | null>("local hl = vim.treesitter.highlighter.active[require('caboose.chat').buf()]; if not hl then return nil end; local n = 0; for _ in pairs(hl.tree:included_regions()) do n = n + 1 end; return n");

    it('the trees a boundary move and a deleted chat leave behind are freed once the chat is quiet', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(100, 40, { ext_linegrid: true, rgb: true });
      await e.t.lua(COUNT_FREED);
      e.fake.script({ text: REPLY });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('Done one.'), 'the reply');
      if (split) {
        // The quiet chat moves its boundary (the settled part re-parsed: its previous tree is garbage).
        await e.t.waitFor(async () => (await regions()) === 2, 'two parts');
        await e.t.waitFor(async () => (await freed()) > 0, 'the settled part\'s previous tree freed after the boundary move', 5000);
      }
      await e.t.lua("collectgarbage('stop')");
      const before = await freed();
      // The chat's buffer is deleted: all its trees are garbage.
      await e.t.cmd('CabooseNew');
      await e.t.waitFor(async () => (await freed()) > before, 'the deleted chat\'s trees freed', 5000);
    });
  });
});
