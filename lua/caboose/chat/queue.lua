--- Queued messages: shown under the transcript (not in it) until their turn starts, or until a stop
--- discards them.
local S = require('caboose.chat.state')

local M = {}
local H = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

M.render = function()
  local buf = S.buf
  vim.api.nvim_buf_clear_namespace(buf, S.ns_queue, 0, -1)
  if #S.queue == 0 then
    return
  end
  local virt = {}
  for i, q in ipairs(S.queue) do
    local first = vim.split(q.text, '\n', { plain = true })[1]
    table.insert(virt, { { string.format('⧗ queued %d: %s', i, first), 'CabooseQueued' } })
  end
  local last = vim.api.nvim_buf_line_count(buf) - 1
  vim.api.nvim_buf_set_extmark(buf, S.ns_queue, last, 0, { virt_lines = virt })
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

M.remove = function(ids)
  local drop = {}
  for _, id in ipairs(ids) do
    drop[id] = true
  end
  local kept = {}
  for _, q in ipairs(S.queue) do
    if not drop[q.id] then
      table.insert(kept, q)
    end
  end
  if #kept ~= #S.queue then
    S.queue = kept
    M.render()
    chat().set_status()
  end
end

function M.queued(p)
  chat().buf()
  table.insert(S.queue, { id = p.id, text = p.text or '' })
  M.render()
  chat().set_status()
end

--- Queued messages a stop dropped (nil: all of them, e.g. the host exited). Says which.
function M.discarded(messages)
  if not S.valid(S.buf) then
    return
  end
  local ids, texts = {}, {}
  for _, m in ipairs(messages or S.queue) do
    table.insert(ids, m.id)
    table.insert(texts, '“' .. vim.split(m.text or '', '\n', { plain = true })[1] .. '”')
  end
  if #ids == 0 then
    return
  end
  M.remove(ids)
  chat().notice(string.format('discarded %d queued message%s: %s', #texts, #texts == 1 and '' or 's', table.concat(texts, ', ')))
end

--- The queued messages (id, text), oldest first.
function M.list()
  return vim.deepcopy(S.queue)
end

return M
