--- Approval float: shows the tool, its arguments and a preview (diff or command); never modal.
--- Keys in the float: <CR>/o approve once (default), a always allow this tool, r reject (asks a reason),
--- q/<Esc> hide (come back with :CabooseApproval, or answer with require('caboose').approval_respond()).
local M = {}
local H = {}

H.pending = {} ---@type table[] queue of requests, first is shown
H.win = nil
H.buf = nil

H.current = function()
  return H.pending[1]
end

--- One line of arguments; long strings (file contents, patches) are elided since the preview shows them.
H.args_line = function(args)
  if type(args) ~= 'table' then
    return tostring(args)
  end
  local parts = {}
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  for _, k in ipairs(keys) do
    local v = args[k]
    local s = type(v) == 'string' and v or vim.json.encode(v)
    s = s:gsub('\n', '\\n')
    if #s > 60 then
      s = s:sub(1, 57) .. '…'
    end
    table.insert(parts, k .. '=' .. s)
  end
  return table.concat(parts, '  ')
end

H.lines_for = function(req)
  local lines = {}
  local add = function(s)
    for _, l in ipairs(vim.split(s, '\n', { plain = true })) do
      table.insert(lines, l)
    end
  end
  add(string.format('Tool: %s   (mode: %s)', req.tool or '?', req.mode or '?'))
  add('Args: ' .. H.args_line(req.args))
  local p = req.preview
  if type(p) == 'table' and p.kind == 'command' then
    add('cwd: ' .. (p.cwd or ''))
    add('')
    add('$ ' .. (p.command or ''))
  elseif type(p) == 'table' and p.kind == 'diff' then
    add('')
    add(p.diff ~= '' and p.diff or '(no change)')
  elseif type(p) == 'table' and p.kind == 'text' then
    add('')
    add(p.text or '')
  else
    add('')
    add(vim.inspect(req.args or {}))
  end
  add('')
  add('[o/<CR>] once   [a] always for this tool   [r] reject   [q] hide')
  return lines
end

H.close_win = function()
  if H.win and vim.api.nvim_win_is_valid(H.win) then
    pcall(vim.api.nvim_win_close, H.win, true)
  end
  H.win = nil
end

H.render = function()
  local req = H.current()
  if not req then
    H.close_win()
    return
  end
  if not (H.buf and vim.api.nvim_buf_is_valid(H.buf)) then
    H.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[H.buf].bufhidden = 'hide'
    vim.bo[H.buf].filetype = 'caboose_approval'
    H.keymaps(H.buf)
  end
  local lines = H.lines_for(req)
  vim.bo[H.buf].modifiable = true
  vim.api.nvim_buf_set_lines(H.buf, 0, -1, false, lines)
  vim.bo[H.buf].modifiable = false
  H.highlight(H.buf, lines, req)
  vim.b[H.buf].caboose_approval_id = req.id
  local width = math.min(math.max(60, math.floor(vim.o.columns * 0.7)), vim.o.columns - 4)
  local height = math.min(#lines, math.max(5, math.floor(vim.o.lines * 0.6)))
  local cfg = {
    relative = 'editor',
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    style = 'minimal',
    border = 'rounded',
    title = ' Caboose: approve ' .. (req.tool or '') .. '? ',
    title_pos = 'center',
  }
  if H.win and vim.api.nvim_win_is_valid(H.win) then
    vim.api.nvim_win_set_config(H.win, cfg)
  else
    H.win = vim.api.nvim_open_win(H.buf, true, cfg)
    vim.wo[H.win].winhighlight = 'FloatBorder:CabooseApprovalBorder,FloatTitle:CabooseApprovalTitle'
    vim.wo[H.win].wrap = false
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseApprovalShown', modeline = false, data = { id = req.id, tool = req.tool } })
end

H.ns = vim.api.nvim_create_namespace('caboose_approval')

--- Diff lines in the preview get the CabooseDiff* groups (linked to DiffAdd/DiffDelete).
H.highlight = function(buf, lines, req)
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  local is_diff = type(req.preview) == 'table' and req.preview.kind == 'diff'
  for i, l in ipairs(lines) do
    local group
    if i == 1 then
      group = 'CabooseApprovalTitle'
    elseif is_diff and l:match('^%+') and not l:match('^%+%+%+ ') then
      group = 'CabooseDiffAdd'
    elseif is_diff and l:match('^%-') and not l:match('^%-%-%- ') then
      group = 'CabooseDiffDelete'
    elseif is_diff and l:match('^@@') then
      group = 'CabooseDiffHunk'
    elseif i == #lines then
      group = 'CabooseNotice'
    end
    if group then
      vim.api.nvim_buf_set_extmark(buf, H.ns, i - 1, 0, { end_row = i - 1, end_col = #l, hl_group = group, hl_eol = group ~= 'CabooseNotice' and group ~= 'CabooseApprovalTitle' })
    end
  end
end

H.keymaps = function(buf)
  local map = function(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'Caboose approval: ' .. desc })
  end
  map('<CR>', function()
    M.respond('once')
  end, 'approve once')
  map('o', function()
    M.respond('once')
  end, 'approve once')
  map('a', function()
    M.respond('always')
  end, 'always allow this tool')
  map('r', function()
    vim.ui.input({ prompt = 'Reason (optional): ' }, function(reason)
      M.respond('reject', reason)
    end)
  end, 'reject')
  map('q', H.close_win, 'hide')
  map('<Esc>', H.close_win, 'hide')
end

--- Called for each approval_request event from the host.
function M.show(req)
  table.insert(H.pending, req)
  if #H.pending == 1 then
    H.render()
  end
end

--- Re-open the float of the pending approval (after hiding it).
function M.focus()
  if H.current() then
    H.render()
    vim.api.nvim_set_current_win(H.win)
    return true
  end
  return false
end

function M.pending()
  return vim.deepcopy(H.pending)
end

--- Answer the first pending request.
---@param decision 'once'|'always'|'reject'
---@param reason string|nil
function M.respond(decision, reason)
  local req = H.current()
  if not req then
    vim.notify('(caboose) no approval is pending', vim.log.levels.WARN)
    return false
  end
  if not vim.tbl_contains({ 'once', 'always', 'reject' }, decision) then
    vim.notify('(caboose) decision must be once, always or reject', vim.log.levels.ERROR)
    return false
  end
  local rpc = require('caboose.rpc')
  local params = { id = req.id, decision = decision }
  if reason and reason ~= '' then
    params.reason = reason
  end
  local ok = require('caboose')._request(rpc.methods.approval_resolve, params)
  return ok ~= nil
end

--- The host closed a request (answered, or cancelled by :CabooseStop).
function M.close(id)
  for i, req in ipairs(H.pending) do
    if req.id == id then
      table.remove(H.pending, i)
      break
    end
  end
  if H.current() then
    H.render()
  else
    H.close_win()
  end
end

function M.close_all()
  H.pending = {}
  H.close_win()
end

return M
