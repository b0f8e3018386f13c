--- Tool calls in the transcript: one compact line per call (its icon, text and summary updated in place
--- as it runs and ends) with its details folded under it, and the folds themselves (also a thinking
--- block's), made by hand as lines are written.
local S = require('caboose.chat.state')
local T = require('caboose.chat.text')

local M = {}
local H = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

H.ICONS = { running = '◌', ok = '✓', error = '✗', rejected = '⊘', cancelled = '⊘' }
H.ICON_HL = {
  running = 'CabooseToolRunning',
  ok = 'CabooseToolOk',
  error = 'CabooseToolError',
  rejected = 'CabooseToolRejected',
  cancelled = 'CabooseToolRejected',
}

M.tool_line = function(status, text, summary)
  local line = tostring(text) .. ((summary and summary ~= '') and (' ' .. tostring(summary)) or '')
  return (H.ICONS[status] or '•') .. ' ' .. T.clean(line, T.MAX_TOOL_LINE)
end

--- Highlights the icon of a tool line; `t.icon` keeps the extmark so an update moves it instead of adding one.
M.mark_icon = function(buf, row, status, t)
  local icon = H.ICONS[status] or '•'
  local id = vim.api.nvim_buf_set_extmark(buf, S.ns, row, 0, { id = t and t.icon or nil, end_col = #icon, hl_group = H.ICON_HL[status] or 'CabooseToolCall' })
  if t then
    t.icon = id
  end
end

--- One compact line per tool call; its status and summary are filled in when the result arrives.
function M.tool_call(p)
  require('caboose.chat.transcript').release_held()
  require('caboose.chat.thinking').close()
  local text = p.summary or p.name or '?'
  T.put_tool_line(S.reply, M.tool_line('running', text), require('caboose.chat.transcript').out)
  local buf = S.buf
  local row = vim.api.nvim_buf_line_count(buf) - 1
  local t = { mark = vim.api.nvim_buf_set_extmark(buf, S.ns, row, 0, {}), text = text }
  M.mark_icon(buf, row, 'running', t)
  S.tools[p.id or text] = t
end

--- A running call's line gets a new summary (a subagent's current step): one line rewritten, nothing else.
function M.tool_progress(p)
  local t = S.valid(S.buf) and S.tools[p.id or ''] or nil
  if not t or t.done then
    return
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(S.buf, S.ns, t.mark, {})[1]
  if not row then
    return
  end
  S.edit(S.buf, function()
    S.rewrite_line(S.buf, row, M.tool_line('running', t.text, p.summary))
  end)
  M.mark_icon(S.buf, row, 'running', t)
end

function M.tool_result(p)
  local buf = chat().buf()
  local t = S.tools[p.id or '']
  local status = p.status or (p.ok and 'ok' or 'error')
  if not t then
    -- A result without its call line (should not happen): show it on its own.
    chat().tool_call({ id = p.id, name = p.name, summary = p.name })
    t = S.tools[p.id or p.name]
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(buf, S.ns, t.mark, {})[1]
  if not row then
    return
  end
  local details = T.detail_lines(p.details)
  local follow = S.followers(buf)
  S.edit(buf, function()
    S.rewrite_line(buf, row, M.tool_line(status, t.text, p.summary))
    if #details > 0 then
      vim.api.nvim_buf_set_lines(buf, row + 1, row + 1, false, details)
    end
  end)
  if #details > 0 then
    M.fold(buf, { { row + 2, row + 1 + #details } })
  end
  M.mark_icon(buf, row, status, t)
  t.done = true
  S.follow(buf, follow)
  if #S.queue > 0 then
    require('caboose.chat.queue').render()
  end
end

-- Folds for tool details -----------------------------------------------------------------------------

--- Folds detail lines (1-based, inclusive ranges) in `wins`, by default every window showing `buf`.
M.fold = function(buf, ranges, wins)
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
  local ranges, start, n = {}, nil, #S.DETAIL
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:sub(1, n) == S.DETAIL then
      -- A thinking block's fold starts at its "thinking" line.
      start = start or ((i > 1 and lines[i - 1]:sub(1, #S.THINKING) == S.THINKING) and i - 1 or i)
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
M.refold = function(buf, win)
  vim.api.nvim_win_call(win, function()
    vim.cmd('silent! normal! zE')
  end)
  M.fold(buf, H.detail_ranges(buf), { win })
end

--- The text of a closed fold: a thinking block's shows its line, a tool call's details their count.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  if first:sub(1, #S.THINKING) == S.THINKING then
    return first
  end
  local n = vim.v.foldend - vim.v.foldstart + 1
  return string.format('%s%d line%s of details (za)', S.DETAIL, n, n == 1 and '' or 's')
end

return M
