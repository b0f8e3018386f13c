/**
 * Issue 24: the transcript's parser keeps a settled and a live part (Neovim 0.12+), so a streamed frame
 * re-parses only the reply at the end. After a reply ends, the transcript's highlighting must be exactly
 * what one tree of the whole buffer gives: these tests compare every column's treesitter captures (and
 * so highlight groups) with a reference buffer holding the same text parsed in one piece, with a UI
 * attached so the chat redraws (and highlights) as in a real editor.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { LUA_CAPTURES } from '../support/ts-captures';

type State = { state: string };
const SETUP = `require('caboose').setup({ mode = 'chug', provider = { max_retries = 0 } })`;

/** The chat's own markdown injections (lua/caboose/chat/markdown.lua H.MD_INJECTIONS). */
const MD_INJECTIONS = [
  '(fenced_code_block (info_string (language) @injection.language) (code_fence_content) @injection.content)',
  '([(inline) (pipe_table_cell)] @injection.content (#set! injection.language "markdown_inline"))',
].join('\n');

const CAPTURES = LUA_CAPTURES;

/** Lua: the chat's captures and those of a reference buffer with the same text parsed as one tree. */
const COMPARE = `${CAPTURES}
local chat = require('caboose.chat').buf()
local ref = vim.api.nvim_create_buf(false, true)
vim.api.nvim_buf_set_lines(ref, 0, -1, false, vim.api.nvim_buf_get_lines(chat, 0, -1, false))
vim.treesitter.get_parser(ref, 'markdown', { injections = { markdown = ... } })
vim.treesitter.start(ref, 'markdown')
local a, b = captures(chat), captures(ref)
vim.api.nvim_buf_delete(ref, { force = true })
return { chat = a, ref = b }
`;

/** Lua: the chat parser's regions as { start row, end row } pairs. */
const REGIONS = `
local hl = vim.treesitter.highlighter.active[require('caboose.chat').buf()]
if not hl then return nil end
local out = {}
for i, r in pairs(hl.tree:included_regions()) do
  out[i] = r[1] and { r[1][1], r[1][4] } or { -1, -1 }
end
return out
`;

const REPLY_1 = [
  'First answer.',
  '',
  '## Plan',
  '',
  'Read the **file**, then `edit` it:',
  '',
  '```lua',
  'local answer = 42',
  'print(answer)',
  '```',
  '',
  '- one item',
  '- two _items_',
  '',
  'Done one.',
].join('\n');

const REPLY_2 = [
  'Second answer, streamed in small pieces.',
  '',
  '### Details',
  '',
  'A [link](https://example.com) and **bold** text.',
  '',
  '```lua',
  'local function twice(x)',
  '  return x * 2',
  'end',
  '```',
  '',
  '> a quote',
  '',
  'Done two.',
].join('\n');

forEachNvim((bin) => {
  describe(`chat highlighting while streaming (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const split = bin.version.split('.').map(Number)[1] >= 12;
    const waitState = (s: string) => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === s, `state ${s}`);
    const chatText = async () => (await e.t.chatLines()).join('\n');
    const regions = () => e.t.lua<[number, number][] | null>(REGIONS);

    async function assertSameAsOneTree(what: string): Promise<void> {
      const r = await e.t.lua<{ chat: Record<string, string>; ref: Record<string, string> }>(COMPARE, [MD_INJECTIONS]);
      const keys = Object.keys(r.ref);
      assert.ok(keys.length > 100, `${what}: compared ${keys.length} positions`);
      const diff = keys.filter((k) => r.chat[k] !== r.ref[k]).map((k) => `${k}: chat ${r.chat[k]} / one tree ${r.ref[k]}`);
      assert.deepEqual(diff.slice(0, 10), [], `${what}: captures differ from one tree of the whole buffer`);
    }

    it('after a streamed reply ends, headings and fenced code highlight exactly as one tree of the buffer', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(120, 60, { ext_linegrid: true, rgb: true });
      e.fake.script({ text: REPLY_1 });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      await e.t.waitFor(async () => /Done one\./.test(await chatText()), 'first reply');
      const lines1 = await e.t.chatLines();
      if (split) {
        // Precondition: the quiet chat moved the boundary to its last section (the reply's "## Plan").
        const plan = lines1.indexOf('## Plan');
        await e.t.waitFor(async () => (await regions())?.[1]?.[0] === plan, `the live part starting at "## Plan" (row ${plan})`);
      }
      const chunks = REPLY_2.match(/[\s\S]{1,7}/g)!;
      e.fake.script({ text: REPLY_2, chunks, delayMs: 5 });
      await e.t.cmd('Caboose second');
      await waitState('idle');
      await e.t.waitFor(async () => /Done two\./.test(await chatText()), 'second reply');
      const lines = await e.t.chatLines();
      if (split) {
        const reg = (await regions())!;
        assert.equal(reg.length, 2, 'two parts: settled and live');
        assert.ok(reg[0][0] === 0 && reg[0][1] === reg[1][0] && reg[1][0] > 0, `contiguous parts: ${JSON.stringify(reg)}`);
        // After the quiet spell the boundary moves on to the last section: the second reply's.
        const reply = lines.lastIndexOf('## Caboose');
        await e.t.waitFor(async () => (await regions())?.[1]?.[0] === reply, `the live part starting at the last "## Caboose" (row ${reply})`);
      } else {
        assert.equal((await regions())!.length, 1, 'Neovim < 0.12 keeps one tree');
      }
      await e.t.cmd('redraw');
      // The highlight groups a user sees: a heading and a keyword of the injected Lua, in both replies.
      const groups = await e.t.lua<string[]>(`
        local buf = require('caboose.chat').buf()
        local out = {}
        for _, key in ipairs({ ...}) do
          local row, col = key:match('(%d+):(%d+)')
          local hl = {}
          for _, t in ipairs(vim.inspect_pos(buf, tonumber(row), tonumber(col)).treesitter) do table.insert(hl, t.hl_group) end
          table.insert(out, table.concat(hl, ' '))
        end
        return out`, [
        `${lines.indexOf('## Plan')}:0`,
        `${lines.indexOf('### Details')}:4`,
        `${lines.indexOf('local answer = 42')}:0`,
        `${lines.indexOf('local function twice(x)')}:6`,
      ]);
      const [plan, details, code1, code2] = groups;
      assert.match(plan, /@markup\.heading\.2\.marker\.markdown|@markup\.heading\.2\.markdown/, `"## Plan": ${plan}`);
      assert.match(details, /@markup\.heading\.3\.markdown/, `"### Details": ${details}`);
      assert.match(code1, /@keyword\.lua/, `"local" in the first code block: ${code1}`);
      assert.match(code2, /@keyword\.function\.lua|@keyword\.lua/, `"function" in the second code block: ${code2}`);
      await assertSameAsOneTree('after the second reply');
    });

    it('an edit in the settled part (the rules lines rewritten) keeps the highlighting exact', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(120, 60, { ext_linegrid: true, rgb: true });
      await e.t.lua("require('caboose.chat').rules({ '> Rules: AGENTS.md (12 lines)' })");
      e.fake.script({ text: REPLY_1 });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      await e.t.waitFor(async () => /Done one\./.test(await chatText()), 'first reply');
      if (split) {
        const plan = (await e.t.chatLines()).indexOf('## Plan');
        await e.t.waitFor(async () => (await regions())?.[1]?.[0] === plan, 'two parts');
      }
      // Rewritten in place, at the top: inside the settled part; then a second reply streams.
      await e.t.lua("require('caboose.chat').rules({ '> Rules: AGENTS.md (40 lines), **CLAUDE.md** (3 lines)', '> and `.cursor/rules/a.mdc`' })");
      e.fake.script({ text: REPLY_2, chunks: REPLY_2.match(/[\s\S]{1,9}/g)!, delayMs: 5 });
      await e.t.cmd('Caboose second');
      await waitState('idle');
      await e.t.waitFor(async () => /Done two\./.test(await chatText()), 'second reply');
      await e.t.cmd('redraw');
      if (split) {
        const reg = (await regions())!;
        assert.ok(reg.length === 2 && reg[0][1] === reg[1][0], `still two contiguous parts: ${JSON.stringify(reg)}`);
      }
      await assertSameAsOneTree('after the settled part was edited');
    });

    it('a transcript replaced while split (a reopened session) goes back to one correct tree', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(120, 60, { ext_linegrid: true, rgb: true });
      e.fake.script({ text: REPLY_1 });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      if (split) await e.t.waitFor(async () => (await regions())?.length === 2, 'two parts');
      await e.t.lua(`require('caboose.chat').load({
        { t = 'user', text = 'earlier question' },
        { t = 'text', text = ... },
      })`, [REPLY_2]);
      await e.t.cmd('redraw');
      await e.t.waitFor(async () => ((await regions())?.length ?? 0) >= 1, 'the chat highlighted');
      await assertSameAsOneTree('after load');
      // And streaming into it afterwards still ends up right.
      e.fake.script({ text: REPLY_1 });
      await e.t.cmd('Caboose again');
      await waitState('idle');
      await e.t.waitFor(async () => /Done one\./.test(await chatText()), 'reply after load');
      await e.t.cmd('redraw');
      await assertSameAsOneTree('after a reply streamed into the reopened transcript');
    });
  });
});
