--- The chat's shared state: its two buffers, the transcript's rendering state (the open reply, tool
--- lines, queued messages, the streaming thinking block, the rules lines, held notices) and the winbar's
--- status. Every part of lua/caboose/chat/ reads and writes it here, so they always agree; this module
--- requires no other. Also the few small helpers every part uses to read or write the transcript.
local S = {}

S.buf = nil ---@type integer|nil transcript
S.input = nil ---@type integer|nil message area
S.count = 0
S.ns = vim.api.nvim_create_namespace('caboose_chat')
S.ns_queue = vim.api.nvim_create_namespace('caboose_chat_queue')
S.ns_hint = vim.api.nvim_create_namespace('caboose_chat_hint')
S.ns_rules = vim.api.nvim_create_namespace('caboose_chat_rules')

S.DETAIL = '  ┆ ' -- prefix of a tool call's detail lines (folded)
-- The model's reasoning: a "thinking" line with the text below it as detail lines (caboose.chat.thinking).
S.THINKING = '💭 thinking'

--- The winbar's fields (caboose.chat.winbar).
S.status = { state = 'idle', mode = nil, model = nil, usage = nil, retry = nil, grants = nil, title = nil }

--- Whether the empty chat's hint is shown.
S.hint = false

-- What the transcript's rendering keeps about its text: reset with a new buffer or a reopened session.
-- One "## Caboose" heading per reply, however many model steps (text, tool calls) it takes.
S.reply = { open = false, last = nil } ---@type { open: boolean, last: 'text'|'tool'|'notice'|nil, parts: string[]|nil }
S.tools = {} ---@type table<string, { mark: integer, text: string, icon: integer|nil, done: boolean|nil }>
S.queue = {} ---@type { id: integer, text: string }[]
S.thinking = nil ---@type { row: integer, parts: string[], lines: integer, last: string, shown: boolean, written: integer }|nil
S.rules = nil ---@type { mark: integer, count: integer }|nil
-- Notices and errors that come while a reply's text streams wait for its end: written at once they
-- would land in the middle of a word, and the next words after them.
S.streaming = false
S.held = {} ---@type string[]

S.clear_state = function()
  S.reply = { open = false, last = nil }
  S.streaming, S.held = false, {}
  S.thinking = nil
  S.tools, S.queue = {}, {}
  S.rules = nil
end

-- Helpers ------------------------------------------------------------------------------------------

S.valid = function(buf)
  return buf ~= nil and vim.api.nvim_buf_is_valid(buf)
end

S.cfg = function()
  return require('caboose').config()
end

S.scratch = function(name, modifiable)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = modifiable
  return buf
end

--- Windows (in any tab) showing the transcript.
S.wins = function()
  if not S.valid(S.buf) then
    return {}
  end
  return vim.fn.win_findbuf(S.buf)
end

S.edit = function(buf, fn)
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  if not ok then
    error(err, 0)
  end
end

--- Rewrites one line's text in place. (nvim_buf_set_lines on the line would move the extmarks at its
--- start to the next line, and the next update of that tool would land on another tool's line.)
S.rewrite_line = function(buf, row, text)
  local old = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  vim.api.nvim_buf_set_text(buf, row, 0, row, #old, { text })
end

S.is_empty = function(buf)
  return vim.api.nvim_buf_line_count(buf) == 1 and (vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] or '') == ''
end

--- Windows whose cursor is on the last line follow the text; the others stay where the user put them
--- (and a window in Visual mode never moves).
S.followers = function(buf)
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

--- Windows in `wins` (those that followed the text) go to the last line of `buf`.
S.follow = function(buf, wins)
  local last = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(wins) do
    pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
  end
end

S.scroll_to_end = function(win)
  local last = vim.api.nvim_buf_line_count(S.buf)
  pcall(vim.api.nvim_win_set_cursor, win, { last, 0 })
end

return S
