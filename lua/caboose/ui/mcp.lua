--- :CabooseMcp — the MCP servers, their state and their tools, in a float. r restarts the server under the
--- cursor; q or <Esc> closes. Refreshed while open when a server changes state (User CabooseMcpChanged).
local M = {}
local H = {}

H.ns = vim.api.nvim_create_namespace('caboose_mcp')
H.buf = nil ---@type integer|nil
H.win = nil ---@type integer|nil
--- Line number → server name, for `r`.
H.servers_at = {}

H.state_words = {
  not_started = 'not started',
  starting = 'starting…',
  running = 'running',
  failed = 'failed',
  disabled = 'disabled',
}

H.state_hl = {
  running = 'CabooseToolOk',
  failed = 'CabooseToolError',
}

--- Asks the host (which starts the servers not started yet) and shows the answer.
function M.open()
  require('caboose')._request(require('caboose.rpc').methods.mcp_list, { start = true }, function(err, res)
    if not err and type(res) == 'table' then
      H.show(res, true)
    end
  end)
end

--- Redraws the float when it is open (nothing is started for it).
function M.refresh()
  if not H.is_open() then
    return
  end
  require('caboose')._request(require('caboose.rpc').methods.mcp_list, { start = false }, function(err, res)
    if not err and type(res) == 'table' and H.is_open() then
      H.show(res, false)
    end
  end)
end

--- Restarts server `name` and says how that went.
function M.restart(name)
  local caboose = require('caboose')
  caboose._notify(string.format("restarting MCP server '%s'…", name))
  return caboose._request(require('caboose.rpc').methods.mcp_restart, { name = name }, function(err, res)
    if err or type(res) ~= 'table' then
      return
    end
    for _, s in ipairs(res.servers or {}) do
      if s.name == name then
        if s.state == 'running' then
          caboose._notify(string.format("MCP server '%s' is running (%d tools)", name, #(s.tools or {})))
        else
          caboose._notify(string.format("MCP server '%s': %s%s", name, H.state_words[s.state] or s.state, s.reason and (': ' .. s.reason) or ''), vim.log.levels.ERROR)
        end
      end
    end
    if H.is_open() then
      H.show(res, false)
    end
  end)
end

H.is_open = function()
  return H.win ~= nil and vim.api.nvim_win_is_valid(H.win)
end

H.pad = function(s, n)
  s = tostring(s)
  local w = vim.fn.strdisplaywidth(s)
  return w >= n and s or s .. string.rep(' ', n - w)
end

--- What a call of the tool does in the current mode, in a word or two.
H.permission = function(t)
  if t.not_offered then
    return 'not offered'
  elseif t.permission == 'block' then
    return 'blocked'
  elseif t.permission == 'ask' then
    return 'asks'
  elseif t.allowed then
    return 'runs (allowed)'
  elseif t.granted then
    return 'runs (always)'
  end
  return 'runs'
end

H.render = function(res)
  local servers = res.servers or {}
  local lines = { string.format('MCP servers (%s mode)   r restart   q close', tostring(res.mode)), '' }
  local marks, at = {}, {}
  local mark = function(col, end_col, hl)
    table.insert(marks, { #lines - 1, col, end_col, hl })
  end
  if #servers == 0 then
    table.insert(lines, 'No MCP server is configured: see :help caboose-mcp')
  end
  local width = 0
  for _, s in ipairs(servers) do
    for _, t in ipairs(s.tools or {}) do
      width = math.max(width, vim.fn.strdisplaywidth(t.name))
    end
  end
  for i, s in ipairs(servers) do
    if i > 1 then
      table.insert(lines, '')
    end
    local state = H.state_words[s.state] or s.state
    if s.state == 'running' then
      state = string.format('%s, %d tool%s', state, #(s.tools or {}), #(s.tools or {}) == 1 and '' or 's')
    end
    local head = string.format('%s  %s  %s', s.name, state, s.target or s.transport)
    table.insert(lines, head)
    at[#lines] = s.name
    mark(0, #s.name, 'CabooseTitle')
    mark(#s.name + 2, #s.name + 2 + #state, H.state_hl[s.state] or 'CabooseNotice')
    if s.reason then
      table.insert(lines, '  ' .. s.reason:gsub('\n', ' '))
      at[#lines] = s.name
      mark(0, #lines[#lines], 'CabooseToolError')
    end
    if s.server_info then
      table.insert(lines, '  server: ' .. s.server_info)
      at[#lines] = s.name
      mark(0, #lines[#lines], 'CabooseNotice')
    end
    for _, t in ipairs(s.tools or {}) do
      local perm = H.permission(t)
      local desc = t.description ~= '' and t.description or '(no description)'
      if t.read_only then
        desc = desc .. '  [read-only]'
      end
      if t.not_offered then
        desc = desc .. '  [' .. tostring(t.not_offered) .. ']'
      end
      local line = string.format('  %s  %s  %s', H.pad(t.name, width), H.pad(perm, 14), desc)
      table.insert(lines, line)
      at[#lines] = s.name
      local col = 2 + #H.pad(t.name, width) + 2
      mark(col, col + #perm, perm == 'asks' and 'CabooseNotice' or perm == 'blocked' and 'CabooseToolError' or 'CabooseToolOk')
    end
  end
  return lines, marks, at
end

H.buffer = function()
  if H.buf and vim.api.nvim_buf_is_valid(H.buf) then
    return H.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'caboose_mcp'
  pcall(vim.api.nvim_buf_set_name, buf, 'caboose://mcp')
  local map = function(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'Caboose MCP: ' .. desc })
  end
  map('q', H.close, 'close')
  map('<Esc>', H.close, 'close')
  map('r', function()
    local name = H.servers_at[vim.api.nvim_win_get_cursor(0)[1]]
    if name then
      M.restart(name)
    end
  end, 'restart the server under the cursor')
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    callback = function()
      H.buf, H.win, H.servers_at = nil, nil, {}
    end,
  })
  H.buf = buf
  return buf
end

H.show = function(res, focus)
  local lines, marks, at = H.render(res)
  local buf = H.buffer()
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  H.servers_at = at
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  vim.api.nvim_buf_set_extmark(buf, H.ns, 0, 0, { end_col = #lines[1], hl_group = 'CabooseTitle' })
  for _, m in ipairs(marks) do
    pcall(vim.api.nvim_buf_set_extmark, buf, H.ns, m[1], m[2], { end_col = m[3], hl_group = m[4] })
  end
  local width = 40
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 1, math.max(20, vim.o.columns - 6))
  local height = math.min(#lines, math.max(3, vim.o.lines - 6))
  local cfg = require('caboose.ui.windows').centered(width, height)
  if H.is_open() then
    vim.api.nvim_win_set_config(H.win, cfg)
    if focus then
      vim.api.nvim_set_current_win(H.win)
    end
    return
  end
  cfg.style = 'minimal'
  cfg.border = 'rounded'
  cfg.title = ' Caboose: MCP servers '
  cfg.title_pos = 'center'
  H.win = vim.api.nvim_open_win(buf, true, cfg)
  require('caboose.ui.windows').fix_buffer(H.win)
  vim.wo[H.win].wrap = false
  vim.wo[H.win].cursorline = true
  pcall(vim.api.nvim_win_set_cursor, H.win, { math.min(3, #lines), 0 })
end

H.close = function()
  if H.is_open() then
    vim.api.nvim_win_close(H.win, true)
  end
  H.win = nil
end

return M
