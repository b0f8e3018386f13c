--- The chat: a transcript buffer (caboose://chat/<n>, markdown, read-only) and below it a message area
--- (caboose://input/<n>, an ordinary buffer: multi-line, undoable, your own mappings). It only displays
--- what the host sends; streamed text arrives in frames and is appended once per frame.
local M = {}
local H = {}

H.buf = nil ---@type integer|nil transcript
H.input = nil ---@type integer|nil message area
H.count = 0
H.ns = vim.api.nvim_create_namespace('caboose_chat')
H.ns_queue = vim.api.nvim_create_namespace('caboose_chat_queue')
H.ns_hint = vim.api.nvim_create_namespace('caboose_chat_hint')
H.ns_rules = vim.api.nvim_create_namespace('caboose_chat_rules')

H.DETAIL = '  ┆ ' -- prefix of a tool call's detail lines (folded)
H.ICONS = { running = '◌', ok = '✓', error = '✗', rejected = '⊘', cancelled = '⊘' }
H.ICON_HL = {
  running = 'CabooseToolRunning',
  ok = 'CabooseToolOk',
  error = 'CabooseToolError',
  rejected = 'CabooseToolRejected',
  cancelled = 'CabooseToolRejected',
}

H.valid = function(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

H.cfg = function()
  return require('caboose').config()
end

-- Buffers ------------------------------------------------------------------------------------------

H.scratch = function(name, modifiable)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = modifiable
  return buf
end

--- Returns the transcript buffer, creating it if needed.
function M.buf()
  if H.valid(H.buf) then
    return H.buf
  end
  H.count = H.count + 1
  local buf = H.scratch('caboose://chat/' .. H.count, false)
  vim.b[buf].caboose_chat = true
  -- Only the agent writes here: an undo history would copy every line written (a reopened session's too).
  vim.bo[buf].undolevels = -1
  H.set_markdown(buf)
  H.buf = buf
  H.clear_state()
  H.set_transcript_keymaps(buf)
  H.render_hint()
  if not H.resize_autocmd then
    H.resize_autocmd = vim.api.nvim_create_autocmd('VimResized', {
      group = vim.api.nvim_create_augroup('CabooseChat', { clear = true }),
      callback = function()
        M.resize()
      end,
    })
  end
  require('caboose.context').track()
  return buf
end

--- Returns the message-area buffer, creating it if needed.
function M.input_buf()
  if H.valid(H.input) then
    return H.input
  end
  local buf = H.scratch('caboose://input/' .. H.count, true)
  vim.b[buf].caboose_input = true
  H.set_markdown(buf)
  vim.bo[buf].omnifunc = H.OMNIFUNC
  H.input = buf
  H.set_input_keymaps(buf)
  vim.api.nvim_create_autocmd('TextChangedI', {
    buffer = buf,
    callback = function()
      -- `/command` and `#variable` (caboose.insertables), else `@path`.
      if not require('caboose.insertables.complete').popup() then
        H.complete_path()
      end
    end,
  })
  require('caboose.insertables.sources').attach(buf)
  vim.api.nvim_create_autocmd('InsertEnter', {
    buffer = buf,
    callback = function()
      require('caboose').prestart()
    end,
  })
  return buf
end

--- Typing `@` starts path completion (unless a completion menu is already open).
H.complete_path = function()
  if vim.fn.pumvisible() == 1 then
    return
  end
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local at = before:find('@[^%s@]*$')
  if not at or (at > 1 and not before:sub(at - 1, at - 1):match('%s')) then
    return
  end
  local items = require('caboose.context').omnifunc(0, before:sub(at + 1))
  if #items == 0 then
    return
  end
  require('caboose.insertables.complete').offer(at + 1, items)
end

--- Markdown with treesitter highlighting (fenced code through its injections). The parser and queries
--- load once, one piece per event-loop tick (together they would freeze the editor for ~25 ms); the
--- buffer gets its filetype when they are ready.
--- The message area completes @paths (the markdown ftplugin would set an HTML one).
H.OMNIFUNC = "v:lua.require'caboose.insertables.complete'.omnifunc"

H.md_ready = false
H.md_waiting = {} ---@type integer[]
H.md_steps = {
  function()
    vim.treesitter.language.add('markdown')
    vim.treesitter.language.add('markdown_inline')
  end,
  function()
    vim.treesitter.query.get('markdown', 'highlights')
  end,
  function()
    vim.treesitter.query.get('markdown_inline', 'highlights')
  end,
  function()
    vim.treesitter.query.get('markdown', 'injections')
    vim.treesitter.query.get('markdown_inline', 'injections')
  end,
  function()
    require('vim.treesitter.highlighter')
  end,
}

--- Runs fn in a later iteration of the main loop (a libuv timer): typed keys, RPC requests and timers
--- that arrived meanwhile are served between two pieces of work.
H.next_turn = function(fn)
  vim.defer_fn(fn, 0)
end

--- The chat's markdown injections: fenced code and inline markup. The stock query also injects HTML as
--- one combined region of the whole buffer, and front matter: each appended frame then re-parsed all of a
--- long chat (≈ 70 ms a frame in a ~100k-token chat on Neovim 0.12; ≈ 13 ms with these two).
H.MD_INJECTIONS = table.concat({
  '(fenced_code_block (info_string (language) @injection.language) (code_fence_content) @injection.content)',
  '([(inline) (pipe_table_cell)] @injection.content (#set! injection.language "markdown_inline"))',
}, '\n')

--- The buffer's markdown parser, with the chat's injections.
H.md_parser = function(buf)
  if vim.api.nvim_buf_is_valid(buf) then
    -- Made before the filetype is set: the markdown ftplugin's vim.treesitter.start() then finds it.
    local ok, parser = pcall(vim.treesitter.get_parser, buf, 'markdown', { injections = { markdown = H.MD_INJECTIONS } })
    if ok and parser and vim.b[buf].caboose_chat then
      H.split_watch(buf, parser)
    end
  end
end

H.md_apply = function(buf)
  if vim.api.nvim_buf_is_valid(buf) then
    H.md_parser(buf)
    vim.bo[buf].filetype = 'markdown'
    if vim.b[buf].caboose_input then
      -- The markdown ftplugin sets its own (HTML tags); ours completes @paths.
      vim.bo[buf].omnifunc = H.OMNIFUNC
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
        H.split_reset(buf, parser)
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
H.split_reset = function(buf, parser)
  local st = H.splits[buf]
  if st and st.active then
    st.active = false
    parser:set_included_regions({ {} })
    parser._regions = nil
  end
end

--- Moves the boundary to the last top-level section's heading (if it moved forward).
H.settle = function(buf)
  local st = H.splits[buf]
  local hl = vim.treesitter.highlighter.active[buf]
  local parser = hl and hl.tree
  -- Only the parser being watched (treesitter restarted on the buffer would bring another one).
  if not st or not parser or parser ~= st.parser or not H.valid(buf) then
    return
  end
  if not parser:is_valid(true) then
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
  parser:set_included_regions({ { { 0, 0, 0, row, 0, b } }, { { row, 0, b, erow, ecol, eb } } })
  st.active = true
  -- Both trees now, in the background: a region without a tree would be dropped by the next edit.
  parser:parse({ { 0, 0, 1, 0 }, { erow - 1, 0, erow, 0 } }, function() end)
end

H.set_markdown = function(buf)
  if H.md_ready then
    return H.md_apply(buf)
  end
  table.insert(H.md_waiting, buf)
  if #H.md_waiting > 1 then
    return
  end
  local i = 0
  local function step()
    i = i + 1
    if H.md_steps[i] then
      pcall(H.md_steps[i])
      return H.next_turn(step)
    end
    -- The parsers in this turn; the filetype (the markdown ftplugin, the highlighter) in the next.
    for _, b in ipairs(H.md_waiting) do
      H.md_parser(b)
    end
    H.next_turn(function()
      H.md_ready = true
      for _, b in ipairs(H.md_waiting) do
        H.md_apply(b)
      end
      H.md_waiting = {}
    end)
  end
  H.next_turn(step)
end

-- Keys ---------------------------------------------------------------------------------------------

H.keys = {
  { 'n', '<CR>', 'message area: send' },
  { 'i', '<C-s>', 'message area: send (also normal mode)' },
  { 'n', 'i a o <CR>', 'transcript: go to the message area' },
  { 'n', '<C-c>', 'stop the running turn (:CabooseStop)' },
  { 'n', 'gy', 'yank the code block under the cursor' },
  { 'n', 'za zo zc', 'open/close a tool call\'s details (on its line)' },
  { 'n', 'ga', 'go to the pending approval or question (:CabooseApproval)' },
  { 'n', 'gL', 'choose the model of the next request (:CabooseModel)' },
  { 'n', 'q', 'transcript: close the chat' },
  { 'n', 'g?', 'this list (? stays backward search)' },
  { 'i', '@', 'complete a file path to attach' },
  { 'i', '#buffer', 'attach the buffer you came from' },
  { 'i', '/ #', 'slash commands, variables (/help lists them)' },
}

H.map = function(buf, modes, lhs, fn, desc, expr)
  vim.keymap.set(modes, lhs, fn, { buffer = buf, desc = 'Caboose: ' .. desc, nowait = true, expr = expr })
end

--- za, zo, zc on a tool call's line act on its details (the fold on the lines below it).
H.fold_key = function(key)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local th = H.thinking
  if th and not th.shown and key ~= 'zc' and row - 1 == th.row and vim.api.nvim_get_current_buf() == H.buf then
    return "<Cmd>lua require('caboose.ui.chat')._show_thinking()<CR>"
  end
  local lines = vim.api.nvim_buf_get_lines(0, row - 1, row + 1, false)
  local n = #H.DETAIL
  if not (lines[2] and lines[1]:sub(1, n) ~= H.DETAIL and lines[2]:sub(1, n) == H.DETAIL) then
    return key
  end
  local open = key == 'zo' or (key == 'za' and vim.fn.foldclosed(row + 1) ~= -1)
  return string.format('<Cmd>%dfold%s<CR>', row + 1, open and 'open' or 'close')
end

H.set_transcript_keymaps = function(buf)
  H.map(buf, 'n', '<C-c>', function()
    require('caboose').stop()
  end, 'stop')
  H.map(buf, 'n', 'q', M.close, 'close chat')
  for _, lhs in ipairs({ 'i', 'a', 'o' }) do
    H.map(buf, 'n', lhs, function()
      M.focus_input(true)
    end, 'write a message')
  end
  H.map(buf, 'n', '<CR>', function()
    M.focus_input(false)
  end, 'go to the message area')
  H.map(buf, 'n', 'gy', M.yank_code_block, 'yank the code block under the cursor')
  for _, key in ipairs({ 'za', 'zo', 'zc' }) do
    H.map(buf, 'n', key, function()
      return H.fold_key(key)
    end, 'open/close a tool call\'s details', true)
  end
  H.map(buf, 'n', 'ga', function()
    if not require('caboose.ui.approval').focus() and not require('caboose.ui.ask').answer() then
      vim.notify('(caboose) no approval is pending', vim.log.levels.INFO)
    end
  end, 'go to the pending approval (or the agent\'s question)')
  H.map(buf, 'n', 'gL', function()
    require('caboose.model').pick()
  end, 'choose the model')
  H.map(buf, 'n', 'g?', M.show_keys, 'list the chat keys')
  require('caboose.conversation').map_transcript(buf)
end

H.set_input_keymaps = function(buf)
  H.map(buf, 'n', '<CR>', M.submit, 'send the message')
  H.map(buf, { 'n', 'i' }, '<C-s>', M.submit, 'send the message')
  H.map(buf, 'n', '<C-c>', function()
    require('caboose').stop()
  end, 'stop')
  H.map(buf, 'n', 'g?', M.show_keys, 'list the chat keys')
end

--- A float listing the chat's keys (q, <Esc> or g? closes it). `opts` (the review's keys): { title, keys }.
function M.show_keys(opts)
  opts = type(opts) == 'table' and opts or {}
  local lines = {}
  local keys = opts.keys or vim.list_extend(vim.list_slice(H.keys, 1, #H.keys - 4), require('caboose.conversation').help_keys())
  if not opts.keys then
    vim.list_extend(keys, vim.list_slice(H.keys, #H.keys - 3))
  end
  for _, k in ipairs(keys) do
    table.insert(lines, string.format(' %-12s %s', k[2], k[3]))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'caboose_keys'
  local width = math.min(vim.o.columns - 4, 60)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = 'editor',
    width = width,
    height = math.min(#lines, vim.o.lines - 4),
    row = math.max(0, math.floor((vim.o.lines - #lines) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = 'rounded',
    title = opts.title or ' Caboose chat keys ',
    title_pos = 'center',
  })
  require('caboose.ui.windows').fix_buffer(win)
  for _, lhs in ipairs({ 'q', '<Esc>', 'g?' }) do
    vim.keymap.set('n', lhs, function()
      pcall(vim.api.nvim_win_close, win, true)
    end, { buffer = buf, nowait = true })
  end
  return win
end

--- Yanks the fenced code block under the cursor (without its fences) into the register given (default ").
function M.yank_code_block()
  local buf = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local open, fence
  for i, l in ipairs(lines) do
    local f = l:match('^%s*(```+)')
    if f and not open then
      open, fence = i, f
    elseif f and open and #f >= #fence and l:match('^%s*```+%s*$') then
      if row >= open and row <= i then
        local code = vim.list_slice(lines, open + 1, i - 1)
        vim.fn.setreg(vim.v.register, code, 'l')
        vim.notify(string.format('(caboose) yanked %d line%s of code', #code, #code == 1 and '' or 's'))
        return code
      end
      open = nil
    end
  end
  vim.notify('(caboose) the cursor is not in a code block', vim.log.levels.WARN)
  return nil
end

-- Windows ------------------------------------------------------------------------------------------

--- Windows (in any tab) showing the transcript.
H.wins = function()
  if not H.valid(H.buf) then
    return {}
  end
  return vim.fn.win_findbuf(H.buf)
end

H.tab_win = function(buf)
  if not H.valid(buf) then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
end

H.vertical = function(pos)
  return pos == 'right' or pos == 'left'
end

--- The chat's width (left/right) or height (top/bottom): a share of the screen within min and max.
function M.size(chat_cfg)
  chat_cfg = chat_cfg or H.cfg().chat
  local vertical = H.vertical(chat_cfg.position)
  local total = vertical and vim.o.columns or (vim.o.lines - vim.o.cmdheight)
  local size = chat_cfg.size
  if size <= 1 then
    size = math.floor(total * size)
  end
  local min = chat_cfg.min_size or (vertical and 40 or 8)
  local max = chat_cfg.max_size or (vertical and 120 or 30)
  size = math.max(min, math.min(max, size))
  return math.max(1, math.min(size, total - (vertical and 20 or 5)))
end

H.win_options = function(win, transcript)
  local wo = vim.wo[win]
  wo.wrap = true
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = 'no'
  wo.spell = false
  wo.fillchars = 'eob: ,fold: '
  if transcript then
    -- Manual folds made as details are written: a fold expression, even a plain Vim one, is evaluated
    -- on each of a reopened session's 50,000 lines and took longer than the rest of the reopening.
    wo.foldmethod = 'manual'
    wo.foldtext = "v:lua.require'caboose.ui.chat'.foldtext()"
    wo.foldlevel = 0
    wo.foldenable = true
    wo.conceallevel = 0
  end
end

H.floating = function(win)
  return vim.api.nvim_win_get_config(win).relative ~= ''
end

--- 'transcript', 'input' or nil: what a window shows of the chat.
H.role = function(win)
  local b = vim.api.nvim_win_get_buf(win)
  if b == H.buf then
    return 'transcript'
  elseif b == H.input then
    return 'input'
  end
end

--- The split windows of `tab`: { transcript = {...}, input = {...}, other = {...} } (floats left out).
H.tab_layout = function(tab)
  local out = { transcript = {}, input = {}, other = {} }
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    if not H.floating(win) then
      table.insert(out[H.role(win) or 'other'], win)
    end
  end
  return out
end

--- Whether `input` sits right under `win` in one column (the chat's own layout).
H.stacked = function(win, input)
  local function walk(node)
    if node[1] == 'leaf' then
      return false
    end
    for k, child in ipairs(node[2]) do
      local nxt = node[2][k + 1]
      if node[1] == 'col' and child[1] == 'leaf' and child[2] == win and nxt and nxt[1] == 'leaf' and nxt[2] == input then
        return true
      end
      if walk(child) then
        return true
      end
    end
    return false
  end
  return walk(vim.fn.winlayout())
end

H.chat_options = function(win, role)
  vim.w[win].caboose_chat = role
  require('caboose.ui.windows').fix_buffer(win)
end

--- A window that showed the chat and now shows something else (`:e!` there) loses the chat's options.
H.forget_window = function(win)
  vim.w[win].caboose_chat = nil
  require('caboose.ui.windows').fix_buffer(win, false)
  vim.wo[win].winbar = ''
  vim.wo[win].winfixwidth = false
  vim.wo[win].winfixheight = false
end

--- Gives the message areas their configured height again (and the transcript its width), e.g. after a
--- split above them closed and left its lines to them.
H.restore_sizes = function(tab)
  local cfg = H.cfg().chat
  local l = H.tab_layout(tab)
  for _, win in ipairs(l.input) do
    if vim.api.nvim_win_get_height(win) ~= cfg.input_height then
      pcall(vim.api.nvim_win_set_height, win, cfg.input_height)
    end
  end
  if H.vertical(cfg.position) then
    for _, win in ipairs(l.transcript) do
      pcall(vim.api.nvim_win_set_width, win, M.size(cfg))
    end
  end
end

--- Opens the chat in a split in the current tab (reuses one already there, rebuilding a broken layout).
--- Keeps focus where it was.
function M.open(cfg)
  local buf = M.buf()
  local input = M.input_buf()
  cfg = cfg or H.cfg()
  H.layout_autocmds()
  local tab = vim.api.nvim_get_current_tabpage()
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    if vim.w[w].caboose_chat and not H.role(w) then
      H.forget_window(w)
    end
  end
  local win = H.tab_win(buf)
  local prev = vim.api.nvim_get_current_win()
  if not win then
    local pos = cfg.chat.position
    local size = M.size(cfg.chat)
    local cmd = ({
      right = 'botright vertical ' .. size .. 'split',
      left = 'topleft vertical ' .. size .. 'split',
      bottom = 'botright ' .. size .. 'split',
      top = 'topleft ' .. size .. 'split',
    })[pos]
    vim.cmd(cmd)
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    H.win_options(win, true)
    H.chat_options(win, 'transcript')
    H.refold(buf, win)
    vim.wo[win].winfixwidth = H.vertical(pos)
    vim.wo[win].winfixheight = not H.vertical(pos)
    H.apply_status(win)
    H.scroll_to_end(win)
    if H.hint then
      H.render_hint() -- for this window's width
    end
  end
  local iwin = H.tab_win(input)
  if iwin and not H.stacked(win, iwin) then
    -- The message area belongs under the transcript (it was left elsewhere, e.g. after :e! there).
    if pcall(vim.api.nvim_win_close, iwin, false) then
      iwin = nil
    end
  end
  if not iwin then
    vim.api.nvim_set_current_win(win)
    vim.cmd('belowright ' .. cfg.chat.input_height .. 'split')
    iwin = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(iwin, input)
    H.win_options(iwin, false)
    H.chat_options(iwin, 'input')
    vim.wo[iwin].winfixheight = true
    H.input_bar(iwin)
  end
  H.restore_sizes(tab)
  if vim.api.nvim_win_is_valid(prev) then
    vim.api.nvim_set_current_win(prev)
  end
  return win
end

--- The message area's window in the current tab, if shown.
function M.input_win()
  return H.tab_win(H.input)
end

--- Puts the cursor in the message area (opening the chat if needed); `insert` starts Insert mode.
function M.focus_input(insert)
  M.open()
  local iwin = H.tab_win(H.input)
  if not iwin then
    return nil
  end
  vim.api.nvim_set_current_win(iwin)
  if insert then
    vim.cmd('startinsert!')
  end
  return iwin
end

function M.close()
  for _, b in ipairs({ H.buf, H.input }) do
    if H.valid(b) then
      for _, win in ipairs(vim.fn.win_findbuf(b)) do
        if #vim.api.nvim_list_wins() > 1 then
          pcall(vim.api.nvim_win_close, win, false)
        end
      end
    end
  end
end

-- The chat lives and dies with the windows beside it ---------------------------------------------------

--- An empty window beside the chat in the current tab, where the user's windows go.
H.empty_window = function(tab)
  local l = H.tab_layout(tab)
  local anchor = l.transcript[1] or l.input[1]
  vim.api.nvim_win_call(anchor, function()
    vim.cmd(({ right = 'topleft vnew', left = 'botright vnew', bottom = 'topleft new', top = 'botright new' })[H.cfg().chat.position])
  end)
end

--- After windows closed: a message area without its transcript closes; in a tab where the last window
--- of the user's was closed from inside it (`emptied`), the chat closes too (in the last tab, where
--- that would mean quitting, which only :quit decides, an empty window takes the user's place); the
--- message areas get their height back when one of our splits closed (`sizes`).
H.tidy = function(emptied, sizes)
  local last_tab = #vim.api.nvim_list_tabpages() == 1
  for _, tab in ipairs(vim.api.nvim_list_tabpages()) do
    local l = H.tab_layout(tab)
    local lone_input = #l.input > 0 and #l.transcript == 0
    if #l.other == 0 and (emptied[tab] or lone_input) and last_tab then
      H.empty_window(tab)
      l = H.tab_layout(tab)
    end
    if emptied[tab] and #l.other == 0 then
      for _, win in ipairs(vim.list_extend(vim.list_extend({}, l.transcript), l.input)) do
        pcall(vim.api.nvim_win_close, win, false)
      end
    elseif lone_input then
      for _, win in ipairs(l.input) do
        pcall(vim.api.nvim_win_close, win, false)
      end
    end
    if vim.api.nvim_tabpage_is_valid(tab) and (sizes or emptied[tab]) then
      H.restore_sizes(tab)
    end
  end
end

--- :quit (:wq, :x, :qa) in the last window of a tab besides the chat: the chat windows close first, so
--- the tab closes, or Neovim quits, as if the chat were not there. Neovim's own checks for unsaved
--- buffers (E37, E162) still apply; when they refuse, the chat comes back.
H.quit_pre = function()
  local cur = vim.api.nvim_get_current_win()
  -- :q in one of our own windows (a review, the audit list) closes that window, never the editor: a
  -- review closed that way stays pending.
  if H.floating(cur) or vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(cur)):match('^caboose://') then
    return
  end
  local tab = vim.api.nvim_get_current_tabpage()
  local l = H.tab_layout(tab)
  local chat = {}
  for _, win in ipairs(vim.list_extend(vim.list_extend({}, l.transcript), l.input)) do
    if win ~= cur then
      table.insert(chat, win)
    end
  end
  if #chat == 0 or #l.other > (H.role(cur) and 0 or 1) then
    return
  end
  for _, win in ipairs(chat) do
    pcall(vim.api.nvim_win_close, win, false)
  end
  vim.schedule(function()
    if not vim.api.nvim_win_is_valid(cur) then
      return
    elseif vim.api.nvim_get_current_tabpage() == tab then
      M.open()
    else -- typed ahead: another tab is current by now
      vim.api.nvim_win_call(cur, function()
        M.open()
      end)
      pcall(vim.api.nvim_tabpage_set_win, tab, cur)
    end
  end)
end

H.on_win_closed = function(ev)
  local win = tonumber(ev.match)
  if not (win and vim.api.nvim_win_is_valid(win)) or H.floating(win) then
    return
  end
  local tab = vim.api.nvim_win_get_tabpage(win)
  local emptied = {}
  if not H.role(win) and win == vim.api.nvim_get_current_win() then
    local l = H.tab_layout(tab)
    if #l.other == 1 and #l.transcript + #l.input > 0 then
      emptied[tab] = true
    end
  end
  local sizes = vim.api.nvim_buf_get_name(ev.buf):match('^caboose://') ~= nil
  vim.schedule(function()
    H.tidy(emptied, sizes)
  end)
end

H.on_win_resized = function()
  for _, win in ipairs(vim.v.event.windows or {}) do
    if vim.api.nvim_win_is_valid(win) and H.role(win) == 'transcript' then
      H.apply_status(win)
      if H.hint then
        H.render_hint()
      end
    elseif vim.api.nvim_win_is_valid(win) and H.role(win) == 'input' then
      H.input_bar(win)
    end
  end
end

-- The message area's winbar: the longest form that fits (Neovim would cut a longer one at its start).
H.INPUT_KEYS = { '<CR>/<C-s> send · @file #buffer · g? keys', '<CR> send · @file · g? keys', '<CR> send · g? keys', 'g? keys' }

H.input_bar = function(win)
  local width = vim.api.nvim_win_get_width(win)
  local keys = H.INPUT_KEYS[#H.INPUT_KEYS]
  for _, k in ipairs(H.INPUT_KEYS) do
    if vim.api.nvim_strwidth('Message ' .. k) <= width then
      keys = k
      break
    end
  end
  vim.wo[win].winbar = '%#CabooseInputTitle#Message%* %#CabooseNotice#' .. keys .. '%*'
end

H.layout_autocmds = function()
  if H.layout_group then
    return
  end
  H.layout_group = vim.api.nvim_create_augroup('CabooseChatLayout', { clear = true })
  vim.api.nvim_create_autocmd('QuitPre', { group = H.layout_group, callback = H.quit_pre })
  vim.api.nvim_create_autocmd('WinClosed', { group = H.layout_group, callback = H.on_win_closed })
  vim.api.nvim_create_autocmd('WinResized', { group = H.layout_group, callback = H.on_win_resized })
end

--- Forget the current buffers so the next message starts a fresh chat (new session). The message area's
--- unsent text moves to the new chat.
function M.reset()
  local draft = H.valid(H.input) and vim.api.nvim_buf_get_lines(H.input, 0, -1, false) or nil
  M.close()
  for _, b in ipairs({ H.buf, H.input }) do
    if H.valid(b) then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
  H.buf, H.input = nil, nil
  H.status.usage, H.status.retry, H.status.title = nil, nil, nil
  if draft and (#draft > 1 or draft[1] ~= '') then
    vim.api.nvim_buf_set_lines(M.input_buf(), 0, -1, false, draft)
  end
end

--- Re-apply the share-of-screen size after the terminal is resized.
function M.resize()
  local cfg = H.cfg()
  for _, win in ipairs(H.wins()) do
    if vim.api.nvim_win_get_tabpage(win) == vim.api.nvim_get_current_tabpage() then
      if H.vertical(cfg.chat.position) then
        pcall(vim.api.nvim_win_set_width, win, M.size(cfg.chat))
      end
      H.apply_status(win)
    end
  end
end

-- Folds for tool details -----------------------------------------------------------------------------

function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  if first:sub(1, #H.THINKING) == H.THINKING then
    return first
  end
  local n = vim.v.foldend - vim.v.foldstart + 1
  return string.format('%s%d line%s of details (za)', H.DETAIL, n, n == 1 and '' or 's')
end

-- Status (winbar) ----------------------------------------------------------------------------------

H.status = { state = 'idle', mode = nil, model = nil, usage = nil, retry = nil, grants = nil, title = nil }

H.tokens = function(n)
  n = tonumber(n) or 0
  if n >= 1000 then
    return string.format('%.1fk', n / 1000)
  end
  return tostring(n)
end

H.esc = function(s)
  return (tostring(s):gsub('%%', '%%%%'))
end

--- The transcript window's winbar: mode, state, queued messages, model, standing grants, token usage,
--- title. When it does not fit in `width` columns it gives way in this order: the title is cut (down to a
--- few words' width), the usage goes, the grants shrink to a count, the title goes; then the queue count
--- and the state take their short forms, the model is cut, the grants go, the model goes. The mode and the
--- state always show.
H.STATE_SHORT = { pending_approval = 'approval', executing_tools = 'tools' }

--- `s` cut to `w` display columns (its end replaced by …).
H.cut_width = function(s, w)
  if vim.api.nvim_strwidth(s) <= w then
    return s
  end
  local n = vim.fn.strchars(s)
  while n > 0 and vim.api.nvim_strwidth(vim.fn.strcharpart(s, 0, n)) > w - 1 do
    n = n - 1
  end
  return vim.fn.strcharpart(s, 0, n) .. '…'
end

---@param width integer|nil
function M.status_line(width)
  local s = H.status
  width = width or math.huge
  local fields = {} ---@type table<string, { plain: string, hl: string|nil }>
  local order = { 'mode', 'state', 'queued', 'model', 'grants', 'usage', 'title' }
  fields.mode = { plain = ' ' .. (s.mode or '?') .. ' ', hl = 'CabooseMode' }
  local state_short
  if s.retry and s.state ~= 'idle' then
    fields.state = { plain = 'retrying (attempt ' .. tostring(s.retry.attempt) .. ')', hl = 'CabooseWarn' }
    state_short = 'retry ' .. tostring(s.retry.attempt)
  elseif s.state and s.state ~= 'idle' then
    fields.state = { plain = (s.state:gsub('_', ' ')) }
    state_short = H.STATE_SHORT[s.state]
  end
  local queued = H.queue and #H.queue or 0
  if queued > 0 then
    fields.queued = { plain = string.format('%d queued', queued), hl = 'CabooseQueued' }
  end
  if s.model then
    fields.model = { plain = tostring(s.model) }
  end
  if s.grants and #s.grants > 0 then
    -- What runs without asking: shrinks to a count before the model is cut.
    fields.grants = { plain = 'always: ' .. table.concat(s.grants, ', '), hl = 'CabooseWarn' }
  end
  local usage_short
  if s.usage then
    local u = s.usage
    local total = 'Σ' .. H.tokens((u.session_prompt or 0) + (u.session_completion or 0))
    if u.prompt then
      local short = string.format('↑%s ↓%s %s', H.tokens(u.prompt), H.tokens(u.completion), total)
      -- Cached prompt tokens and reasoning tokens, only when the server reported real figures (issue 21).
      local cached = tonumber(u.cached) or 0
      local reasoning = tonumber(u.reasoning) or 0
      local full = string.format(
        '↑%s%s ↓%s%s %s',
        H.tokens(u.prompt),
        cached > 0 and (' (' .. H.tokens(cached) .. ' cached)') or '',
        H.tokens(u.completion),
        reasoning > 0 and (' (' .. H.tokens(reasoning) .. ' thinking)') or '',
        total
      )
      fields.usage = { plain = full }
      usage_short = short
    else
      fields.usage = { plain = total } -- a reopened session knows only its total until its first request
    end
  end
  if s.title then
    fields.title = { plain = tostring(s.title), hl = 'CabooseTitle' }
  end
  local SEP = ' │ '
  local function used()
    local w, n = 1, 0
    for _, k in ipairs(order) do
      if fields[k] then
        w = w + vim.api.nvim_strwidth(fields[k].plain) + (n > 0 and vim.api.nvim_strwidth(SEP) or 0)
        n = n + 1
      end
    end
    return w
  end
  local function cut(k, min)
    local f = fields[k]
    if f then
      local room = vim.api.nvim_strwidth(f.plain) - (used() - width)
      if room >= min then
        f.plain = H.cut_width(f.plain, room)
      end
    end
  end
  local function short(k, text)
    if fields[k] and text and vim.api.nvim_strwidth(text) < vim.api.nvim_strwidth(fields[k].plain) then
      fields[k].plain = text
    end
  end
  local function drop(k)
    fields[k] = nil
  end
  -- Cutting steps stay in force: after each later step they are tried again (a dropped field leaves
  -- room to the title or the model).
  local steps = {
    { cut = 'title', min = 12 },
    function() short('usage', usage_short) end,
    function() drop('usage') end,
    function() short('grants', #(s.grants or {}) == 1 and 'always: 1 tool' or string.format('always: %d tools', #(s.grants or {}))) end,
    function() drop('title') end,
    function() short('queued', string.format('⧗%d', queued)) end,
    function() short('state', state_short) end,
    { cut = 'model', min = 6 },
    function() drop('grants') end,
    function() drop('model') end,
    function() drop('queued') end,
  }
  local cuts = {}
  for _, step in ipairs(steps) do
    for _, c in ipairs(cuts) do
      if used() > width then
        cut(c.cut, c.min)
      end
    end
    if used() <= width then
      break
    end
    if type(step) == 'table' then
      table.insert(cuts, step)
      cut(step.cut, step.min)
    else
      step()
    end
  end
  local parts = {}
  for _, k in ipairs(order) do
    local f = fields[k]
    if f then
      local text = H.esc(f.plain)
      table.insert(parts, f.hl and ('%#' .. f.hl .. '#' .. text .. '%*') or text)
    end
  end
  return ' ' .. table.concat(parts, SEP)
end

H.apply_status = function(win)
  pcall(function()
    vim.wo[win].winbar = M.status_line(vim.api.nvim_win_get_width(win))
  end)
end

--- Updates the status (state, mode and any of model, usage, retry, grants) and the chat winbars.
function M.set_status(state, mode, fields)
  H.status.state = state or H.status.state
  if H.status.state == 'idle' and H.streaming then
    H.release_held() -- the turn ended without the reply's end (the host exited, say)
  end
  H.status.mode = mode or H.status.mode
  for k, v in pairs(fields or {}) do
    H.status[k] = v or nil
  end
  for _, win in ipairs(H.wins()) do
    H.apply_status(win)
  end
end

--- The winbar text of the first chat window (for tests and statuslines).
function M.status_text()
  local win = H.wins()[1]
  return win and vim.wo[win].winbar or nil
end

-- Transcript -----------------------------------------------------------------------------------------

H.scroll_to_end = function(win)
  local last = vim.api.nvim_buf_line_count(H.buf)
  pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
end

--- Windows whose cursor is on the last line follow the text; the others stay where the user put them
--- (and a window in Visual mode never moves).
H.followers = function(buf)
  local last = vim.api.nvim_buf_line_count(buf)
  local cur = vim.api.nvim_get_current_win()
  local visual = vim.fn.mode():match('^[vV\22sS\19]') ~= nil
  local out = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= last and not (visual and win == cur) then
      table.insert(out, win)
    end
  end
  return out
end

H.edit = function(buf, fn)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err, 0)
  end
end

--- Appends raw text at the very end of the buffer (continuing the last line), in one change.
function M.append(text)
  if text == nil or text == '' then
    return
  end
  local buf = M.buf()
  local follow = H.followers(buf)
  local lines = vim.split(text, '\n', { plain = true })
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local last_line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ''
  H.edit(buf, function()
    if lines[1] == '' then
      -- New lines only: added below the last one, which stays untouched (a fold ending on it keeps it).
      vim.api.nvim_buf_set_lines(buf, last + 1, last + 1, false, vim.list_slice(lines, 2))
    else
      vim.api.nvim_buf_set_text(buf, last, #last_line, last, #last_line, lines)
    end
  end)
  local new_last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { new_last, 0 })
  end
  if H.hint then
    vim.api.nvim_buf_clear_namespace(buf, H.ns_hint, 0, -1)
    H.hint = false
  end
  if #H.queue > 0 then
    H.render_queue()
  end
end

H.is_empty = function(buf)
  return vim.api.nvim_buf_line_count(buf) == 1 and (vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] or '') == ''
end

--- Starts a new block on its own line(s), separated by a blank line from what came before.
function M.block(text)
  local buf = M.buf()
  local prefix = ''
  if not H.is_empty(buf) then
    local count = vim.api.nvim_buf_line_count(buf)
    local last_line = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ''
    prefix = last_line == '' and '\n' or '\n\n'
  end
  M.append(prefix .. text)
end

function M.lines()
  if not H.valid(H.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(H.buf, 0, -1, false)
end

-- Longest first: the hint is the first that fits the narrowest transcript window.
H.HINTS = {
  'Write below and press <CR> (or <C-s> in Insert mode) to send · g? lists the keys',
  'Write below, <CR> (<C-s> in Insert mode) sends · g? lists the keys',
  'Write below, <CR> sends · g? lists the keys',
  '<CR> sends · g? lists the keys',
  'g? lists the keys',
}

H.hint_text = function()
  local width
  for _, win in ipairs(H.wins()) do
    width = math.min(width or math.huge, vim.api.nvim_win_get_width(win))
  end
  width = width or (H.vertical(H.cfg().chat.position) and M.size() or vim.o.columns)
  for _, h in ipairs(H.HINTS) do
    if vim.api.nvim_strwidth(h) <= width then
      return h
    end
  end
  return H.HINTS[#H.HINTS]
end

--- The one-line hint an empty chat shows (under the rules lines when the chat starts with them).
H.render_hint = function()
  vim.api.nvim_buf_clear_namespace(H.buf, H.ns_hint, 0, -1)
  local hint = H.hint_text()
  if H.is_empty(H.buf) then
    vim.api.nvim_buf_set_extmark(H.buf, H.ns_hint, 0, 0, { virt_text = { { hint, 'CabooseNotice' } }, virt_text_pos = 'overlay' })
  else
    local last = vim.api.nvim_buf_line_count(H.buf) - 1
    vim.api.nvim_buf_set_extmark(H.buf, H.ns_hint, last, 0, { virt_lines = { { { '' } }, { { hint, 'CabooseNotice' } } } })
  end
  H.hint = true
end

-- Project rules: the lines naming the files a conversation follows (the chat's first lines). ----------

H.rules = nil ---@type { mark: integer, count: integer }|nil

--- Dims `count` lines from `row` and remembers where they are (a second reading replaces them).
H.mark_rules = function(buf, row, count)
  vim.api.nvim_buf_clear_namespace(buf, H.ns_rules, 0, -1)
  local last = vim.api.nvim_buf_get_lines(buf, row + count - 1, row + count, false)[1] or ''
  local mark = vim.api.nvim_buf_set_extmark(buf, H.ns_rules, row, 0, { end_row = row + count - 1, end_col = #last, hl_group = 'CabooseRules', priority = 200 })
  H.rules = { mark = mark, count = count }
end

--- Host event `rules`: shows which rules files the conversation follows, or replaces the lines shown
--- before (the files are read again when the first message is sent).
---@param lines string[]
function M.rules(lines)
  if not lines or #lines == 0 then
    return
  end
  local buf = M.buf()
  local row
  if H.rules then
    row = vim.api.nvim_buf_get_extmark_by_id(buf, H.ns_rules, H.rules.mark, {})[1]
  end
  if row then
    local count = H.rules.count
    H.edit(buf, function()
      vim.api.nvim_buf_set_lines(buf, row, row + count, false, lines)
    end)
  else
    local alone = H.is_empty(buf)
    M.block(table.concat(lines, '\n'))
    row = vim.api.nvim_buf_line_count(buf) - #lines
    if alone then
      H.render_hint()
    end
  end
  H.mark_rules(buf, row, #lines)
end

--- The rules lines the chat shows (none: {}).
function M.rules_lines()
  if not (H.valid(H.buf) and H.rules) then
    return {}
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(H.buf, H.ns_rules, H.rules.mark, {})[1]
  return row and vim.api.nvim_buf_get_lines(H.buf, row, row + H.rules.count, false) or {}
end

-- One "## Caboose" heading per reply, however many model steps (text, tool calls) it takes.
H.reply = { open = false, last = nil } ---@type { open: boolean, last: 'text'|'tool'|'notice'|nil }
H.tools = {} ---@type table<string, { mark: integer, text: string, icon: integer|nil, done: boolean|nil }>
H.queue = {} ---@type { id: integer, text: string }[]

--- What the transcript's rendering keeps about its text: reset with a new buffer or a reopened session.
H.clear_state = function()
  H.reply = { open = false, last = nil }
  H.streaming, H.held = false, {}
  H.thinking = nil
  H.tools, H.queue = {}, {}
  H.rules = nil
end

-- Where a reply's text or tool line goes, shared by live rendering (the buffer) and the bulk load of a
-- reopened session (a text writer): `out` has `append(text)` and `block(text)`.
H.reply_part = function(reply, kind, out)
  if not reply.open then
    out.block(H.REPLY_HEADING)
    reply.open = true
  elseif kind == 'text' and reply.last ~= nil and reply.last ~= 'text' then
    out.block('') -- after a tool line or a notice, text starts a paragraph of its own
  end
  reply.last = kind
end

--- A tool call's line: under the previous one when the reply's last part was a tool line.
H.put_tool_line = function(reply, line, out)
  if reply.open and reply.last == 'tool' then
    out.append('\n' .. line)
  elseif not reply.open then
    H.reply_part(reply, 'tool', out)
    out.append(line) -- the heading already ends with its blank line
  else
    H.reply_part(reply, 'tool', out)
    out.block(line)
  end
  reply.last = 'tool'
end

H.buffer_out = { append = function(t) M.append(t) end, block = function(t) M.block(t) end }

H.ensure_reply = function(kind)
  H.reply_part(H.reply, kind, H.buffer_out)
end

--- A message whose turn starts now (a queued one leaves the queue here).
function M.user_message(p)
  if type(p) == 'string' then
    p = { text = p }
  end
  M.buf()
  H.release_held()
  H.queue_remove({ p.id })
  H.close_thinking()
  H.reply = { open = false, last = nil }
  M.block(H.user_text(p.text, p.context))
end

-- The text of each kind of entry: shared by live rendering and the bulk load of a reopened session.
H.REPLY_HEADING = '## Caboose\n\n'
H.INTERRUPTED = '\n\n_[response interrupted]_'

H.user_text = function(text, labels)
  local out = '## You\n\n' .. table.concat(H.clean_lines(text, math.huge), '\n')
  for _, label in ipairs(labels or {}) do
    out = out .. '\n> 📎 ' .. H.clean(label)
  end
  return out
end

-- Text from tools, the host and servers is shown, never trusted to be one short line: line breaks end a
-- line (or become spaces where one line is wanted), other control characters show as ^X, and a very long
-- line is cut, saying how much was left out.
H.MAX_LINE = 1000 -- bytes of a detail, notice or error line
H.MAX_TOOL_LINE = 300 -- bytes of a tool call's line
H.UNSAFE = '[%z\1-\8\10-\31\127]' -- control characters but the tab

H.cut = function(s, max)
  if #s <= max then
    return s
  end
  -- Cut on a character boundary (a trailing partial UTF-8 sequence goes with the rest).
  local head = s:sub(1, max):gsub('[\192-\255][\128-\191]*$', '')
  return string.format('%s … (%d more characters)', head, vim.fn.strchars(s:sub(#head + 1)))
end

--- One displayable line of at most `max` bytes.
H.clean = function(s, max)
  s = tostring(s == nil and '' or s)
  if s:find(H.UNSAFE) then
    s = s:gsub('\r?\n', ' '):gsub(H.UNSAFE, function(c)
      return c == '\127' and '^?' or '^' .. string.char(c:byte() + 64)
    end)
  end
  return H.cut(s, max or H.MAX_LINE)
end

--- Displayable lines of `s` (CRLF, LF end lines; each line cleaned).
H.clean_lines = function(s, max)
  s = tostring(s == nil and '' or s)
  if not s:find(H.UNSAFE) and #s <= (max or H.MAX_LINE) then
    return { s } -- most are one short line (a reopened session has thousands)
  end
  local out = {}
  for _, l in ipairs(vim.split(s, '\r?\n')) do
    out[#out + 1] = H.clean((l:gsub('\r+$', '')), max) -- a line's CR (CRLF split by the host) says nothing
  end
  return out
end

H.error_text = function(message)
  return '> **Error:** ' .. table.concat(H.clean_lines(message), '\n> ')
end

-- A quoted line, no emphasis markup (the chat shows markdown unconcealed: `_…_` would show its underscores).
H.notice_text = function(text)
  return '> ' .. H.clean(text)
end

H.detail_lines = function(details, out)
  out = out or {}
  for _, d in ipairs(details or {}) do
    for _, l in ipairs(H.clean_lines(d)) do
      out[#out + 1] = H.DETAIL .. l
    end
  end
  return out
end

--- Folds detail lines (1-based, inclusive ranges) in `wins`, by default every window showing `buf`.
H.fold = function(buf, ranges, wins)
  if #ranges == 0 then
    return
  end
  for _, win in ipairs(wins or vim.fn.win_findbuf(buf)) do
    if vim.wo[win].foldmethod == 'manual' then
      vim.api.nvim_win_call(win, function()
        for _, r in ipairs(ranges) do
          vim.cmd(string.format('silent! %d,%dfold', r[1], r[2]))
        end
      end)
    end
  end
end

--- The runs of detail lines in `buf`, as 1-based inclusive ranges.
H.detail_ranges = function(buf)
  local ranges, start, n = {}, nil, #H.DETAIL
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:sub(1, n) == H.DETAIL then
      -- A thinking block's fold starts at its "thinking" line.
      start = start or ((i > 1 and lines[i - 1]:sub(1, #H.THINKING) == H.THINKING) and i - 1 or i)
    elseif start then
      table.insert(ranges, { start, i - 1 })
      start = nil
    end
  end
  if start then
    table.insert(ranges, { start, #lines })
  end
  return ranges
end

--- A window that starts showing the transcript gets its folds (a split copies another buffer's).
H.refold = function(buf, win)
  vim.api.nvim_win_call(win, function()
    vim.cmd('silent! normal! zE')
  end)
  H.fold(buf, H.detail_ranges(buf), { win })
end

-- Queued messages: shown under the transcript (not in it) until their turn starts.
H.render_queue = function()
  local buf = H.buf
  vim.api.nvim_buf_clear_namespace(buf, H.ns_queue, 0, -1)
  if #H.queue == 0 then
    return
  end
  local virt = {}
  for i, q in ipairs(H.queue) do
    local first = vim.split(q.text, '\n', { plain = true })[1]
    table.insert(virt, { { string.format('⧗ queued %d: %s', i, first), 'CabooseQueued' } })
  end
  local last = vim.api.nvim_buf_line_count(buf) - 1
  vim.api.nvim_buf_set_extmark(buf, H.ns_queue, last, 0, { virt_lines = virt })
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    H.show_below(win, #virt)
  end
end

--- A window following the end (cursor on the last line) scrolls so the lines under the last one (the
--- queued messages) show too: keeping the cursor line in view would leave them below the window.
---@param below integer virtual lines under the last line (nvim_win_text_height leaves them out)
H.show_below = function(win, below)
  local buf = vim.api.nvim_win_get_buf(win)
  local last = vim.api.nvim_buf_line_count(buf)
  if vim.api.nvim_win_get_cursor(win)[1] < last or not vim.api.nvim_win_text_height then
    return
  end
  local info = vim.fn.getwininfo(win)[1]
  local height = info.height -- text rows (without the winbar; nvim_win_get_height counts it)
  local top = info.topline
  local start = top
  while top < last and vim.api.nvim_win_text_height(win, { start_row = top - 1, end_row = last - 1 }).all + below > height do
    top = top + 1
  end
  if top ~= start then
    vim.api.nvim_win_call(win, function()
      vim.fn.winrestview({ topline = top }) -- the cursor stays on the last line
    end)
  end
end

H.queue_remove = function(ids)
  local drop = {}
  for _, id in ipairs(ids) do
    drop[id] = true
  end
  local kept = {}
  for _, q in ipairs(H.queue) do
    if not drop[q.id] then
      table.insert(kept, q)
    end
  end
  if #kept ~= #H.queue then
    H.queue = kept
    H.render_queue()
    M.set_status()
  end
end

function M.queued(p)
  M.buf()
  table.insert(H.queue, { id = p.id, text = p.text or '' })
  H.render_queue()
  M.set_status()
end

--- Queued messages a stop dropped (nil: all of them, e.g. the host exited). Says which.
function M.queue_discarded(messages)
  if not H.valid(H.buf) then
    return
  end
  local ids, texts = {}, {}
  for _, m in ipairs(messages or H.queue) do
    table.insert(ids, m.id)
    table.insert(texts, '“' .. vim.split(m.text or '', '\n', { plain = true })[1] .. '”')
  end
  if #ids == 0 then
    return
  end
  H.queue_remove(ids)
  M.notice(string.format('discarded %d queued message%s: %s', #texts, #texts == 1 and '' or 's', table.concat(texts, ', ')))
end

--- The queued messages (id, text), oldest first.
function M.queue()
  return vim.deepcopy(H.queue)
end

function M.assistant_start()
  -- The heading waits for the first text or tool call, so a step with nothing to show adds nothing.
end

function M.assistant_delta(text)
  if text == nil or text == '' then
    return
  end
  if H.status.retry then
    M.set_status(nil, nil, { retry = false })
  end
  H.close_thinking()
  H.ensure_reply('text')
  H.streaming = true
  M.append(text)
end

-- The model's reasoning: a "thinking" line with the text below it as detail lines, folded once the
-- reasoning ends (the reply's text, a tool call or the end of the step); `za` on the line opens it.
H.THINKING = '💭 thinking'
H.thinking = nil ---@type { row: integer, parts: string[], lines: integer, last: string, shown: boolean, written: integer }|nil

--- A reasoning delta (issue 21). Off with `chat.show_thinking = false`.
function M.reasoning_delta(text)
  if text == nil or text == '' or (require('caboose').config().chat or {}).show_thinking == false then
    return
  end
  if H.status.retry then
    M.set_status(nil, nil, { retry = false })
  end
  local buf = M.buf()
  if not H.thinking then
    H.put_tool_line(H.reply, H.THINKING .. '…', H.buffer_out)
    -- parts: the text; lines: how many lines it has; last: its last line; shown: its lines are in the buffer.
    H.thinking = { row = vim.api.nvim_buf_line_count(buf) - 1, parts = {}, lines = 1, last = '', shown = false, written = 0 }
  end
  local th = H.thinking
  H.streaming = true -- notices wait (thinking rewrites the lines under its line)
  table.insert(th.parts, text)
  local _, newlines = text:gsub('\n', '')
  local before = th.lines
  th.lines = th.lines + newlines
  if th.shown then
    H.write_thinking(buf, th, text)
  elseif before ~= th.lines or #th.parts == 1 then
    -- Collapsed while it streams: the line counts what arrived (za shows it).
    H.edit(buf, function()
      H.rewrite_line(buf, th.row, string.format('%s… (%d line%s, za)', H.THINKING, th.lines, th.lines == 1 and '' or 's'))
    end)
  end
end

--- Writes `text` (the reasoning that arrived since the last write) under the thinking line: only its
--- last line and the new ones are rewritten (a long reasoning streams thousands of deltas).
H.write_thinking = function(buf, th, text)
  local lines = vim.split(th.last .. text, '\n', { plain = true })
  local first = th.written > 0 and th.written or 1 -- 1-based detail line where `lines` start
  local follow = H.followers(buf)
  H.edit(buf, function()
    vim.api.nvim_buf_set_lines(buf, th.row + first, th.row + 1 + th.written, false, H.detail_lines({ table.concat(lines, '\n') }))
  end)
  th.written = first - 1 + #lines
  th.last = lines[#lines]
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
end

--- `za` on a thinking line that is still streaming: its text so far is shown, and follows the stream.
function M._show_thinking()
  local th = H.thinking
  if not th or th.shown then
    return
  end
  th.shown = true
  local buf = M.buf()
  H.edit(buf, function()
    H.rewrite_line(buf, th.row, H.THINKING .. '…')
  end)
  H.write_thinking(buf, th, table.concat(th.parts))
end

--- Ends a streaming thinking block: its line says how long it is and its text is folded under it.
H.close_thinking = function()
  local th = H.thinking
  if not th then
    return
  end
  H.thinking = nil
  local buf = M.buf()
  local shown = th.shown
  if not shown then
    H.write_thinking(buf, th, table.concat(th.parts))
  end
  H.edit(buf, function()
    H.rewrite_line(buf, th.row, string.format('%s (%d line%s, za)', H.THINKING, th.written, th.written == 1 and '' or 's'))
  end)
  -- The fold holds the "thinking" line too: one line of reasoning still folds ('foldminlines').
  local range = { th.row + 1, th.row + 1 + th.written }
  H.fold(buf, { range })
  if shown then
    -- Opened while it streamed: it stays open.
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      pcall(vim.api.nvim_win_call, win, function()
        vim.cmd(string.format('silent! %dfoldopen', range[1]))
      end)
    end
  end
end

--- The thinking block's text while it streams or once done (tests, statuslines): nil when there is none.
function M.thinking_text()
  return H.thinking and table.concat(H.thinking.parts) or nil
end

function M.assistant_end(info)
  H.close_thinking()
  if info and info.interrupted then
    H.ensure_reply('text')
    M.append(H.INTERRUPTED)
  end
  H.release_held()
end

-- Notices and errors that come while a reply's text streams wait for its end: written at once they
-- would land in the middle of a word, and the next words after them.
H.streaming = false
H.held = {} ---@type string[]

H.release_held = function()
  H.streaming = false
  local held = H.held
  H.held = {}
  for _, text in ipairs(held) do
    H.write_notice(text)
  end
end

H.write_notice = function(text)
  if H.streaming then
    table.insert(H.held, text)
    return
  end
  M.block(text)
  if H.reply.open then
    H.reply.last = 'notice' -- the reply's next text starts below it
  end
end

H.tool_line = function(status, text, summary)
  local line = tostring(text) .. ((summary and summary ~= '') and (' ' .. tostring(summary)) or '')
  return (H.ICONS[status] or '•') .. ' ' .. H.clean(line, H.MAX_TOOL_LINE)
end

--- Highlights the icon of a tool line; `t.icon` keeps the extmark so an update moves it instead of adding one.
H.mark_icon = function(buf, row, status, t)
  local icon = H.ICONS[status] or '•'
  local id = vim.api.nvim_buf_set_extmark(buf, H.ns, row, 0, { id = t and t.icon or nil, end_col = #icon, hl_group = H.ICON_HL[status] or 'CabooseToolCall' })
  if t then
    t.icon = id
  end
end

--- One compact line per tool call; its status and summary are filled in when the result arrives.
function M.tool_call(p)
  H.release_held()
  H.close_thinking()
  local text = p.summary or p.name or '?'
  H.put_tool_line(H.reply, H.tool_line('running', text), H.buffer_out)
  local buf = H.buf
  local row = vim.api.nvim_buf_line_count(buf) - 1
  local t = { mark = vim.api.nvim_buf_set_extmark(buf, H.ns, row, 0, {}), text = text }
  H.mark_icon(buf, row, 'running', t)
  H.tools[p.id or text] = t
end

--- Rewrites one line's text in place. (nvim_buf_set_lines on the line would move the extmarks at its
--- start to the next line, and the next update of that tool would land on another tool's line.)
H.rewrite_line = function(buf, row, text)
  local old = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  vim.api.nvim_buf_set_text(buf, row, 0, row, #old, { text })
end

--- A running call's line gets a new summary (a subagent's current step): one line rewritten, nothing else.
function M.tool_progress(p)
  local t = H.valid(H.buf) and H.tools[p.id or ''] or nil
  if not t or t.done then
    return
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(H.buf, H.ns, t.mark, {})[1]
  if not row then
    return
  end
  H.edit(H.buf, function()
    H.rewrite_line(H.buf, row, H.tool_line('running', t.text, p.summary))
  end)
  H.mark_icon(H.buf, row, 'running', t)
end

function M.tool_result(p)
  local buf = M.buf()
  local t = H.tools[p.id or '']
  local status = p.status or (p.ok and 'ok' or 'error')
  if not t then
    -- A result without its call line (should not happen): show it on its own.
    M.tool_call({ id = p.id, name = p.name, summary = p.name })
    t = H.tools[p.id or p.name]
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(buf, H.ns, t.mark, {})[1]
  if not row then
    return
  end
  local details = H.detail_lines(p.details)
  local follow = H.followers(buf)
  H.edit(buf, function()
    H.rewrite_line(buf, row, H.tool_line(status, t.text, p.summary))
    if #details > 0 then
      vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, details)
    end
  end)
  if #details > 0 then
    H.fold(buf, { { row + 2, row + 1 + #details } })
  end
  H.mark_icon(buf, row, status, t)
  t.done = true
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
  if #H.queue > 0 then
    H.render_queue()
  end
end

function M.error(message)
  H.write_notice(H.error_text(message))
end

function M.notice(text)
  H.write_notice(H.notice_text(text))
end

-- Reopened sessions ----------------------------------------------------------------------------------

--- Text written the way M.append / M.block write the buffer, collected as chunks and split into lines
--- once (a long session has tens of thousands of lines). `row()` is the 0-based row of the last line.
H.text_writer = function()
  local chunks, n, rows, ends_nl, empty = {}, 0, 0, false, true
  local w = {}
  function w.append(text)
    if text == '' then
      return
    end
    n = n + 1
    chunks[n] = text
    local _, nl = text:gsub('\n', '')
    rows = rows + nl
    ends_nl = text:sub(-1) == '\n'
    empty = false
  end
  function w.block(text)
    if not empty then
      text = (ends_nl and '\n' or '\n\n') .. text
    end
    w.append(text)
  end
  function w.row()
    return rows
  end
  function w.lines()
    return vim.split(table.concat(chunks), '\n', { plain = true })
  end
  return w
end

--- Shows a stored session's transcript (host event `transcript`): the same text live rendering wrote,
--- set in one change, so a long session opens at once. Replaces what the chat showed (the message area
--- and its draft stay).
---@param items table[] { t = 'user'|'text'|'tool'|'notice'|'error', ... } (src/host/session-history.ts)
function M.load(items)
  local w = H.text_writer()
  local icons = {} ---@type { row: integer, status: string }[]
  local folds = {} ---@type integer[][]
  local rules = nil ---@type { row: integer, count: integer }|nil
  local reply = { open = false, last = nil }
  for _, it in ipairs(items or {}) do
    if it.t == 'user' then
      reply = { open = false, last = nil }
      w.block(H.user_text(it.text, it.labels))
    elseif it.t == 'text' then
      H.reply_part(reply, 'text', w)
      w.append(it.text or '')
      if it.interrupted then
        w.append(H.INTERRUPTED)
      end
    elseif it.t == 'tool' then
      H.put_tool_line(reply, H.tool_line(it.status, it.text or '?', it.summary), w)
      table.insert(icons, { row = w.row(), status = it.status })
      if it.details and #it.details > 0 then
        local details = H.detail_lines(it.details)
        table.insert(folds, { w.row() + 2, w.row() + 1 + #details })
        w.append('\n' .. table.concat(details, '\n'))
      end
    elseif it.t == 'thinking' and it.text and it.text ~= '' and (require('caboose').config().chat or {}).show_thinking ~= false then
      local details = H.detail_lines({ it.text })
      H.put_tool_line(reply, string.format('%s (%d line%s, za)', H.THINKING, #details, #details == 1 and '' or 's'), w)
      table.insert(folds, { w.row() + 1, w.row() + 1 + #details })
      w.append('\n' .. table.concat(details, '\n'))
    elseif it.t == 'notice' or it.t == 'error' then
      w.block(it.t == 'notice' and H.notice_text(it.text) or H.error_text(it.text))
      if reply.open then
        reply.last = 'notice'
      end
    elseif it.t == 'rules' and it.lines and #it.lines > 0 then
      w.block(table.concat(it.lines, '\n'))
      rules = { row = w.row() - #it.lines + 1, count = #it.lines }
    end
  end
  local lines = w.lines()
  -- The transcript is replaced in place: deleting a long session's buffer and splitting its window
  -- again cost more than writing the new one.
  local buf = M.buf()
  for _, ns in ipairs({ H.ns, H.ns_hint, H.ns_queue, H.ns_rules }) do
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  end
  H.hint = false
  H.clear_state()
  H.status.usage, H.status.retry = nil, nil
  local wins = vim.fn.win_findbuf(buf)
  for _, win in ipairs(wins) do
    vim.api.nvim_win_call(win, function()
      vim.cmd('silent! normal! zE')
    end)
  end
  local hl = vim.treesitter.highlighter.active[buf]
  if hl then
    H.split_reset(buf, hl.tree)
  end
  H.edit(buf, function()
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end)
  H.fold(buf, folds, wins)
  for _, ic in ipairs(icons) do
    H.mark_icon(buf, ic.row, ic.status)
  end
  if rules then
    H.mark_rules(buf, rules.row, rules.count)
  end
  for _, win in ipairs(wins) do
    H.scroll_to_end(win)
  end
  if #lines == 1 and lines[1] == '' then
    H.render_hint()
  end
end

function M.todos(items)
  local out = { '**Tasks**', '' }
  local marks = { pending = '[ ]', in_progress = '[~]', completed = '[x]' }
  for _, it in ipairs(items or {}) do
    table.insert(out, string.format('- %s %s', marks[it.status] or '[ ]', it.content))
  end
  M.block(table.concat(out, '\n'))
end

-- Sending ------------------------------------------------------------------------------------------

--- Sends the message area's text (with the context it names); the area is cleared once the host took
--- the message (`u` brings the text back), and keeps it when the host refused it.
function M.submit()
  local input = M.input_buf()
  local lines = vim.api.nvim_buf_get_lines(input, 0, -1, false)
  local text = table.concat(lines, '\n')
  if vim.trim(text) == '' then
    vim.notify('(caboose) nothing to send', vim.log.levels.WARN)
    return false
  end
  if vim.fn.mode() == 'i' then
    vim.cmd('stopinsert')
  end
  -- Slash commands and variables are expanded by send() (caboose.insertables).
  return require('caboose').send(text, {
    on_done = function(err, res)
      if err or (type(res) == 'table' and res.status == 'rejected') then
        return
      end
      if H.valid(input) and table.concat(vim.api.nvim_buf_get_lines(input, 0, -1, false), '\n') == text then
        vim.api.nvim_buf_set_lines(input, 0, -1, false, {})
      end
    end,
  })
end

return M
