--- The approval float: never modal, never over the chat's message area, as high as its wrapped text,
--- its footer the keys (and a scroll marker when the text scrolls); or, for changes to files with
--- approval.style 'inline', the review in the file's window instead.
local A = require('caboose.ui.approval.state')

local M = {}
local H = {}

--- A sibling part, required when used (the parts require each other).
local function part(name)
  return require('caboose.ui.approval.' .. name)
end

-- The keys, longest form first: the first that fits the float's width is shown.
H.FOOTER = { ' [o/<CR>] once  [a] always  [r] reject  [q] hide ', ' [o] once [a] always [r] reject [q] hide ' }
H.FOOTER_HUNKS = {
  ' [t] hunk off/on  [o/<CR>] once  [a] always  [r] reject  [q] hide ',
  ' [t] hunk  [o/<CR>] once  [a] always  [r] reject  [q] hide ',
  ' [t] hunk [o] once [a] always [r] reject [q] hide ',
  ' t hunk · o once · a always · r reject · q ',
}
-- Until the user is in the float its keys do nothing: say how to get there.
H.FOOTER_UNFOCUSED = function()
  local key = require('caboose.conversation').keys().approval
  return key ~= '' and { ' answer: :CabooseApproval (' .. key .. ' in the chat) ', ' answer: :CabooseApproval ' } or { ' answer: :CabooseApproval ' }
end

H.footer = function(forms, width)
  for _, f in ipairs(forms) do
    if vim.api.nvim_strwidth(f) <= width then
      return f
    end
  end
  return forms[#forms]
end

--- When the text does not fit the float: which lines show (long and short form), so the user knows
--- there is more to read.
H.scroll_marker = function()
  if not (A.win and vim.api.nvim_win_is_valid(A.win)) then
    return nil
  end
  local total = vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(A.win))
  local rows = vim.api.nvim_win_text_height(A.win, {}).all
  if rows <= vim.api.nvim_win_get_height(A.win) then
    return nil
  end
  local first = vim.fn.line('w0', A.win)
  local last = vim.fn.line('w$', A.win)
  local arrow = last < total and (first > 1 and '↕' or '▼') or '▲'
  return { string.format(' %s lines %d–%d of %d ', arrow, first, last, total), string.format(' %s %d–%d/%d', arrow, first, last, total) }
end

--- The footer forms with the scroll marker in front (when the text scrolls): the marker always shows.
H.footer_forms = function(forms)
  local marker = H.scroll_marker()
  if not marker then
    return forms
  end
  local out = {}
  -- The fullest keys first (with the long, then the short marker), then shorter keys.
  for _, f in ipairs(forms) do
    for _, m in ipairs(marker) do
      table.insert(out, m .. f)
    end
  end
  table.insert(out, marker[2] .. ' ')
  return out
end

M.close_win = function()
  if A.win and vim.api.nvim_win_is_valid(A.win) then
    pcall(vim.api.nvim_win_close, A.win, true)
  end
  A.win = nil
end

--- ` Caboose: approve edit_file? (create mode) `; a subagent's request starts with its name (`agent #2 ·`).
H.title = function(req)
  local title = string.format(' Caboose: approve %s? (%s mode) ', req.tool or '?', req.mode or '?')
  local who = type(req.label) == 'string' and req.label:match('^[^:]+') or nil
  return who and (' ' .. vim.fn.strcharpart(who, 0, 24) .. ' ·' .. title) or title
end

--- Screen rows of the chat's message area (with the line above it), if it is shown in this tab.
H.message_area = function()
  local chat = package.loaded['caboose.chat']
  local win = chat and chat.input_win()
  if not win then
    return nil
  end
  local pos = vim.api.nvim_win_get_position(win)
  local winbar = vim.wo[win].winbar ~= '' and 1 or 0
  return { top = pos[1] - 1, bottom = pos[1] + winbar + vim.api.nvim_win_get_height(win) + 1, col = pos[2], width = vim.api.nvim_win_get_width(win) }
end

--- Size and place the float: as wide as readable, as high as its (wrapped) text, within the screen and
--- never over the chat's message area (the user may be typing there).
H.layout = function(req, height)
  local width = math.min(math.max(60, math.floor(vim.o.columns * 0.7)), vim.o.columns - 4)
  local col = math.floor((vim.o.columns - width - 2) / 2)
  local rows = vim.o.lines - vim.o.cmdheight -- editor rows a float may cover
  local lo, hi = 0, rows -- the rows the float, borders included, may take: lo .. hi - 1
  local m = H.message_area()
  if m and col < m.col + m.width and m.col < col + width + 2 then
    local above, below = math.max(0, m.top), math.max(0, rows - m.bottom)
    if above >= below then
      -- The transcript's last lines stay visible too when the float keeps 5 text rows.
      hi = above - 2 >= 7 and above - 2 or above
    else
      lo = m.bottom
    end
  end
  local band = hi - lo
  -- Text rows: at most 80% of the screen, and always two borders (and a margin on a full screen) short of it.
  local max_height = math.max(1, math.min(band - (band == rows and 3 or 2), math.max(5, math.floor(rows * 0.8))))
  height = math.max(1, math.min(height, max_height))
  return {
    relative = 'editor',
    width = width,
    height = height,
    row = lo + math.max(0, math.floor((band - height - 2) / 2)),
    col = col,
    style = 'minimal',
    border = 'rounded',
    title = H.title(req),
    title_pos = 'center',
    footer = H.footer(H.footer_forms((A.win and vim.api.nvim_get_current_win() == A.win) and (part('body').hunk_files(req) and H.FOOTER_HUNKS or H.FOOTER) or H.FOOTER_UNFOCUSED()), width),
    footer_pos = 'center',
    focusable = true,
  }
end

--- Inline review in the file's window (approval.style 'inline') for changes to files.
M.inline = function(req)
  return require('caboose').config().approval.style == 'inline' and require('caboose.ui.review').files(req) ~= nil
end

M.render = function()
  local req = A.current()
  if not req then
    M.close_win()
    return
  end
  if M.inline(req) then
    M.close_win()
    require('caboose.ui.review').open(req)
    return
  end
  if not (A.buf and vim.api.nvim_buf_is_valid(A.buf)) then
    A.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[A.buf].bufhidden = 'hide'
    vim.bo[A.buf].filetype = 'caboose_approval'
    part('keys').set(A.buf)
    vim.api.nvim_create_autocmd({ 'BufEnter', 'BufLeave' }, {
      buffer = A.buf,
      callback = function()
        vim.schedule(M.relayout) -- after the window switch, so the footer matches the focus
      end,
    })
  end
  local lines = part('body').lines(req)
  vim.bo[A.buf].modifiable = true
  vim.api.nvim_buf_set_lines(A.buf, 0, -1, false, lines)
  vim.bo[A.buf].modifiable = false
  part('body').highlight(A.buf, lines, req)
  vim.b[A.buf].caboose_approval_id = req.id
  local cfg = H.layout(req, #lines)
  local opened = false
  if A.win and vim.api.nvim_win_is_valid(A.win) then
    vim.api.nvim_win_set_config(A.win, cfg)
  else
    opened = true
    -- Never take focus: keys typed in the user's buffer while a request arrives must stay there.
    A.win = vim.api.nvim_open_win(A.buf, false, cfg)
    require('caboose.ui.windows').fix_buffer(A.win)
    vim.wo[A.win].winhighlight = 'FloatBorder:CabooseApprovalBorder,FloatTitle:CabooseApprovalTitle,FloatFooter:CabooseApprovalTitle'
    vim.wo[A.win].wrap = true
    vim.wo[A.win].linebreak = true
    vim.wo[A.win].breakindent = true
  end
  -- Wrapped lines take more rows than lines: fit the float to its text (clamped by H.layout).
  local rows = vim.api.nvim_win_text_height(A.win, {}).all
  if rows ~= cfg.height then
    vim.api.nvim_win_set_config(A.win, H.layout(req, rows))
  end
  -- Again once the height is final: the footer's scroll marker depends on it.
  vim.api.nvim_win_set_config(A.win, H.layout(req, rows))
  local changed = A.shown_id ~= req.id
  if changed then
    A.shown_id = req.id
    pcall(vim.api.nvim_win_set_cursor, A.win, { 1, 0 })
    -- A new request under the user's cursor: a key pressed twice must not answer it unseen.
    local focused = vim.api.nvim_get_current_win() == A.win
    A.grace_until = focused and (A.now() + require('caboose').config().approval.grace_ms) or 0
  end
  if changed or opened then
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseApprovalShown', modeline = false, data = { id = req.id, tool = req.tool } })
  end
end

--- Re-fit the open float (focus changed, or the screen was resized).
M.relayout = function()
  local req = A.current()
  if req and A.win and vim.api.nvim_win_is_valid(A.win) then
    vim.api.nvim_win_set_config(A.win, H.layout(req, vim.api.nvim_win_text_height(A.win, {}).all))
    -- The width may have changed, and with it the wrapped height.
    vim.api.nvim_win_set_config(A.win, H.layout(req, vim.api.nvim_win_text_height(A.win, {}).all))
  end
end

-- Scrolling the float moves its scroll marker (the lines shown).
vim.api.nvim_create_autocmd('WinScrolled', {
  group = vim.api.nvim_create_augroup('CabooseApprovalScroll', { clear = true }),
  callback = function()
    if A.win and vim.api.nvim_win_is_valid(A.win) and vim.v.event[tostring(A.win)] then
      M.relayout()
    end
  end,
})

-- WinResized: the chat opened, closed or changed size (its message area must stay uncovered).
vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, {
  group = vim.api.nvim_create_augroup('CabooseApprovalLayout', { clear = true }),
  callback = vim.schedule_wrap(function() -- after the chat took its new size
    M.relayout()
  end),
})

return M
