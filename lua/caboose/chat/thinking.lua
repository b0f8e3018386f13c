--- The model's reasoning: a "thinking" line with the text below it as detail lines, folded once the
--- reasoning ends (the reply's text, a tool call or the end of the step); `za` on the line opens it.
local S = require('caboose.chat.state')
local T = require('caboose.chat.text')

local M = {}
local H = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

--- A reasoning delta (issue 21). Off with `chat.show_thinking = false`.
function M.delta(text)
  if text == nil or text == '' or (require('caboose').config().chat or {}).show_thinking == false then
    return
  end
  if S.status.retry then
    chat().set_status(nil, nil, { retry = false })
  end
  local buf = chat().buf()
  if not S.thinking then
    T.put_tool_line(S.reply, S.THINKING .. '…', require('caboose.chat.transcript').out)
    -- parts: the text; lines: how many lines it has; last: its last line; shown: its lines are in the buffer.
    S.thinking = { row = vim.api.nvim_buf_line_count(buf) - 1, parts = {}, lines = 1, last = '', shown = false, written = 0 }
  end
  local th = S.thinking
  S.streaming = true -- notices wait (thinking rewrites the lines under its line)
  table.insert(th.parts, text)
  local _, newlines = text:gsub('\n', '')
  local before = th.lines
  th.lines = th.lines + newlines
  if th.shown then
    H.write(buf, th, text)
  elseif before ~= th.lines or #th.parts == 1 then
    -- Collapsed while it streams: the line counts what arrived (za shows it).
    S.edit(buf, function()
      S.rewrite_line(buf, th.row, string.format('%s… (%d line%s, za)', S.THINKING, th.lines, th.lines == 1 and '' or 's'))
    end)
  end
end

--- Writes `text` (the reasoning that arrived since the last write) under the thinking line: only its
--- last line and the new ones are rewritten (a long reasoning streams thousands of deltas).
H.write = function(buf, th, text)
  local lines = vim.split(th.last .. text, '\n', { plain = true })
  local first = th.written > 0 and th.written or 1 -- 1-based detail line where `lines` start
  local follow = S.followers(buf)
  S.edit(buf, function()
    vim.api.nvim_buf_set_lines(buf, th.row + first, th.row + 1 + th.written, false, T.detail_lines({ table.concat(lines, '\n') }))
  end)
  th.written = first - 1 + #lines
  th.last = lines[#lines]
  S.follow(buf, follow)
end

--- `za` on a thinking line that is still streaming: its text so far is shown, and follows the stream.
function M.show()
  local th = S.thinking
  if not th or th.shown then
    return
  end
  th.shown = true
  local buf = chat().buf()
  S.edit(buf, function()
    S.rewrite_line(buf, th.row, S.THINKING .. '…')
  end)
  H.write(buf, th, table.concat(th.parts))
end

--- Ends a streaming thinking block: its line says how long it is and its text is folded under it.
M.close = function()
  local th = S.thinking
  if not th then
    return
  end
  S.thinking = nil
  local buf = chat().buf()
  local shown = th.shown
  if not shown then
    H.write(buf, th, table.concat(th.parts))
  end
  S.edit(buf, function()
    S.rewrite_line(buf, th.row, string.format('%s (%d line%s, za)', S.THINKING, th.written, th.written == 1 and '' or 's'))
  end)
  -- The fold holds the "thinking" line too: one line of reasoning still folds ('foldminlines').
  local range = { th.row + 1, th.row + 1 + th.written }
  require('caboose.chat.tools').fold(buf, { range })
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
function M.text()
  return S.thinking and table.concat(S.thinking.parts) or nil
end

return M
