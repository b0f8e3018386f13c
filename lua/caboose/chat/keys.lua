--- The chat's keys: the transcript's and the message area's mappings, and the g? list of them.
local S = require('caboose.chat.state')

local M = {}
local H = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

H.keys = {
  { 'n', '<CR>', 'message area: send' },
  { 'i', '<C-s>', 'message area: send (also normal mode)' },
  { 'n', 'i a o <CR>', 'transcript: go to the message area' },
  { 'n', '<C-c>', 'stop the running turn (:CabooseStop)' },
  { 'n', 'gy', 'yank the code block under the cursor' },
  { 'n', 'za zo zc', 'open/close a tool call\'s details (on its line)' },
  { 'n', 'gL', 'choose the model of the next request (:CabooseModel)' },
  -- (chat.keys: regenerate, edit, approval — inserted here by H.list)
  { 'n', 'q', 'transcript: close the chat' },
  { 'n', 'g?', 'this list (? stays backward search)' },
  { 'i', '@', 'complete a file path to attach' },
  { 'i', '#buffer', 'attach the buffer you came from' },
  { 'i', '/ #', 'slash commands, variables (/help lists them)' },
}

--- The g? list: the fixed keys, with the configurable ones (chat.keys: regenerate, edit, approval) after gL.
H.list = function()
  local out = {}
  for _, k in ipairs(H.keys) do
    table.insert(out, k)
    if k[2] == 'gL' then
      local keys = require('caboose.conversation').keys()
      if keys.regenerate ~= '' then
        table.insert(out, { 'n', keys.regenerate, 'regenerate the last reply (:CabooseRetry [model])' })
      end
      if keys.edit ~= '' then
        table.insert(out, { 'n', keys.edit, 'edit your message under the cursor, resend (forks)' })
      end
      if keys.approval ~= '' then
        table.insert(out, { 'n', keys.approval, 'go to the pending approval or question (:CabooseApproval)' })
      end
    end
  end
  return out
end

H.map = function(buf, modes, lhs, fn, desc, expr)
  vim.keymap.set(modes, lhs, fn, { buffer = buf, desc = 'Caboose: ' .. desc, nowait = true, expr = expr })
end

--- za, zo, zc on a tool call's line act on its details (the fold on the lines below it).
H.fold_key = function(key)
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local th = S.thinking
  if th and not th.shown and key ~= 'zc' and row - 1 == th.row and vim.api.nvim_get_current_buf() == S.buf then
    return "<Cmd>lua require('caboose.chat')._show_thinking()<CR>"
  end
  local lines = vim.api.nvim_buf_get_lines(0, row - 1, row + 1, false)
  local n = #S.DETAIL
  if not (lines[2] and lines[1]:sub(1, n) ~= S.DETAIL and lines[2]:sub(1, n) == S.DETAIL) then
    return key
  end
  local open = key == 'zo' or (key == 'za' and vim.fn.foldclosed(row + 1) ~= -1)
  return string.format('<Cmd>%dfold%s<CR>', row + 1, open and 'open' or 'close')
end

M.transcript = function(buf)
  H.map(buf, 'n', '<C-c>', function()
    require('caboose').stop()
  end, 'stop')
  H.map(buf, 'n', 'q', chat().close, 'close chat')
  for _, lhs in ipairs({ 'i', 'a', 'o' }) do
    H.map(buf, 'n', lhs, function()
      chat().focus_input(true)
    end, 'write a message')
  end
  H.map(buf, 'n', '<CR>', function()
    chat().focus_input(false)
  end, 'go to the message area')
  H.map(buf, 'n', 'gy', M.yank_code_block, 'yank the code block under the cursor')
  for _, key in ipairs({ 'za', 'zo', 'zc' }) do
    H.map(buf, 'n', key, function()
      return H.fold_key(key)
    end, 'open/close a tool call\'s details', true)
  end
  H.map(buf, 'n', 'gL', function()
    require('caboose.model').pick()
  end, 'choose the model')
  -- Regenerate, edit-and-resend and the pending approval (chat.keys; "" disables one).
  local conv = require('caboose.conversation').keys()
  if conv.approval ~= '' then
    H.map(buf, 'n', conv.approval, function()
      if not require('caboose.ui.approval').focus() and not require('caboose.ui.ask').answer() then
        vim.notify('(caboose) no approval is pending', vim.log.levels.INFO)
      end
    end, 'go to the pending approval (or the agent\'s question)')
  end
  if conv.regenerate ~= '' then
    H.map(buf, 'n', conv.regenerate, function()
      require('caboose.conversation').retry()
    end, 'regenerate the last reply (:CabooseRetry)')
  end
  if conv.edit ~= '' then
    H.map(buf, 'n', conv.edit, function()
      require('caboose.conversation').edit_at_cursor()
    end, 'edit the message under the cursor and resend it (forks the chat)')
  end
  H.map(buf, 'n', 'g?', M.show_keys, 'list the chat keys')
end

M.input = function(buf)
  H.map(buf, 'n', '<CR>', chat().submit, 'send the message')
  H.map(buf, { 'n', 'i' }, '<C-s>', chat().submit, 'send the message')
  H.map(buf, 'n', '<C-c>', function()
    require('caboose').stop()
  end, 'stop')
  H.map(buf, 'n', 'g?', M.show_keys, 'list the chat keys')
end

--- A float listing the chat's keys (q, <Esc> or g? closes it). `opts` (the review's keys): { title, keys }.
function M.show_keys(opts)
  opts = type(opts) == 'table' and opts or {}
  local lines = {}
  for _, k in ipairs(opts.keys or H.list()) do
    table.insert(lines, string.format(' %-12s %s', k[2], k[3]))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'caboose_keys'
  -- As wide as the longest line (when the screen allows) and as high as the wrapped lines: none cut off.
  local longest = 0
  for _, l in ipairs(lines) do
    longest = math.max(longest, vim.api.nvim_strwidth(l) + 1)
  end
  local width = math.max(1, math.min(vim.o.columns - 4, math.max(40, longest)))
  local height = math.max(1, math.min(require('caboose.ui.windows').wrapped_rows(lines, width), vim.o.lines - 4))
  local win = vim.api.nvim_open_win(buf, true, vim.tbl_extend('force', require('caboose.ui.windows').centered(width, height), {
    style = 'minimal',
    border = 'rounded',
    title = opts.title or ' Caboose chat keys ',
    title_pos = 'center',
  }))
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

return M
