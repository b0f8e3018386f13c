--- Project rules: the lines naming the files a conversation follows (the chat's first lines), dimmed,
--- and replaced in place when the files are read again.
local S = require('caboose.chat.state')

local M = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

--- Dims `count` lines from `row` and remembers where they are (a second reading replaces them).
M.mark = function(buf, row, count)
  vim.api.nvim_buf_clear_namespace(buf, S.ns_rules, 0, -1)
  local last = vim.api.nvim_buf_get_lines(buf, row + count - 1, row + count, false)[1] or ''
  local mark = vim.api.nvim_buf_set_extmark(buf, S.ns_rules, row, 0, { end_row = row + count - 1, end_col = #last, hl_group = 'CabooseRules', priority = 200 })
  S.rules = { mark = mark, count = count }
end

--- Host event `rules`: shows which rules files the conversation follows, or replaces the lines shown
--- before (the files are read again when the first message is sent).
---@param lines string[]
function M.show(lines)
  if not lines or #lines == 0 then
    return
  end
  local buf = chat().buf()
  local row
  if S.rules then
    row = vim.api.nvim_buf_get_extmark_by_id(buf, S.ns_rules, S.rules.mark, {})[1]
  end
  if row then
    local count = S.rules.count
    S.edit(buf, function()
      vim.api.nvim_buf_set_lines(buf, row, row + count, false, lines)
    end)
  else
    local alone = S.is_empty(buf)
    chat().block(table.concat(lines, '\n'))
    row = vim.api.nvim_buf_line_count(buf) - #lines
    if alone then
      require('caboose.chat.transcript').render_hint()
    end
  end
  M.mark(buf, row, #lines)
end

--- The rules lines the chat shows (none: {}).
function M.lines()
  if not (S.valid(S.buf) and S.rules) then
    return {}
  end
  local row = vim.api.nvim_buf_get_extmark_by_id(S.buf, S.ns_rules, S.rules.mark, {})[1]
  return row and vim.api.nvim_buf_get_lines(S.buf, row, row + S.rules.count, false) or {}
end

return M
