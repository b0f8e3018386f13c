--- :CabooseAudit — the audit log's recent rows for the current workspace, newest first, in a read-only
--- scratch split. <CR> on a row with a diff shows the diff; q closes.
local M = {}
local H = {}

H.ns = vim.api.nvim_create_namespace('caboose_audit')
H.name = 'caboose://audit'
--- buf → { [lnum] = entry } for the list buffers.
H.entries = {}

--- Asks the host for the rows and shows them when it answers (nothing waits for it).
---@param count integer|nil rows to show (the host's default without it)
function M.open(count)
  local caboose = require('caboose')
  local rpc = require('caboose.rpc')
  local params = { cwd = vim.fn.getcwd() }
  if count then
    params.limit = count
  end
  caboose._request(rpc.methods.audit_list, params, function(err, res)
    if not err and type(res) == 'table' then
      H.show(res)
    end
  end)
end

H.pad = function(s, n)
  s = tostring(s)
  return #s >= n and s or s .. string.rep(' ', n - #s)
end

H.first_line = function(s)
  s = tostring(s or '')
  local line = s:match('^[^\n]*')
  return #line < #s and line .. ' …' or line
end

--- What a row did, in a few words: the command for bash, the server and arguments for an MCP tool, the
--- path(s) for the file tools.
H.what = function(e)
  local d = e.details or {}
  if d.server then
    local s = string.format('mcp %s/%s %s', d.server, tostring(d.tool), H.first_line(d.arguments))
    if type(d.durationMs) == 'number' then
      s = s .. string.format('  (%d ms)', d.durationMs)
    end
    return s
  end
  if d.command then
    local s = '$ ' .. H.first_line(d.command)
    if d.cwd and d.cwd ~= '.' then
      s = s .. '  (in ' .. d.cwd .. ')'
    end
    if d.timedOut then
      s = s .. '  → timed out'
    elseif d.signal then
      s = s .. '  → ' .. d.signal
    elseif type(d.exitCode) == 'number' then
      s = s .. '  → exit ' .. d.exitCode
    end
    return s
  end
  local s = e.path or ''
  if e.to_path then
    s = s .. ' → ' .. e.to_path
  end
  if e.has_diff then
    s = s .. '  [diff]'
  end
  return s
end

--- The files a command created, changed or deleted, one per line under its row.
H.file_lines = function(d)
  local out = {}
  local files = type(d.files) == 'table' and d.files or nil
  if files then
    for _, kind in ipairs({ 'created', 'changed', 'deleted' }) do
      for _, p in ipairs(files[kind] or {}) do
        table.insert(out, string.format('    %s  %s', kind, p))
      end
    end
  end
  if (d.filesOmitted or 0) > 0 then
    table.insert(out, string.format('    … %d more files', d.filesOmitted))
  end
  if d.scan == 'incomplete' then
    table.insert(out, '    (the workspace scan was cut by its limits: files may be missing)')
  elseif d.scan == 'failed' then
    table.insert(out, '    (no file list: the workspace scan failed)')
  end
  return out
end

H.render = function(res)
  local entries = res.entries or {}
  local lines = {
    string.format('Caboose audit log: %s', tostring(res.workspace)),
    string.format('%d entr%s, newest first.  <CR> diff   q close', #entries, #entries == 1 and 'y' or 'ies'),
  }
  local map, marks = {}, {}
  -- The chain check (as :checkhealth does it): a log that does not verify says so above its rows.
  local v = type(res.verification) == 'table' and res.verification or nil
  if v and v.ok == false then
    local msg = v.first_bad_row_id
        and string.format('TAMPERED: the hash chain breaks at row %s; rows marked ✗ (that row and every row after it) are not genuine.', tostring(v.first_bad_row_id))
      or 'TAMPERED: the audit log does not verify.'
    table.insert(lines, msg)
    table.insert(marks, { #lines - 1, 0, #msg, 'ErrorMsg' })
    if v.problem then
      table.insert(lines, '  ' .. tostring(v.problem))
      table.insert(marks, { #lines - 1, 0, #lines[#lines], 'ErrorMsg' })
    end
  elseif v then
    lines[2] = lines[2]:gsub('newest first%.', 'newest first; the hash chain verifies.', 1)
  end
  table.insert(lines, '')
  local first_row = #lines + 1
  if #entries == 0 then
    table.insert(lines, '(nothing recorded for this workspace yet)')
  end
  -- Columns as wide as their longest value, so a narrow window still shows what each row did.
  local status_of = function(e)
    return e.ok and 'ok' or (e.error_kind or 'error')
  end
  local wt, ws, wtool, wop = 0, 0, 0, 0
  for _, e in ipairs(entries) do
    wt = math.max(wt, #tostring(e.local_time or e.time))
    ws = math.max(ws, #status_of(e))
    wtool = math.max(wtool, #tostring(e.tool))
    wop = math.max(wop, #tostring(e.operation))
  end
  local any_broken = false
  for _, e in ipairs(entries) do
    any_broken = any_broken or e.broken == true
  end
  for _, e in ipairs(entries) do
    local status = status_of(e)
    local mark = any_broken and (e.broken and '✗ ' or '  ') or ''
    local head = mark .. H.pad(e.local_time or e.time, wt + 2) .. H.pad(status, ws + 2)
    table.insert(lines, head .. H.pad(e.tool, wtool) .. ' ' .. H.pad(e.operation, wop) .. ' ' .. H.what(e))
    map[#lines] = e
    if e.broken then
      table.insert(marks, { #lines - 1, 0, #lines[#lines], 'ErrorMsg' })
    else
      table.insert(marks, { #lines - 1, #mark + wt + 2, #mark + wt + 2 + #status, e.ok and 'CabooseToolOk' or 'CabooseToolError' })
    end
    for _, l in ipairs(e.details and H.file_lines(e.details) or {}) do
      table.insert(lines, l)
      map[#lines] = e
      table.insert(marks, { #lines - 1, 0, #l, 'CabooseNotice' })
    end
  end
  H.first_row = first_row
  return lines, map, marks
end

--- A read-only scratch buffer named `name` (the one already there when it is still open).
---@return integer buf, boolean created
H.scratch = function(name)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(b) and vim.api.nvim_buf_get_name(b) == name then
      return b, false
    end
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  return buf, true
end

H.buffer = function()
  local buf, created = H.scratch(H.name)
  if created then
    vim.bo[buf].filetype = 'caboose_audit'
    H.keymaps(buf, {
      q = { H.close, 'close' },
      ['<CR>'] = { H.open_diff, 'show the diff of this entry' },
    })
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      callback = function()
        H.entries[buf] = nil
      end,
    })
  end
  return buf
end

H.keymaps = function(buf, maps)
  for lhs, m in pairs(maps) do
    vim.keymap.set('n', lhs, m[1], { buffer = buf, nowait = true, desc = 'Caboose audit: ' .. m[2] })
  end
end

--- A split at the bottom showing `buf` (the window already showing it when there is one), tall enough
--- for `want` lines up to half the screen (at least 10 where the screen has them).
H.window = function(buf, want)
  local win = vim.fn.bufwinid(buf)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
    return win
  end
  local half = math.floor((vim.o.lines - vim.o.cmdheight) / 2)
  vim.cmd(string.format('botright %dsplit', math.max(3, math.min(want or half, math.max(10, half)))))
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  return win
end

H.set_lines = function(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

H.show = function(res)
  local lines, map, marks = H.render(res)
  local buf = H.buffer()
  H.set_lines(buf, lines)
  H.entries[buf] = map
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  vim.api.nvim_buf_set_extmark(buf, H.ns, 0, 0, { end_col = #lines[1], hl_group = 'CabooseTitle' })
  for _, m in ipairs(marks) do
    vim.api.nvim_buf_set_extmark(buf, H.ns, m[1], m[2], { end_col = m[3], hl_group = m[4] })
  end
  local win = H.window(buf, #lines)
  vim.api.nvim_win_set_cursor(win, { math.min(H.first_row or 4, #lines), 0 })
end

H.close = function()
  if #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.api.nvim_win_close(0, true)
  else
    vim.cmd('bwipeout')
  end
end

--- <CR>: the diff of the entry under the cursor, in a read-only split of its own (q closes it).
H.open_diff = function()
  local buf = vim.api.nvim_get_current_buf()
  local e = (H.entries[buf] or {})[vim.api.nvim_win_get_cursor(0)[1]]
  if not e then
    return
  end
  local caboose = require('caboose')
  if not e.has_diff then
    caboose._notify(string.format('entry %d (%s %s) has no diff', e.id, e.tool, e.operation))
    return
  end
  caboose._request(require('caboose.rpc').methods.audit_diff, { id = e.id }, function(err, res)
    if err or type(res) ~= 'table' or type(res.diff) ~= 'string' then
      return
    end
    local dbuf, created = H.scratch(string.format('%s/%d', H.name, e.id))
    if created then
      H.set_lines(dbuf, vim.split((res.diff:gsub('\n$', '')), '\n', { plain = true }))
      vim.bo[dbuf].filetype = 'diff'
      H.keymaps(dbuf, { q = { H.close, 'close the diff' } })
    end
    local win = vim.fn.bufwinid(dbuf)
    if win ~= -1 then
      vim.api.nvim_set_current_win(win)
      return
    end
    vim.cmd('belowright split')
    vim.api.nvim_win_set_buf(0, dbuf)
  end)
end

return M
