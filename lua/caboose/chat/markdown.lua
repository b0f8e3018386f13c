--- The chat's markdown: treesitter highlighting of the transcript and the message area, loaded without
--- freezing the editor, and the transcript's parser kept in two parts (settled and live) so a streamed
--- frame re-parses only the reply at its end.
local S = require('caboose.chat.state')

local M = {}
local H = {}

--- Markdown with treesitter highlighting (fenced code through its injections). The parser and queries
--- load once, one piece per event-loop tick (together they would freeze the editor for ~25 ms); the
--- buffer gets its filetype when they are ready.
--- The message area completes @paths (the markdown ftplugin would set an HTML one).
M.OMNIFUNC = "v:lua.require'caboose.insertables.complete'.omnifunc"

H.md_ready = false
H.md_loading = false
H.md_waiting = {} ---@type integer[]
H.md_steps = {
  -- Each parser's shared library is loaded (dlopen) in its own turn: 0.1–1.6 ms on an idle machine, up to
  -- 20 ms when the disk is busy.
  function()
    vim.treesitter.language.add('markdown')
  end,
  function()
    vim.treesitter.language.add('markdown_inline')
  end,
  function()
    H.get_query('markdown', 'highlights')
  end,
  function()
    H.get_query('markdown_inline', 'highlights')
  end,
  function()
    H.get_query('markdown', 'injections')
    H.get_query('markdown_inline', 'injections')
  end,
  function()
    require('vim.treesitter.highlighter')
  end,
}

--- Neovim before 0.12 keeps the queries it has compiled in a weak cache (`vim.treesitter.query.get`): the
--- ones loaded here were collected before the highlighter asked for them, and both highlight queries
--- compiled again inside the chat's first redraw (≈ 14 ms on an idle machine, 25–35 ms on a busy one, in
--- one turn of the main loop). The chat keeps its entries of that cache alive (found among the function's
--- upvalues, or those of a function wrapping it). Neovim 0.12 keeps compiled queries in a strong cache (its
--- `query.get` is a table then, and nothing is done here).
H.pinned = {}
H.query_cache = function(fn, key, depth)
  for i = 1, 16 do
    local name, value = debug.getupvalue(fn, i)
    if not name then
      return nil
    end
    if type(value) == 'table' and rawget(value, key) ~= nil then
      return value
    end
    if type(value) == 'function' and depth > 0 then
      local found = H.query_cache(value, key, depth - 1)
      if found then
        return found
      end
    end
  end
end

H.get_query = function(lang, name)
  local get = vim.treesitter.query.get
  local query = get(lang, name)
  if type(get) == 'function' then
    local key = lang .. '%%' .. name -- the cache's key: the arguments joined with '%%' (two characters)
    local cache = H.query_cache(get, key, 1)
    if cache then
      H.pinned[key] = cache[key]
    end
  end
  return query
end

-- Each step in a later iteration of the main loop (typed keys are served between two steps).
H.next_turn = require('caboose.state').next_turn

--- The chat's markdown injections: fenced code and inline markup. The stock query also injects HTML as
--- one combined region of the whole buffer, and front matter: each appended frame then re-parsed all of a
--- long chat (≈ 70 ms a frame in a ~100k-token chat on Neovim 0.12; ≈ 13 ms with these two).
H.MD_INJECTIONS = table.concat({
  '(fenced_code_block (info_string (language) @injection.language) (code_fence_content) @injection.content)',
  '([(inline) (pipe_table_cell)] @injection.content (#set! injection.language "markdown_inline"))',
}, '\n')

--- The buffer's markdown parser, with the chat's injections.
--- Inline markdown's stock injections: HTML tags as one combined region, and LaTeX blocks. A combined
--- injection makes Neovim scan every inline tree of the buffer for injections at each parse instead of the
--- range it parses (`has_combined_injections`): in a long reply ≈ 10 ms in one turn of the main loop, at
--- every frame of a stream. Without an HTML parser (Neovim ships none) that injection never highlights
--- anything, so then the chat's inline markdown injects LaTeX only: the same highlighting, no full scan.
--- With an HTML parser installed the stock query stays.
H.INLINE_INJECTIONS = '((latex_block) @injection.content (#set! injection.language "latex") (#set! injection.include-children))'

H.injections = function()
  if not H.injections_cache then
    pcall(vim.treesitter.language.add, 'html')
    local html = pcall(vim.treesitter.language.inspect, 'html')
    H.injections_cache = { markdown = H.MD_INJECTIONS, markdown_inline = (not html) and H.INLINE_INJECTIONS or nil }
  end
  return H.injections_cache
end
-- Looked up in a turn of its own in the loading chain (a search of 'runtimepath': ≈ 1 ms).
table.insert(H.md_steps, H.injections)

H.md_parser = function(buf)
  if vim.api.nvim_buf_is_valid(buf) then
    -- Made before the filetype is set: the markdown ftplugin's vim.treesitter.start() then finds it.
    local ok, parser = pcall(vim.treesitter.get_parser, buf, 'markdown', { injections = H.injections() })
    if ok and parser and vim.b[buf].caboose_chat then
      H.gc_watch(buf, parser)
      H.split_watch(buf, parser)
    end
  end
end

--- Sets the filetype without the regex syntax: the `Syntax` event is ignored meanwhile, so the FileType
--- autocommands (the ftplugin, the user's own) run but syntax/markdown.vim (with HTML's) is not loaded,
--- only to be cleared by treesitter.start(): on Neovim 0.10 that was 10–20 ms of this turn. The buffer
--- ends as before: 'syntax' empty, treesitter highlighting.
H.set_filetype = function(buf)
  local ei = vim.go.eventignore
  vim.go.eventignore = ei == '' and 'Syntax' or (ei .. ',Syntax')
  local ok, err = pcall(function()
    vim.bo[buf].filetype = 'markdown'
  end)
  vim.go.eventignore = ei
  if not ok then
    error(err, 0)
  end
end

H.md_apply = function(buf)
  if vim.api.nvim_buf_is_valid(buf) then
    H.md_parser(buf)
    H.set_filetype(buf)
    if vim.b[buf].caboose_input then
      -- The markdown ftplugin sets its own (HTML tags); ours completes @paths.
      vim.bo[buf].omnifunc = M.OMNIFUNC
    end
    if not vim.treesitter.highlighter.active[buf] then
      pcall(vim.treesitter.start, buf, 'markdown')
    end
  end
end

-- Settled and live parts of the transcript ----------------------------------------------------------

--- Treesitter re-parses a buffer's markdown tree after every change, and in a long chat that tree is the
--- whole transcript: each streamed frame cost Neovim ≈ 10–20 ms of CPU (≈ 100 % of a paced stream into
--- a ~100k-token chat) although only the reply at its end changed. So the transcript's parser keeps two
--- regions (two trees): the settled part, parsed once, and the live part (the last top-level section —
--- the last heading — and everything after it), the only one a frame re-parses. When the chat has been
--- quiet for H.SETTLE_MS the boundary moves to the last section's heading: one re-parse of the settled
--- part per pause instead of one per frame. A boundary is always where a top-level section starts (a
--- heading the parser itself saw), so the two trees hold the same nodes — and the transcript the same
--- highlighting — as one tree of the whole buffer. Neovim 0.12+ only (its highlighter parses
--- asynchronously; on older versions the transcript keeps one tree).
H.SETTLE_MS = 300
--- How many quiet spells a boundary move waits for the parser to catch up (a long transcript's first
--- parse) before it waits for the next change instead.
H.SETTLE_TRIES = 10
H.splits = {} ---@type table<integer, { timer: uv.uv_timer_t, active: boolean, tries: integer, parser: vim.treesitter.LanguageTree }>

--- The end of the buffer, past the last line's end of line (row, col, byte offset): the chat appends
--- there (new lines) or just before it (text continuing the last line), and either way the live part,
--- which ends there, grows with it.
H.end_pos = function(buf)
  local lc = vim.api.nvim_buf_line_count(buf)
  return lc, 0, vim.api.nvim_buf_get_offset(buf, lc)
end

--- Whether the parser's regions are still the two parts: contiguous, covering the buffer, the settled
--- one not empty (an empty one at the end of the buffer would grow with the next append).
H.split_ok = function(buf, parser)
  local regions = parser:included_regions()
  local count = 0
  for _ in pairs(regions) do
    count = count + 1
  end
  local r1, r2 = regions[1], regions[2]
  if count ~= 2 or not (r1 and r2 and #r1 == 1 and #r2 == 1) then
    return false
  end
  local _, _, eb = H.end_pos(buf)
  return r1[1][3] == 0 and r1[1][6] > 0 and r1[1][6] == r2[1][3] and r2[1][6] == eb
end

--- Starts watching the transcript's parser: each change re-arms the quiet timer; a change that broke the
--- two parts (the buffer replaced, an edit while a new boundary was being parsed) goes back to one tree.
H.split_watch = function(buf, parser)
  if H.splits[buf] or vim.fn.has('nvim-0.12') == 0 then
    return
  end
  local timer = assert(vim.uv.new_timer())
  local st = { timer = timer, active = false, tries = 0, parser = parser }
  H.splits[buf] = st
  local settle = vim.schedule_wrap(function()
    H.settle(buf)
  end)
  parser:register_cbs({
    on_bytes = function()
      if st.active and not H.split_ok(buf, parser) then
        M.split_reset(buf, parser)
      end
      st.tries = 0
      timer:stop()
      timer:start(H.SETTLE_MS, 0, settle)
    end,
    on_detach = function()
      H.splits[buf] = nil
      timer:stop()
      if not timer:is_closing() then
        timer:close()
      end
    end,
  })
end

--- Back to one tree of the whole buffer. The regions are dropped, not set to the whole buffer: an edit
--- before the next parse would otherwise leave the parser with no region at all (it keeps the regions
--- of the trees it has, and this drops the trees).
M.split_reset = function(buf, parser)
  local st = H.splits[buf]
  if st and st.active then
    st.active = false
    parser:set_included_regions({ {} })
    parser._regions = nil
  end
end

--- Whether a reply is streaming or about to (the model's request in flight, or tools running before the
--- next one): the settled part's re-parse and the quiet collection then wait for the turn's end. Started
--- in a wait for the first token (the user's message makes the chat change, and a model answers in
--- 0.3–2 s), they landed on the reply's first frames: a full collection is one turn of 8–17 ms in a
--- ~100k-token chat, and the re-parse holds the highlighter's own parse of the reply until it ends.
H.busy = function()
  local state = S.status.state
  return state == 'streaming' or state == 'executing_tools'
end

--- Moves the boundary to the last top-level section's heading (if it moved forward).
H.settle = function(buf)
  local st = H.splits[buf]
  local hl = vim.treesitter.highlighter.active[buf]
  local parser = hl and hl.tree
  -- Only the parser being watched (treesitter restarted on the buffer would bring another one).
  if not st or not parser or parser ~= st.parser or not S.valid(buf) then
    return
  end
  if H.busy() then
    -- Not while a reply streams or is about to: again after a quiet spell (not counted as a try).
    st.timer:start(H.SETTLE_MS, 0, vim.schedule_wrap(function()
      H.settle(buf)
    end))
    return
  end
  if not parser:is_valid(true) or hl.parsing == true then
    -- Still parsing (or not redrawn: a hidden chat is not parsed): try again after a quiet spell.
    st.tries = st.tries + 1
    if st.tries < H.SETTLE_TRIES then
      st.timer:start(H.SETTLE_MS, 0, vim.schedule_wrap(function()
        H.settle(buf)
      end))
    end
    return
  end
  -- The tree holding the end of the buffer: the live part's, or the one tree.
  local tree = parser:trees()[st.active and 2 or 1]
  if not tree then
    return
  end
  local root = tree:root()
  local n = root:named_child_count()
  local section = n > 0 and root:named_child(n - 1) or nil
  if not section or section:type() ~= 'section' then
    return
  end
  local row, col = section:start()
  local from = st.active and parser:included_regions()[2][1][1] or 0
  if col ~= 0 or row <= from then
    return
  end
  local erow, ecol, eb = H.end_pos(buf)
  local b = vim.api.nvim_buf_get_offset(buf, row)
  -- The trees the re-parse replaces are kept until the chat is quiet after it (see collect_when_quiet).
  H.keep(vim.tbl_values(parser:trees())) -- a copy: the parser's own table gets the new trees
  parser:set_included_regions({ { { 0, 0, 0, row, 0, b } }, { { row, 0, b, erow, ecol, eb } } })
  st.active = true
  -- Both trees now, in the background: a region without a tree would be dropped by the next edit. The
  -- settled part's previous tree is garbage then.
  -- Meanwhile the highlighter starts no parse of its own: two background parses of one parser with
  -- different ranges share its one tree-sitter parser, and one's halted parse was resumed by the other
  -- with its regions — the settled part's tree came out as a tree of the live part, and the settled
  -- part lost its highlighting (seen in a second chat; test/e2e/chat-burst.test.ts). `parsing` is the
  -- 0.12 highlighter's "a parse is under way" flag: while it is set, a redraw highlights from the trees
  -- it has; when this parse ends, the flag is cleared and the chat redrawn with the new trees.
  local held = type(hl.parsing) == 'boolean'
  if held then
    hl.parsing = true
  end
  parser:parse({ { 0, 0, 1, 0 }, { erow - 1, 0, erow, 0 } }, function()
    if held and vim.treesitter.highlighter.active[buf] == hl then
      hl.parsing = false
      -- Redrawn now: the highlighter's state for the window then holds the new trees, not the replaced
      -- ones (which the collection below could not free while that state referenced them).
      if vim.api.nvim_buf_is_valid(buf) then
        vim.api.nvim__redraw({ buf = buf, valid = false, flush = true })
      end
    end
    M.collect_when_quiet()
  end)
end

-- A big append's parse, in short slices of later turns -------------------------------------------------

--- Neovim 0.12's highlighter starts parsing a changed buffer inside the redraw that follows the change
--- (3 ms of it), and runs the rest in 3 ms steps, each `vim.schedule`d — two of them usually land in one
--- turn of the main loop. A burst's frame (thousands of characters at once) made one turn hold the append,
--- a 3 ms parse slice, the redraw and the next 3 ms slice: 8–12 ms of CPU, which a busy machine stretched
--- past 16 ms. After an append of at least H.DEFER_BYTES, the transcript's parse is held out of the
--- redraw that shows the new text (it highlights from the trees it has, as during any background parse)
--- and runs from the next turn on in H.SLICE_NS slices; when it ends the chat is redrawn with the new
--- trees, in a turn of its own. The highlighting it ends with is the same: the same parse of the same
--- ranges (the windows' visible rows, as the highlighter's own), only cut into shorter pieces.
--- Smaller appends keep Neovim's own path (their parse usually ends inside the first slice, in one redraw),
--- and so do big appends outside a reply (caboose.chat.transcript calls this for a reply's frames only):
--- when a whole ~400 KB transcript appended at once was parsed from scratch in these slices, in 7 of 136
--- bench runs its tree outlived the quiet collection after the boundary move (cause not found) and the
--- collector freed it (20–40 ms, one C call) in the middle of the next reply; with Neovim's own parse of
--- such an append, never (0 of 76 runs), nor with this path for the reply's frames only (0 of 60).
H.DEFER_BYTES = 4096
H.SLICE_NS = 1500000

--- The rows of `buf` its windows in the current tab page show (as the highlighter's own parse takes them).
H.visible_ranges = function(buf)
  local ranges = {}
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      ranges[#ranges + 1] = { vim.fn.line('w0', win) - 1, vim.fn.line('w$', win) + 1 }
    end
  end
  table.sort(ranges, function(a, b)
    return a[1] < b[1]
  end)
  return ranges
end

--- Called after a reply's frame of `bytes` was appended to the transcript `buf` (Neovim 0.12: its highlighter's `parsing`
--- flag is a boolean and the parser has its coroutine-driven `_parse`). Returns whether the parse was held.
M.parse_later = function(buf, bytes)
  if bytes < H.DEFER_BYTES then
    return false
  end
  local st = H.splits[buf]
  local hl = vim.treesitter.highlighter.active[buf]
  local parser = hl and hl.tree
  if not st or not parser or parser ~= st.parser or type(hl.parsing) ~= 'boolean' or type(parser._parse) ~= 'function' then
    return false
  end
  if hl.parsing then
    -- A parse is under way (this one's, the highlighter's or a boundary move's): it starts again with the
    -- change (the buffer's changedtick) and redraws the chat when it ends.
    return true
  end
  hl.parsing = true
  H.parse_sliced(buf, hl, function()
    return H.visible_ranges(buf)
  end, function()
    hl.parsing = false
    -- In a turn of its own: the redraw with the new trees is as long as the one after the append.
    H.next_turn(function()
      if vim.api.nvim_buf_is_valid(buf) then
        vim.api.nvim__redraw({ buf = buf, valid = false, flush = false })
      end
    end)
  end)
  return true
end

--- Parses the highlighter `hl`'s tree for the rows `ranges()` returns (a list of ranges; empty: the chat
--- is not shown, and nothing is parsed) in H.SLICE_NS slices, each step after the main loop has polled
--- once more (H.after_poll), started over when the buffer changes (as Neovim's own background parse is).
--- `hl.parsing` is set by the caller and stays set meanwhile, so the highlighter starts no parse of its
--- own. `on_done()` runs when the parse has ended, with `hl` still the buffer's highlighter; when the
--- chat is not shown or the parse fails, `hl.parsing` is cleared (the highlighter's own parse takes over
--- at the next redraw) and `on_done` does not run.
H.parse_sliced = function(buf, hl, ranges, on_done)
  local parser = hl.tree
  local ct, parse, range ---@type integer?, function?, table?
  local thread_state = {}
  local function step()
    if vim.treesitter.highlighter.active[buf] ~= hl or not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    local tick = vim.api.nvim_buf_get_changedtick(buf)
    if tick ~= ct or not parse then
      -- Changed meanwhile (or the first step): the parse starts over, as Neovim's own does.
      range = ranges()
      if #range == 0 then
        hl.parsing = false
        return
      end
      ct = tick
      parse = coroutine.wrap(parser._parse)
    end
    thread_state.timeout = H.SLICE_NS
    local ok, _, finished = pcall(parse, parser, range, thread_state)
    if not ok then
      hl.parsing = false
      vim.api.nvim__redraw({ buf = buf, valid = false, flush = false })
    elseif finished then
      on_done()
    else
      H.after_poll(step)
    end
  end
  H.after_poll(step)
end

--- Runs `fn` after the main loop has polled for input once more (a 0 ms timer): what arrived meanwhile (a
--- key, another client's request, a due timer) is queued beside it, not behind a chain of steps. Steps
--- chained with vim.schedule ran two or three to a turn (each queues the next before the loop polls).
H.after_poll = function(fn)
  vim.defer_fn(fn, 0)
end

-- Freeing a long transcript's trees -------------------------------------------------------------------

--- A syntax tree is freed when Lua's garbage collector finalizes it, and freeing one is a single C call
--- (tree-sitter's ts_tree_delete, ≈ 20–100 ms for the trees of a ~400 KB transcript, which share few nodes
--- with the trees that replaced them). Trees that size become garbage when the boundary moves (the
--- settled part is re-parsed) and when a chat is deleted (:CabooseNew), and the collector, driven by
--- allocation, got to them during the next reply's stream: the bench's longest main-loop turns during a
--- burst were such finalizers. So those trees are kept (referenced) until the chat has been quiet for
--- H.SETTLE_MS, then let go and a full collection runs: the same work, at a moment nothing streams.
H.gc = { timer = nil, last = 0, kept = {} }

--- Keeps `v` (trees, a parser) alive until the next collection when the chat is quiet.
H.keep = function(v)
  table.insert(H.gc.kept, v)
end

--- Watches a transcript's parser: its changes (the chat is not quiet) and its end (its trees are garbage).
--- The trees are taken when the buffer unloads: by the parser's own `on_detach` it has dropped them.
H.gc_watch = function(buf, parser)
  parser:register_cbs({
    on_bytes = function()
      H.gc.last = vim.uv.now()
    end,
  })
  vim.api.nvim_create_autocmd('BufUnload', {
    buffer = buf,
    once = true,
    callback = function()
      local trees = {}
      parser:for_each_tree(function(tree)
        trees[#trees + 1] = tree
      end)
      H.keep(trees)
      M.collect_when_quiet()
    end,
  })
end

--- Runs a full garbage collection (in a later turn of the main loop) once no transcript has changed for
--- H.SETTLE_MS and no reply streams or is about to (H.busy): at once when that is already so (a boundary
--- move's parse ends after such a spell).
M.collect_when_quiet = function()
  local g = H.gc
  g.timer = g.timer or assert(vim.uv.new_timer())
  local function try()
    vim.uv.update_time()
    local wait = g.last + H.SETTLE_MS - vim.uv.now()
    if wait <= 0 and H.busy() then
      wait = H.SETTLE_MS -- not while a reply streams or is about to (H.busy)
    end
    if wait > 0 then
      g.timer:start(wait, 0, vim.schedule_wrap(try))
      return
    end
    g.kept = {}
    collectgarbage('collect')
  end
  g.timer:stop()
  g.timer:start(1, 0, vim.schedule_wrap(try))
end

--- Compiles the parsers and queries ahead, one step a turn (as M.set does), without any buffer: called while
--- a :Caboose command is being typed (caboose.prestart), so the chat that opens after its <CR> finds them
--- in Neovim's cache and the turns between <CR> and the first token hold no query compile (the `markdown`
--- highlights query alone is 5–9 ms of CPU in one C call). The chat's own loading (M.set) is unchanged.
M.preload = function()
  if H.md_ready or H.md_loading or H.preloading then
    return
  end
  H.preloading = true
  local i = 0
  local function step()
    i = i + 1
    if H.md_steps[i] and not H.md_ready then
      pcall(H.md_steps[i])
      return H.next_turn(step)
    end
  end
  H.next_turn(step)
end

M.set = function(buf)
  if H.md_ready then
    return H.md_apply(buf)
  end
  table.insert(H.md_waiting, buf)
  if H.md_loading then
    return
  end
  H.md_loading = true
  local i = 0
  local function step()
    i = i + 1
    if H.md_steps[i] then
      pcall(H.md_steps[i])
      return H.next_turn(step)
    end
    -- The parsers in this turn; then each buffer's filetype (the markdown ftplugin, the highlighter:
    -- 1.5–2 ms a buffer) in a turn of its own.
    for _, b in ipairs(H.md_waiting) do
      H.md_parser(b)
    end
    local function apply()
      local b = table.remove(H.md_waiting, 1)
      if not b then
        H.md_ready = true
        return
      end
      H.md_apply(b)
      H.next_turn(apply)
    end
    H.next_turn(apply)
  end
  H.next_turn(step)
end

return M
