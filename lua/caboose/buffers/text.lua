--- Landing the agent's text in a buffer as small changes: whole lines where lines were added or removed,
--- else only the characters that differ, so marks, extmarks and views outside the change stay.
local snapshot = require('caboose.buffers.snapshot')

local M = {}
local H = {}

--- Byte offset of 0-based line `row` in text made of the buffer lines joined by "\n".
H.offset = function(b, row)
  return vim.api.nvim_buf_get_offset(b, row)
end

--- Lines `first..first+count-1` (1-based) of `text`, starting the scan at byte `from` (1-based) which
--- is where line `first` begins. Returns the lines and the byte after the last one.
H.take_lines = function(text, from, count)
  local out = {}
  local pos = from
  for i = 1, count do
    local nl = text:find('\n', pos, true)
    if not nl then
      out[i] = text:sub(pos)
      pos = #text + 1
    else
      out[i] = text:sub(pos, nl - 1)
      pos = nl + 1
    end
  end
  return out, pos
end

--- Puts `new` (lines joined by "\n", each ended by "\n"; "" = no lines) into buffer `b` as minimal
--- hunks: a line diff (xdiff) of the current text, then per hunk only the changed characters.
M.set_text = function(b, new)
  local old_lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  local empty = snapshot.is_empty(b, old_lines)
  if empty then
    local lines = new == '' and {} or vim.split(new:sub(1, -2), '\n', { plain = true })
    vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
    return 1
  end
  local old = table.concat(old_lines, '\n') .. '\n'
  if old == new then
    return 0
  end
  local diff = (vim.text and vim.text.diff) or vim.diff
  local hunks = diff(old, new, { result_type = 'indices', algorithm = 'myers' }) --[[@as integer[][] ]]
  -- New-text byte position of each hunk: old offset shifted by the size change of earlier hunks.
  local plan = {}
  local shift = 0
  for _, h in ipairs(hunks) do
    local sa, ca, cb = h[1], h[2], h[4]
    local old_start = ca == 0 and sa or sa - 1 -- 0-based first old line of the hunk (insert: after sa)
    local old_from = H.offset(b, old_start)
    local old_to = H.offset(b, old_start + ca)
    local new_lines = {}
    if cb > 0 then
      new_lines = H.take_lines(new, old_from + shift + 1, cb)
    end
    local new_size = 0
    for _, l in ipairs(new_lines) do
      new_size = new_size + #l + 1
    end
    shift = shift + new_size - (old_to - old_from)
    plan[#plan + 1] = { start = old_start, count = ca, lines = new_lines }
  end
  H.apply_hunks(b, plan)
  return #plan
end

--- Lands hunks ({start = 0-based row, count = old lines, lines = new lines}) bottom-up, so earlier rows
--- stay valid; a replaced run of lines changes only the characters that differ.
H.apply_hunks = function(b, hunks)
  for i = #hunks, 1, -1 do
    local h = hunks[i]
    if h.count == 0 or #h.lines == 0 then
      vim.api.nvim_buf_set_lines(b, h.start, h.start + h.count, false, h.lines)
    else
      H.set_changed_chars(b, h.start, vim.api.nvim_buf_get_lines(b, h.start, h.start + h.count, false), h.lines)
    end
  end
end

--- Applies hunks the host computed against the buffer's text at the checked changedtick
--- ({start = 0-based row, count = old lines, lines = new lines}), bottom-up.
M.set_hunks = function(b, hunks)
  local line_count = vim.api.nvim_buf_line_count(b)
  local empty = snapshot.is_empty(b, vim.api.nvim_buf_get_lines(b, 0, 1, false)) and line_count == 1
  if empty then
    local lines = {}
    for _, h in ipairs(hunks) do
      vim.list_extend(lines, h.lines)
    end
    vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
    return
  end
  H.apply_hunks(b, hunks)
end

--- Replaces old lines (at 0-based `row`) by new lines, touching only the bytes between their common
--- prefix and suffix (nvim_buf_set_text), so marks and extmarks around them stay.
H.set_changed_chars = function(b, row, old_lines, new_lines)
  local old = table.concat(old_lines, '\n')
  local new = table.concat(new_lines, '\n')
  local max = math.min(#old, #new)
  local p = 0
  while p < max and old:byte(p + 1) == new:byte(p + 1) do
    p = p + 1
  end
  local s = 0
  while s < max - p and old:byte(#old - s) == new:byte(#new - s) do
    s = s + 1
  end
  local function pos(text, off) -- byte offset → (row, col) inside the hunk
    local r, last = 0, 0
    local i = text:find('\n', 1, true)
    while i and i <= off do
      r, last = r + 1, i
      i = text:find('\n', i + 1, true)
    end
    return r, off - last
  end
  local r0, c0 = pos(old, p)
  local r1, c1 = pos(old, #old - s)
  local repl = vim.split(new:sub(p + 1, #new - s), '\n', { plain = true })
  vim.api.nvim_buf_set_text(b, row + r0, c0, row + r1, c1, repl)
end

return M
