--- The chat's winbars: the transcript's status line (mode, state, queue, model, grants, usage, title,
--- shortened to fit its window) and the message area's key hints.
local S = require('caboose.chat.state')

local M = {}
local H = {}

H.tokens = function(n)
  n = tonumber(n) or 0
  if n >= 1000 then
    return string.format('%.1fk', n / 1000)
  end
  return tostring(n)
end

H.esc = function(s)
  return (tostring(s):gsub('%%', '%%%%'))
end

--- The transcript window's winbar: mode, state, queued messages, model, standing grants, token usage,
--- title. When it does not fit in `width` columns it gives way in this order: the title is cut (down to a
--- few words' width), the usage goes, the grants shrink to a count, the title goes; then the queue count
--- and the state take their short forms, the model is cut, the grants go, the model goes. The mode and the
--- state always show.
H.STATE_SHORT = { pending_approval = 'approval', executing_tools = 'tools' }

--- `s` cut to `w` display columns (its end replaced by …).
H.cut_width = function(s, w)
  if vim.api.nvim_strwidth(s) <= w then
    return s
  end
  local n = vim.fn.strchars(s)
  while n > 0 and vim.api.nvim_strwidth(vim.fn.strcharpart(s, 0, n)) > w - 1 do
    n = n - 1
  end
  return vim.fn.strcharpart(s, 0, n) .. '…'
end

---@param width integer|nil
function M.status_line(width)
  local s = S.status
  width = width or math.huge
  local fields = {} ---@type table<string, { plain: string, hl: string|nil }>
  local order = { 'mode', 'state', 'queued', 'model', 'grants', 'usage', 'title' }
  fields.mode = { plain = ' ' .. (s.mode or '?') .. ' ', hl = 'CabooseMode' }
  local state_short
  if s.retry and s.state ~= 'idle' then
    fields.state = { plain = 'retrying (attempt ' .. tostring(s.retry.attempt) .. ')', hl = 'CabooseWarn' }
    state_short = 'retry ' .. tostring(s.retry.attempt)
  elseif s.state and s.state ~= 'idle' then
    fields.state = { plain = (s.state:gsub('_', ' ')) }
    state_short = H.STATE_SHORT[s.state]
  end
  local queued = S.queue and #S.queue or 0
  if queued > 0 then
    fields.queued = { plain = string.format('%d queued', queued), hl = 'CabooseQueued' }
  end
  if s.model then
    fields.model = { plain = tostring(s.model) }
  end
  if s.grants and #s.grants > 0 then
    -- What runs without asking: shrinks to a count before the model is cut.
    fields.grants = { plain = 'always: ' .. table.concat(s.grants, ', '), hl = 'CabooseWarn' }
  end
  local usage_short
  if s.usage then
    local u = s.usage
    local total = 'Σ' .. H.tokens((u.session_prompt or 0) + (u.session_completion or 0))
    if u.prompt then
      local short = string.format('↑%s ↓%s %s', H.tokens(u.prompt), H.tokens(u.completion), total)
      -- Cached prompt tokens and reasoning tokens, only when the server reported real figures (issue 21).
      local cached = tonumber(u.cached) or 0
      local reasoning = tonumber(u.reasoning) or 0
      local full = string.format(
        '↑%s%s ↓%s%s %s',
        H.tokens(u.prompt),
        cached > 0 and (' (' .. H.tokens(cached) .. ' cached)') or '',
        H.tokens(u.completion),
        reasoning > 0 and (' (' .. H.tokens(reasoning) .. ' thinking)') or '',
        total
      )
      fields.usage = { plain = full }
      usage_short = short
    else
      fields.usage = { plain = total } -- a reopened session knows only its total until its first request
    end
  end
  if s.title then
    fields.title = { plain = tostring(s.title), hl = 'CabooseTitle' }
  end
  local SEP = ' │ '
  local function used()
    local w, n = 1, 0
    for _, k in ipairs(order) do
      if fields[k] then
        w = w + vim.api.nvim_strwidth(fields[k].plain) + (n > 0 and vim.api.nvim_strwidth(SEP) or 0)
        n = n + 1
      end
    end
    return w
  end
  local function cut(k, min)
    local f = fields[k]
    if f then
      local room = vim.api.nvim_strwidth(f.plain) - (used() - width)
      if room >= min then
        f.plain = H.cut_width(f.plain, room)
      end
    end
  end
  local function short(k, text)
    if fields[k] and text and vim.api.nvim_strwidth(text) < vim.api.nvim_strwidth(fields[k].plain) then
      fields[k].plain = text
    end
  end
  local function drop(k)
    fields[k] = nil
  end
  -- Cutting steps stay in force: after each later step they are tried again (a dropped field leaves
  -- room to the title or the model).
  local steps = {
    { cut = 'title', min = 12 },
    function() short('usage', usage_short) end,
    function() drop('usage') end,
    function() short('grants', #(s.grants or {}) == 1 and 'always: 1 tool' or string.format('always: %d tools', #(s.grants or {}))) end,
    function() drop('title') end,
    function() short('queued', string.format('⧗%d', queued)) end,
    function() short('state', state_short) end,
    { cut = 'model', min = 6 },
    function() drop('grants') end,
    function() drop('model') end,
    function() drop('queued') end,
  }
  local cuts = {}
  for _, step in ipairs(steps) do
    for _, c in ipairs(cuts) do
      if used() > width then
        cut(c.cut, c.min)
      end
    end
    if used() <= width then
      break
    end
    if type(step) == 'table' then
      table.insert(cuts, step)
      cut(step.cut, step.min)
    else
      step()
    end
  end
  local parts = {}
  for _, k in ipairs(order) do
    local f = fields[k]
    if f then
      local text = H.esc(f.plain)
      table.insert(parts, f.hl and ('%#' .. f.hl .. '#' .. text .. '%*') or text)
    end
  end
  return ' ' .. table.concat(parts, SEP)
end

M.apply = function(win)
  pcall(function()
    vim.wo[win].winbar = M.status_line(vim.api.nvim_win_get_width(win))
  end)
end

--- Updates the status (state, mode and any of model, usage, retry, grants) and the chat winbars.
function M.set_status(state, mode, fields)
  S.status.state = state or S.status.state
  if S.status.state == 'idle' and S.streaming then
    require('caboose.chat.transcript').release_held() -- the turn ended without the reply's end (the host exited, say)
  end
  S.status.mode = mode or S.status.mode
  for k, v in pairs(fields or {}) do
    S.status[k] = v or nil
  end
  for _, win in ipairs(S.wins()) do
    M.apply(win)
  end
end

--- The winbar text of the first chat window (for tests and statuslines).
function M.status_text()
  local win = S.wins()[1]
  return win and vim.wo[win].winbar or nil
end

-- The message area's winbar: the longest form that fits (Neovim would cut a longer one at its start).
H.INPUT_KEYS = { '<CR>/<C-s> send · @file #buffer · g? keys', '<CR> send · @file · g? keys', '<CR> send · g? keys', 'g? keys' }

M.input_bar = function(win)
  local width = vim.api.nvim_win_get_width(win)
  local keys = H.INPUT_KEYS[#H.INPUT_KEYS]
  for _, k in ipairs(H.INPUT_KEYS) do
    if vim.api.nvim_strwidth('Message ' .. k) <= width then
      keys = k
      break
    end
  end
  vim.wo[win].winbar = '%#CabooseInputTitle#Message%* %#CabooseNotice#' .. keys .. '%*'
end

return M
