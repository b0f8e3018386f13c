/**
 * Issue 24, a burst into a long chat: the editor keeps answering while a reply streams faster than it can
 * be parsed, and what the transcript ends with does not depend on how fast the reply came.
 * - A syntax tree is freed when Lua's garbage collector finalizes it (one C call, 20–100 ms for the trees
 *   of a ~400 KB transcript). The trees a boundary move or a deleted chat leave behind are collected once
 *   the chat is quiet, not by the collector in the middle of the next reply's stream.
 * - A reply streamed as a burst (tiny chunks, no delay: frames of thousands of characters, parsed while
 *   more arrive) ends with the same content, folds and highlighting as the same reply streamed slowly,
 *   into a chat that already holds a long conversation.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { forEachNvim } from '../support/nvim';
import { useE2E } from '../support/e2e';
import { LUA_CAPTURES } from '../support/ts-captures';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** ~40 KB of earlier conversation: headings, prose, fenced code, lists. */
function fill(): string {
  let s = '';
  for (let i = 0; s.length < 40_000; i++) {
    s += `## You\n\nquestion ${i}: how does part ${i} work?\n\n## Caboose\n\nPart ${i} reads the **file** and keeps \`buffers\` in step.\n\n`;
    s += '```lua\n' + `local part${i} = require('part${i}')\nprint(part${i}.run(${i}))\n` + '```\n\n';
    s += `- step ${i}: _read_\n- step ${i + 1}: write\n\n> note ${i}\n\n`;
  }
  return s;
}

const PART_1 = [
  'Looking at it now.',
  '',
  '```lua',
  'local function twice(x)',
  '  return x * 2',
  'end',
  '```',
  '',
  'Then a command:',
].join('\n');

const PART_2 = [
  'It printed what we expected.',
  '',
  '## Plan',
  '',
  'Read the **file**, then `edit` it:',
  '',
  '```ts',
  'const answer: number = 42;',
  'export function main(): void { console.log(answer); }',
  '```',
  '',
  '1. one item',
  '2. two _items_ with a [link](https://example.com)',
  '',
  '> a quote',
  '',
  '',
  // ~5 KB more: the reply's second part in one chunk is a frame of over 4 KB (parsed after its redraw).
  ...Array.from({ length: 100 }, (_, i) => `- item ${i}: **bold ${i}** and \`code ${i}\` with _emphasis_ in a list`),
  '',
  'Done here.',
].join('\n');

/** Lua: the chat's lines, its closed folds in its window, and every column's treesitter captures. */
const SNAPSHOT = `${LUA_CAPTURES}
local buf = require('caboose.chat').buf()
local caps = {}
for pos, c in pairs(captures(buf)) do
  caps[#caps + 1] = pos .. '=' .. c
end
table.sort(caps)
local win = vim.fn.win_findbuf(buf)[1]
local folds = vim.api.nvim_win_call(win, function()
  local out, l, n = {}, 1, vim.api.nvim_buf_line_count(0)
  while l <= n do
    local s = vim.fn.foldclosed(l)
    if s ~= -1 then
      table.insert(out, s .. '-' .. vim.fn.foldclosedend(l))
      l = vim.fn.foldclosedend(l) + 1
    else
      l = l + 1
    end
  end
  return out
end)
local trees = {}
for i, t in pairs(vim.treesitter.get_parser(buf, 'markdown'):trees()) do
  trees[#trees + 1] = i .. ': ' .. table.concat({ t:root():range() }, ',')
end
local hl = vim.treesitter.highlighter.active[buf]
trees[#trees + 1] = 'regions ' .. vim.inspect(vim.treesitter.get_parser(buf, 'markdown'):included_regions()) .. ' hl ' .. tostring(hl and hl.tree == vim.treesitter.get_parser(buf, 'markdown'))
return { lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false), folds = folds, captures = caps, trees = trees }
`;

type Snapshot = { lines: string[]; folds: string[]; captures: string[]; trees: string[] };

forEachNvim((bin) => {
  describe(`a burst ends like a slow stream (Neovim ${bin.version})`, () => {
    const e = useE2E(bin);
    const split = bin.version.split('.').map(Number)[1] >= 12;
    const waitState = (s: string) => e.t.waitFor(async () => (await e.t.lua<State>("return require('caboose').state()")).state === s, `state ${s}`);
    const liveStart = () =>
      e.t.lua<number | null>("local hl = vim.treesitter.highlighter.active[require('caboose.chat').buf()]; local r = hl and hl.tree:included_regions()[2]; return r and r[1] and r[1][1] or nil");

    /** A fresh chat holding the earlier conversation, then the reply streamed as `chunk`-character chunks `delayMs` apart. */
    async function streamed(chunk: number, delayMs: number): Promise<Snapshot> {
      await e.t.cmd('CabooseNew');
      await e.t.lua("require('caboose.chat').append(...)", [fill()]);
      const pieces = (text: string) => text.match(new RegExp(`[\\s\\S]{1,${chunk}}`, 'g'))!;
      e.fake.script(
        { text: PART_1, chunks: pieces(PART_1), delayMs, toolCalls: [{ name: 'bash', arguments: { command: 'echo out-one; echo out-two' } }] },
        { text: PART_2, chunks: pieces(PART_2), delayMs },
      );
      await e.t.cmd('Caboose explain it');
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('Done here.'), 'the reply');
      const lines = await e.t.chatLines();
      assert.ok(lines.some((l) => /^ {2}┆ out-two$/.test(l)), 'the command\'s output in its details');
      if (split) {
        // Settled: the live part starts at the reply's last top-level section ("## Plan").
        const plan = lines.lastIndexOf('## Plan');
        await e.t.waitFor(async () => (await liveStart()) === plan, `the live part starting at "## Plan" (row ${plan})`);
      }
      await e.t.cmd('redraw');
      return e.t.lua<Snapshot>(SNAPSHOT);
    }

    it('same content, folds and highlighting after a burst as after a slow stream, in a long chat', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(120, 50, { ext_linegrid: true, rgb: true });
      assert.ok(PART_2.length > 4096, `the second part over 4 KB: ${PART_2.length}`);
      const slow = await streamed(24, 15);
      const burst = await streamed(2, 0);
      // Each part in one chunk: the second is one frame of over 4 KB.
      const whole = await streamed(1 << 20, 0);
      assert.deepEqual(whole.lines, slow.lines, 'the same transcript (one chunk a part)');
      assert.deepEqual(whole.folds, slow.folds, 'the same folds (one chunk a part)');
      assert.deepEqual(whole.captures, slow.captures, 'the same treesitter captures (one chunk a part)');
      assert.ok(slow.lines.length > 1000, `a long chat: ${slow.lines.length} lines`);
      assert.deepEqual(burst.lines, slow.lines, 'the same transcript');
      assert.ok(slow.folds.length >= 1, `the command's details folded: ${JSON.stringify(slow.folds)}`);
      assert.deepEqual(burst.folds, slow.folds, 'the same folds');
      const diff = slow.captures.flatMap((c, i) => (burst.captures[i] !== c ? [`slow ${c} / burst ${burst.captures[i]}`] : [])).slice(0, 10);
      assert.equal(burst.captures.length, slow.captures.length);
      assert.deepEqual(diff, [], `the same treesitter captures at every column (trees: slow ${slow.trees.join('; ')} / burst ${burst.trees.join('; ')})`);
      assert.ok(slow.captures.some((c) => /lua:keyword/.test(c)), 'the injected code highlighted');
    });

    it('no boundary move and no quiet collection while a reply is about to stream; both once it has ended', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(120, 50, { ext_linegrid: true, rgb: true });
      // Counts full collections (the quiet collection calls collectgarbage('collect')).
      await e.t.lua(`_G.full_gcs = 0
        local cg = collectgarbage
        _G.collectgarbage = function(opt, ...)
          if opt == 'collect' then _G.full_gcs = _G.full_gcs + 1 end
          return cg(opt, ...)
        end`);
      const gcs = () => e.t.lua<number>('return _G.full_gcs');
      await e.t.cmd('CabooseNew');
      await e.t.lua("require('caboose.chat').append(...)", [fill()]);
      e.fake.script({ text: REPLY });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('Done one.'), 'the first reply');
      const first = await e.t.chatLines();
      if (split) {
        const plan = first.lastIndexOf('## Plan');
        await e.t.waitFor(async () => (await liveStart()) === plan, `the live part starting at "## Plan" (row ${plan})`);
        await e.t.waitFor(async () => (await gcs()) > 0, 'the trees of the boundary move collected when quiet', 5000);
      }
      await sleep(800); // the chat quiet: nothing scheduled is left
      const gcsBefore = await gcs();
      const liveBefore = await liveStart();
      // The next reply is held before its first token (a model's wait for it): the user's message changed
      // the chat, and more than two quiet spells (H.SETTLE_MS = 300 ms) pass.
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      e.fake.script({ text: REPLY.replace('First answer.', 'Second answer.').replace('Done one.', 'Done two.'), gate, gateAfterChunks: 0 });
      await e.t.cmd('Caboose second');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('second'), 'the message in the chat');
      await sleep(1000);
      assert.equal((await e.t.lua<State>("return require('caboose').state()")).state, 'streaming', 'the reply still about to stream');
      assert.equal(await liveStart(), liveBefore, 'no boundary move while the reply is about to stream');
      assert.equal(await gcs(), gcsBefore, 'no quiet collection while the reply is about to stream');
      release();
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('Done two.'), 'the second reply');
      if (split) {
        // Afterwards both happen: the live part starts at the second reply's "## Plan", the old trees collected.
        const lines = await e.t.chatLines();
        const plan = lines.lastIndexOf('## Plan');
        assert.ok(plan > (liveBefore ?? 0));
        await e.t.waitFor(async () => (await liveStart()) === plan, `the live part starting at the second "## Plan" (row ${plan})`);
        await e.t.waitFor(async () => (await gcs()) > gcsBefore, 'the boundary move\'s trees collected once quiet', 5000);
      }
    });

    it('a reply\'s big frame is parsed after its redraw, in short slices, and the chat ends redrawn with its highlighting', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(100, 40, { ext_linegrid: true, rgb: true });
      e.fake.script({ text: REPLY });
      await e.t.cmd('Caboose first');
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('Done one.'), 'the reply');
      await e.t.waitFor(() => e.t.lua<boolean>("local hl = vim.treesitter.highlighter.active[require('caboose.chat').buf()]; return hl ~= nil and not hl.parsing"), 'the chat highlighted');
      // Records the C parse calls of the transcript's parser (their timeouts, ns) from a frame of at least
      // 4 KB on, until the boundary moves (a re-parse of its own, later); and how many of them ran inside
      // that frame's append and a redraw right after it (the frame's own turn of the main loop).
      await e.t.lua(`
        _G.parses, _G.in_turn = {}, {}
        vim.treesitter.language.add('markdown')
        local mt = getmetatable(vim._create_ts_parser('markdown'))
        local orig = mt.__index.parse
        mt.__index.parse = function(self, tree, src, incl, timeout)
          if _G.spy and src == require('caboose.chat').buf() then table.insert(_G.parses, timeout or 0) end
          return orig(self, tree, src, incl, timeout)
        end
        local T = require('caboose.chat.transcript')
        local append = T.append
        T.append = function(text)
          local big = text ~= nil and #text >= 4096
          _G.spy = _G.spy or big
          local before = #_G.parses
          append(text)
          if big then
            vim.cmd('redraw')
            table.insert(_G.in_turn, #_G.parses - before)
          end
        end
        local root = vim.treesitter.highlighter.active[require('caboose.chat').buf()].tree
        local set = root.set_included_regions
        root.set_included_regions = function(...)
          _G.spy = false
          return set(...)
        end`);
      // The next reply in one chunk (a burst's frame: ~40 KB at once), ending with highlighted markdown in view.
      const big = 'Here it is.\n\n' + fill() + '## Last\n\nSome **bold** text and `code`:\n\n```lua\nlocal x = 1\n```\n\nDone two.';
      e.fake.script({ text: big, chunks: [big] });
      await e.t.cmd('Caboose second');
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('Done two.'), 'the big reply');
      const done = () => e.t.lua<boolean>("local buf = require('caboose.chat').buf(); local hl = vim.treesitter.highlighter.active[buf]; return hl ~= nil and not hl.parsing and hl.tree:is_valid(true)");
      await e.t.waitFor(done, 'the frame parsed', 10_000);
      await sleep(50); // the redraw with the new trees (a turn of its own)
      const r = await e.t.lua<{ timeouts: number[]; inTurn: number[] }>('return { timeouts = _G.parses, inTurn = _G.in_turn }');
      // What the window shows now, cell by cell, against a redraw from scratch with the same trees.
      const SCREEN = "vim.cmd('redraw'); local out = {}; for r = 1, vim.o.lines - 2 do local row = {}; for c = 1, vim.o.columns do row[#row + 1] = vim.fn.screenattr(r, c) end; out[#out + 1] = table.concat(row, ',') end; return out";
      const shown = await e.t.lua<string[]>(SCREEN);
      const fresh = await e.t.lua<string[]>("vim.g._ts_force_sync_parsing = true; vim.cmd('redraw!'); " + SCREEN.replace("vim.cmd('redraw'); ", ''));
      assert.deepEqual(shown, fresh, 'the chat shows the highlighting of its new trees');
      assert.ok(r.inTurn.length >= 1, 'a frame of at least 4 KB');
      assert.ok(r.timeouts.length > 0, 'the frame was parsed');
      if (split) {
        assert.deepEqual(r.inTurn, r.inTurn.map(() => 0), 'no parse in the turn of a big frame and its redraw');
        assert.ok(r.timeouts.every((t) => t > 0 && t <= 1_500_000), `every parse call a slice of at most 1.5 ms: ${JSON.stringify(r.timeouts)}`);
      }
    });

    it('without an HTML parser, inline markdown is not scanned whole for injections at every parse', async () => {
      await e.start({ initLua: SETUP });
      await e.t.nvim.uiAttach(100, 40, { ext_linegrid: true, rgb: true });
      e.fake.script({ text: 'Some **bold** and `code`.\n\n- an _item_' });
      await e.t.cmd('Caboose hi');
      await waitState('idle');
      await e.t.waitFor(async () => (await e.t.chatLines()).includes('- an _item_'), 'the reply');
      await e.t.waitFor(() => e.t.lua<boolean>("return vim.treesitter.highlighter.active[require('caboose.chat').buf()] ~= nil"), 'the chat highlighted');
      const r = await e.t.lua<{ html: boolean; inline: boolean; combined: boolean }>(`
        local buf = require('caboose.chat').buf()
        vim.treesitter.get_parser(buf, 'markdown'):parse(true)
        local child = vim.treesitter.get_parser(buf, 'markdown'):children().markdown_inline
        local q = child and child._injection_query
        return { html = pcall(vim.treesitter.language.inspect, 'html'), inline = child ~= nil, combined = q and q.has_combined_injections or false }`);
      if (r.html) return; // an HTML parser is installed: the stock query (and its HTML highlighting) stays
      assert.ok(r.inline, 'inline markdown parsed');
      assert.equal(r.combined, false, 'no combined injection (each parse would scan every inline tree)');
    });
  });
});
