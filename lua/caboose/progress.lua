--- Progress of the agent's work, for progress UIs (fidget.nvim and the like) and statuslines.
---
--- Each model turn and each tool run is one task with a token. Its events are `User CabooseProgress`
--- autocmds whose `data` is
---   { token, id, kind = 'begin'|'report'|'end', title, message, percentage?, client = 'caboose',
---     value = { kind, title, message, percentage? },   -- LSP `$/progress` WorkDoneProgress value
---     params = { token, value } }                       -- as in Neovim's own LspProgress autocmd
--- in the order begin → report* → end for one token. `M.fidget()` shows them in fidget.nvim through its
--- non-LSP progress API (fidget's LSP source only polls real language servers).
local M = {}
local H = {}

H.tasks = {} ---@type table<string, { title: string, message: string, tool: string|nil }>
H.order = {} ---@type string[] tokens of running tasks, oldest first
H.turn = nil ---@type string|nil the model turn's token
H.turns = 0
H.tool_tokens = {} ---@type table<string, string> tool call id → token

H.emit = function(token, kind, message, percentage)
  local task = H.tasks[token]
  if not task then
    return
  end
  task.message = message or task.message
  local value = { kind = kind, title = task.title, message = task.message, percentage = percentage }
  local data = {
    token = token,
    id = token,
    kind = kind,
    title = task.title,
    message = task.message,
    percentage = percentage,
    client = 'caboose',
    value = value,
    params = { token = token, value = value },
  }
  if kind == 'end' then
    H.tasks[token] = nil
    H.order = vim.tbl_filter(function(t)
      return t ~= token
    end, H.order)
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseProgress', modeline = false, data = data })
end

H.begin = function(token, title, message)
  if not H.fidget_tried then
    -- fidget.nvim shows them when it is installed, unless setup({ progress = { fidget = false } }).
    H.fidget_tried = true
    local ok, cfg = pcall(function()
      return require('caboose').config().progress
    end)
    if not ok or type(cfg) ~= 'table' or cfg.fidget ~= false then
      M.fidget()
    end
  end
  if H.tasks[token] then
    return H.emit(token, 'report', message)
  end
  H.tasks[token] = { title = title, message = message }
  table.insert(H.order, token)
  H.emit(token, 'begin', message)
end

H.report = function(token, message)
  local task = H.tasks[token]
  if task and task.message ~= message then
    H.emit(token, 'report', message)
  end
end

H.finish = function(token, message)
  if H.tasks[token] then
    H.emit(token, 'end', message)
  end
end

H.tool_token = function(id)
  return 'caboose-tool-' .. tostring(id)
end

--- The running tool task of `tool` (an approval names the tool, not its call).
H.tool_named = function(tool)
  for i = #H.order, 1, -1 do
    local t = H.tasks[H.order[i]]
    if t and t.tool == tool then
      return H.order[i]
    end
  end
end

H.end_all = function(message)
  for _, token in ipairs(vim.list_extend({}, H.order)) do
    H.finish(token, message)
  end
  H.turn = nil
end

--- Host events (rpc.on_event hands every one here, after its handler).
H.on = {
  state = function(p)
    if p.state == 'idle' then
      -- Tool tasks still open (a stop) end with the turn.
      return H.end_all('done')
    end
    if not H.turn then
      H.turns = H.turns + 1
      H.turn = 'caboose-turn-' .. H.turns
      H.begin(H.turn, 'caboose', 'thinking…')
    end
    if p.state == 'executing_tools' then
      H.report(H.turn, 'running tools…')
    elseif p.state == 'pending_approval' then
      H.report(H.turn, 'waiting for your approval')
    elseif p.state == 'streaming' and p.previous ~= 'idle' then
      H.report(H.turn, 'thinking…')
    end
  end,
  reasoning_delta = function()
    if H.turn then
      H.report(H.turn, 'thinking…')
    end
  end,
  assistant_delta = function()
    if H.turn then
      H.report(H.turn, 'streaming…')
    end
  end,
  retry = function(p)
    if H.turn then
      H.report(H.turn, string.format('retrying (attempt %s)', tostring(p.attempt or '?')))
    end
  end,
  tool_call = function(p)
    if not p.id then
      return
    end
    local name = tostring(p.name or p.tool or 'tool')
    local token = H.tool_token(p.id)
    H.tool_tokens[p.id] = token
    H.begin(token, 'caboose', 'running ' .. name .. '…')
    if H.tasks[token] then
      H.tasks[token].tool = name
    end
  end,
  tool_progress = function(p)
    local token = p.id and H.tool_tokens[p.id]
    if token and p.summary then
      H.report(token, tostring(p.summary))
    end
  end,
  approval_request = function(p)
    local token = H.tool_named(tostring(p.tool or ''))
    if token then
      H.report(token, tostring(p.tool) .. ': waiting for your approval')
    end
  end,
  approval_closed = function(p)
    if p.decision == 'once' or p.decision == 'always' then
      for _, token in ipairs(H.order) do
        local t = H.tasks[token]
        if t and t.tool and t.message:match(': waiting for your approval$') then
          H.report(token, 'running ' .. t.tool .. '…')
        end
      end
    end
  end,
  tool_result = function(p)
    local token = p.id and H.tool_tokens[p.id]
    if not token then
      return
    end
    H.tool_tokens[p.id] = nil
    local t = H.tasks[token]
    local failed = p.ok == false
    H.finish(token, (t and t.tool or 'tool') .. (failed and ' failed' or ' done'))
  end,
  host_exit = function()
    H.end_all('stopped')
  end,
}

--- Called by rpc.lua with every host event.
function M.on_event(name, payload)
  local fn = H.on[name]
  if fn then
    fn(payload or {})
  end
end

--- The newest running task's message ('running bash…'), or nil when nothing runs.
function M.current()
  local token = H.order[#H.order]
  return token and H.tasks[token] and H.tasks[token].message or nil
end

--- Running tasks, oldest first: { { token, title, message } }.
function M.tasks()
  local out = {}
  for _, token in ipairs(H.order) do
    table.insert(out, { token = token, title = H.tasks[token].title, message = H.tasks[token].message })
  end
  return out
end

H.fidget_group = nil

--- Shows caboose's progress in fidget.nvim (its `fidget.progress.handle` API): "caboose: running bash…".
--- Safe to call more than once; returns false when fidget is not installed.
function M.fidget()
  local ok, progress = pcall(require, 'fidget.progress')
  if not ok or type(progress) ~= 'table' or type(progress.handle) ~= 'table' or type(progress.handle.create) ~= 'function' then
    return false
  end
  if H.fidget_group then
    return true
  end
  local handles = {}
  H.fidget_group = vim.api.nvim_create_augroup('caboose_fidget', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = H.fidget_group,
    pattern = 'CabooseProgress',
    desc = 'caboose: progress in fidget.nvim',
    callback = function(ev)
      local d = ev.data or {}
      if d.kind == 'begin' then
        handles[d.token] = progress.handle.create({ title = d.title, message = d.message, percentage = d.percentage, lsp_client = { name = 'caboose' } })
      elseif d.kind == 'report' and handles[d.token] then
        handles[d.token]:report({ message = d.message, percentage = d.percentage })
      elseif d.kind == 'end' and handles[d.token] then
        handles[d.token].message = d.message
        handles[d.token]:finish()
        handles[d.token] = nil
      end
    end,
  })
  return true
end

return M
