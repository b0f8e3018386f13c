--- The chat's windows and their life cycle: the transcript's split and the message area under it, their
--- sizes and options, and the autocommands that keep the layout whole as the user's windows open, close
--- and resize (the chat lives and dies with the windows beside it).
local S = require('caboose.chat.state')
local W = require('caboose.chat.winbar')

local M = {}
local H = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

H.tab_win = function(buf)
  if not S.valid(buf) then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
end

M.vertical = function(pos)
  return pos == 'right' or pos == 'left'
end

--- The chat's width (left/right) or height (top/bottom): a share of the screen within min and max.
function M.size(chat_cfg)
  chat_cfg = chat_cfg or S.cfg().chat
  local vertical = M.vertical(chat_cfg.position)
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
    wo.foldtext = "v:lua.require'caboose.chat'.foldtext()"
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
  if b == S.buf then
    return 'transcript'
  elseif b == S.input then
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
  local cfg = S.cfg().chat
  local l = H.tab_layout(tab)
  for _, win in ipairs(l.input) do
    if vim.api.nvim_win_get_height(win) ~= cfg.input_height then
      pcall(vim.api.nvim_win_set_height, win, cfg.input_height)
    end
  end
  if M.vertical(cfg.position) then
    for _, win in ipairs(l.transcript) do
      pcall(vim.api.nvim_win_set_width, win, M.size(cfg))
    end
  end
end

--- Opens the chat in a split in the current tab (reuses one already there, rebuilding a broken layout).
--- Keeps focus where it was.
function M.open(cfg)
  local buf = chat().buf()
  local input = chat().input_buf()
  cfg = cfg or S.cfg()
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
    require('caboose.chat.tools').refold(buf, win)
    vim.wo[win].winfixwidth = M.vertical(pos)
    vim.wo[win].winfixheight = not M.vertical(pos)
    W.apply(win)
    S.scroll_to_end(win)
    if S.hint then
      require('caboose.chat.transcript').render_hint() -- for this window's width
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
    W.input_bar(iwin)
  end
  H.restore_sizes(tab)
  if vim.api.nvim_win_is_valid(prev) then
    vim.api.nvim_set_current_win(prev)
  end
  return win
end

--- The message area's window in the current tab, if shown.
function M.input_win()
  return H.tab_win(S.input)
end

--- Puts the cursor in the message area (opening the chat if needed); `insert` starts Insert mode.
function M.focus_input(insert)
  M.open()
  local iwin = H.tab_win(S.input)
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
  for _, b in ipairs({ S.buf, S.input }) do
    if S.valid(b) then
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
    vim.cmd(({ right = 'topleft vnew', left = 'botright vnew', bottom = 'topleft new', top = 'botright new' })[S.cfg().chat.position])
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
      W.apply(win)
      if S.hint then
        require('caboose.chat.transcript').render_hint()
      end
    elseif vim.api.nvim_win_is_valid(win) and H.role(win) == 'input' then
      W.input_bar(win)
    end
  end
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
  local draft = S.valid(S.input) and vim.api.nvim_buf_get_lines(S.input, 0, -1, false) or nil
  M.close()
  for _, b in ipairs({ S.buf, S.input }) do
    if S.valid(b) then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
  S.buf, S.input = nil, nil
  S.status.usage, S.status.retry, S.status.title = nil, nil, nil
  if draft and (#draft > 1 or draft[1] ~= '') then
    vim.api.nvim_buf_set_lines(chat().input_buf(), 0, -1, false, draft)
  end
end

--- Re-apply the share-of-screen size after the terminal is resized.
function M.resize()
  local cfg = S.cfg()
  for _, win in ipairs(S.wins()) do
    if vim.api.nvim_win_get_tabpage(win) == vim.api.nvim_get_current_tabpage() then
      if M.vertical(cfg.chat.position) then
        pcall(vim.api.nvim_win_set_width, win, M.size(cfg.chat))
      end
      W.apply(win)
    end
  end
end

return M
