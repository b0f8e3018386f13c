--- The chat split: a markdown buffer named caboose://chat/<n>. It only displays what the host sends.
local M = {}
local H = {}

H.buf = nil ---@type integer|nil
H.count = 0
H.ns = vim.api.nvim_create_namespace('caboose_chat')

H.valid = function()
  return H.buf ~= nil and vim.api.nvim_buf_is_valid(H.buf)
end

--- Returns the chat buffer, creating it if needed.
function M.buf()
  if H.valid() then
    return H.buf
  end
  H.count = H.count + 1
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, 'caboose://chat/' .. H.count)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  vim.b[buf].caboose_chat = true
  H.buf = buf
  H.set_keymaps(buf)
  return buf
end

H.set_keymaps = function(buf)
  local map = function(lhs, rhs, desc)
    vim.keymap.set('n', lhs, rhs, { buffer = buf, desc = 'Caboose: ' .. desc, nowait = true })
  end
  map('<C-c>', function()
    require('caboose').stop()
  end, 'stop')
  map('q', function()
    M.close()
  end, 'close chat')
  map('i', function()
    require('caboose').prompt()
  end, 'send a message')
  map('<CR>', function()
    require('caboose').prompt()
  end, 'send a message')
end

--- Windows (in any tab) showing the chat.
H.wins = function()
  if not H.valid() then
    return {}
  end
  return vim.fn.win_findbuf(H.buf)
end

--- Opens the chat in a split in the current tab (reuses one already there). Keeps focus where it was.
function M.open(cfg)
  local buf = M.buf()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  local pos = cfg and cfg.chat and cfg.chat.position or 'right'
  local size = cfg and cfg.chat and cfg.chat.size or 80
  local cmd = ({
    right = 'botright vertical ' .. size .. 'split',
    left = 'topleft vertical ' .. size .. 'split',
    bottom = 'botright ' .. size .. 'split',
    top = 'topleft ' .. size .. 'split',
  })[pos]
  local prev = vim.api.nvim_get_current_win()
  vim.cmd(cmd)
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].signcolumn = 'no'
  vim.wo[win].winfixwidth = pos == 'right' or pos == 'left'
  if vim.api.nvim_win_is_valid(prev) then
    vim.api.nvim_set_current_win(prev)
  end
  H.apply_status(win)
  H.scroll_to_end()
  return win
end

H.status = { state = 'idle', mode = nil, grants = {} }

H.apply_status = function(win)
  local s = H.status
  local text = string.format(' Caboose %%#CabooseMode# %s %%* %s', s.mode or '?', s.state == 'idle' and '' or ('· ' .. s.state:gsub('_', ' ')))
  if #s.grants > 0 then
    text = text .. ' · always: ' .. table.concat(s.grants, ', ')
  end
  pcall(function()
    vim.wo[win].winbar = text
  end)
end

--- Shows the mode, the state and the tools always allowed in the chat windows' winbar.
function M.set_status(state, mode, grants)
  H.status = { state = state or H.status.state, mode = mode or H.status.mode, grants = grants or H.status.grants }
  for _, win in ipairs(H.wins()) do
    H.apply_status(win)
  end
end

--- The winbar text of the first chat window (for tests and statuslines).
function M.status_text()
  local win = H.wins()[1]
  return win and vim.wo[win].winbar or nil
end

function M.close()
  for _, win in ipairs(H.wins()) do
    if #vim.api.nvim_list_wins() > 1 then
      pcall(vim.api.nvim_win_close, win, false)
    end
  end
end

--- Forget the current buffer so the next message starts a fresh one (new session).
function M.reset()
  if H.valid() then
    M.close()
    pcall(vim.api.nvim_buf_delete, H.buf, { force = true })
  end
  H.buf = nil
end

H.scroll_to_end = function()
  local buf = H.buf
  if not buf then
    return
  end
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(H.wins()) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
end

--- Appends raw text at the very end of the buffer (continuing the last line).
function M.append(text)
  if text == nil or text == '' then
    return
  end
  local buf = M.buf()
  local lines = vim.split(text, '\n', { plain = true })
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local last_line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ''
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_text(buf, last, #last_line, last, #last_line, lines)
  vim.bo[buf].modifiable = false
  H.scroll_to_end()
end

--- Starts a new block on its own line(s), separated by a blank line from what came before.
function M.block(text)
  local buf = M.buf()
  local count = vim.api.nvim_buf_line_count(buf)
  local first = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] or ''
  local empty = count == 1 and first == ''
  local last_line = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ''
  local prefix = ''
  if not empty then
    prefix = last_line == '' and '\n' or '\n\n'
  end
  M.append(prefix .. text)
end

function M.lines()
  if not H.valid() then
    return {}
  end
  return vim.api.nvim_buf_get_lines(H.buf, 0, -1, false)
end

-- One "## Caboose" heading per reply, however many model steps (text, tool calls) it takes.
H.reply = { open = false, last = nil } ---@type { open: boolean, last: 'text'|'tool'|nil }

H.ensure_reply = function(kind)
  if not H.reply.open then
    M.block('## Caboose\n\n')
    H.reply.open = true
  elseif kind == 'text' and H.reply.last == 'tool' then
    M.block('')
  end
  H.reply.last = kind
end

function M.user_message(text)
  H.reply = { open = false, last = nil }
  M.block('## You\n\n' .. text)
end

function M.assistant_start()
  -- The heading waits for the first text or tool call, so a step with nothing to show adds nothing.
end

function M.assistant_delta(text)
  if text == nil or text == '' then
    return
  end
  H.ensure_reply('text')
  M.append(text)
end

function M.assistant_end(info)
  if info and info.interrupted then
    H.ensure_reply('text')
    M.append('\n\n_[response interrupted]_')
  end
end

function M.tool_call(p)
  H.ensure_reply('tool')
  M.block('> `' .. (p.summary or p.name or '?') .. '`')
end

function M.tool_result(p)
  local mark = p.ok and 'ok' or 'failed'
  M.append(string.format('\n> %s %s: %s', p.name or '?', mark, p.summary or ''))
end

function M.error(message)
  M.block('> **Error:** ' .. message:gsub('\n', '\n> '))
end

function M.notice(text)
  M.block('> _' .. text:gsub('\n', ' ') .. '_')
end

function M.todos(items)
  local out = { '**Tasks**', '' }
  local marks = { pending = '[ ]', in_progress = '[~]', completed = '[x]' }
  for _, it in ipairs(items or {}) do
    table.insert(out, string.format('- %s %s', marks[it.status] or '[ ]', it.content))
  end
  M.block(table.concat(out, '\n'))
end

return M
