--- :CabooseUndo and :CabooseCheckpoints — rewind the files the agent changed for a message. The host
--- decides what a rewind restores and whether a file changed since; this module asks and displays.
local M = {}
local H = {}

H.caboose = function()
  return require('caboose')
end

H.methods = function()
  return require('caboose.rpc').methods
end

H.first_line = function(s)
  local l = vim.trim(vim.split(tostring(s or ''), '\n', { plain = true })[1] or '')
  if vim.fn.strchars(l) > 60 then
    l = vim.fn.strcharpart(l, 0, 59) .. '…'
  end
  return l
end

H.plural = function(n, word)
  return string.format('%d %s%s', n, word, n == 1 and '' or 's')
end

H.time = require('caboose.ui.format').local_time

--- A list entry's time: the hour for today's checkpoints, the date too for older ones.
H.list_time = function(iso)
  local t = H.time(iso)
  local day, hm = t:match('^(%d+%-%d+%-%d+) (%d+:%d+)$')
  if day and day == os.date('%Y-%m-%d') then
    return hm
  end
  return t
end

H.confirm = function(prompt, on_yes)
  vim.ui.select({ 'Rewind', 'Cancel' }, { prompt = prompt }, function(choice)
    if choice == 'Rewind' then
      on_yes()
    end
  end)
end

--- The host put its line (res.summary) in the chat and the session; it is also said where the user is.
H.rewound = function(res)
  H.caboose()._notify(res.summary or 'rewound')
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'CabooseRewound',
    modeline = false,
    data = { id = res.id, checkpoints = res.checkpoints or {}, files = res.files or {} },
  })
end

--- Rewinds to checkpoint `id` (nil: the last message whose turn changed files). Files changed since the
--- agent wrote them are named and the user is asked before they are overwritten.
---@param id integer|nil
---@param force boolean|nil
function M.rewind(id, force)
  local params = vim.empty_dict()
  params.id = id
  params.force = force or nil
  return H.caboose()._request(H.methods().checkpoint_rewind, params, function(err, res)
    if err or type(res) ~= 'table' then
      return
    end
    if res.status == 'conflict' then
      local names = vim.tbl_map(function(c)
        return c.path .. (c.reason == 'deleted' and ' (deleted)' or c.reason == 'exists' and ' (now exists)' or '')
      end, res.conflicts or {})
      local prompt = string.format('%s changed since the agent wrote them: %s. Rewind anyway?', H.plural(#names, 'file'), table.concat(names, ', '))
      H.confirm(prompt, function()
        M.rewind(res.id, true)
      end)
      return
    end
    H.rewound(res)
  end)
end

-- The picker ---------------------------------------------------------------------------------------

H.ns = vim.api.nvim_create_namespace('caboose_checkpoints')
H.picker = nil ---@type { list_buf: integer, list_win: integer, preview_buf: integer, preview_win: integer, items: table[], shown: integer|nil }|nil

H.close = function()
  local p = H.picker
  H.picker = nil
  if not p then
    return
  end
  for _, w in ipairs({ p.list_win, p.preview_win }) do
    if vim.api.nvim_win_is_valid(w) then
      pcall(vim.api.nvim_win_close, w, true)
    end
  end
  for _, b in ipairs({ p.list_buf, p.preview_buf }) do
    if vim.api.nvim_buf_is_valid(b) then
      pcall(vim.api.nvim_buf_delete, b, { force = true })
    end
  end
end

--- The files a checkpoint covers, by name: the first three, then how many more.
H.file_names = function(files)
  local names = {}
  for i, f in ipairs(files) do
    if i > 3 then
      table.insert(names, string.format('+%d', #files - 3))
      break
    end
    table.insert(names, vim.fs.basename(f.path or ''))
  end
  return table.concat(names, ', ')
end

H.item_line = function(c)
  local files = c.files or {}
  local names = #files > 0 and ('  · ' .. H.file_names(files)) or ''
  return string.format('%s  %-8s  %s%s%s', H.list_time(c.time), H.plural(#files, 'file'), H.first_line(c.message), names, c.rewound and '  (rewound)' or '')
end

H.set_lines = function(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

H.scratch = function(ft)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = ft
  return buf
end

--- The preview of the entry under the cursor (asked for once per entry; a late answer for another is dropped).
H.show_preview = function()
  local p = H.picker
  if not p or not vim.api.nvim_win_is_valid(p.list_win) then
    return
  end
  local item = p.items[vim.api.nvim_win_get_cursor(p.list_win)[1]]
  if not item or p.shown == item.id then
    return
  end
  p.shown = item.id
  H.set_lines(p.preview_buf, { 'loading…' })
  H.caboose()._request(H.methods().checkpoint_diff, { id = item.id }, function(err, res)
    if H.picker ~= p or p.shown ~= item.id or not vim.api.nvim_buf_is_valid(p.preview_buf) then
      return true
    end
    if err then
      H.set_lines(p.preview_buf, vim.split('(caboose) ' .. tostring(err), '\n', { plain = true }))
      return true
    end
    H.render_preview(p.preview_buf, item, res or {})
  end)
end

H.render_preview = function(buf, item, res)
  local lines = { 'Message: ' .. H.first_line(item.message), '' }
  if res.rewound then
    table.insert(lines, 'Already rewound (' .. H.time(item.rewoundAt) .. '). Files:')
    for _, f in ipairs(res.files or {}) do
      table.insert(lines, '  ' .. f)
    end
    H.set_lines(buf, lines)
    return
  end
  local undoes = res.undoes or {}
  table.insert(lines, string.format('<CR> rewinds %s:', H.plural(#undoes, 'message')))
  for _, u in ipairs(undoes) do
    table.insert(lines, '  ' .. H.first_line(u.message))
  end
  if res.changed and #res.changed > 0 then
    table.insert(lines, 'Changed since the agent wrote them (you will be asked): ' .. table.concat(res.changed, ', '))
  end
  table.insert(lines, '')
  local first_diff = #lines
  if (res.diff or '') == '' then
    table.insert(lines, '(the files are already as they were before)')
  else
    vim.list_extend(lines, vim.split((res.diff:gsub('\n$', '')), '\n', { plain = true }))
  end
  H.set_lines(buf, lines)
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  for i = first_diff + 1, #lines do
    local l = lines[i]
    local group = (l:sub(1, 3) == '+++' or l:sub(1, 3) == '---') and 'CabooseTitle'
      or l:sub(1, 1) == '+' and 'CabooseDiffAdd'
      or l:sub(1, 1) == '-' and 'CabooseDiffDelete'
      or l:sub(1, 2) == '@@' and 'CabooseDiffHunk'
      or nil
    if group then
      vim.api.nvim_buf_set_extmark(buf, H.ns, i - 1, 0, { end_row = i - 1, end_col = #l, hl_group = group })
    end
  end
end

H.choose = function()
  local p = H.picker
  if not p then
    return
  end
  local item = p.items[vim.api.nvim_win_get_cursor(p.list_win)[1]]
  if not item then
    return
  end
  if item.rewound then
    H.caboose()._notify('that message was already rewound', vim.log.levels.WARN)
    return
  end
  -- Every later message not yet rewound goes too: say how many.
  local n, files = 0, {}
  for _, c in ipairs(p.items) do
    if not c.rewound and c.id >= item.id then
      n = n + 1
      for _, f in ipairs(c.files or {}) do
        files[f.path] = true
      end
    end
  end
  H.close()
  local prompt = string.format('Rewind %s (%s) to before "%s"?', H.plural(n, 'message'), H.plural(vim.tbl_count(files), 'file'), H.first_line(item.message))
  H.confirm(prompt, function()
    M.rewind(item.id)
  end)
end

H.open = function(items)
  H.close()
  local columns, rows = vim.o.columns, vim.o.lines - vim.o.cmdheight
  local width = math.max(40, math.floor(columns * 0.9))
  local height = math.max(6, math.floor(rows * 0.8))
  local list_w = math.max(30, math.floor(width * (columns < 120 and 0.5 or 0.4)))
  local preview_w = math.max(10, width - list_w - 2)
  local row = math.max(0, math.floor((rows - height - 2) / 2))
  local col = math.max(0, math.floor((columns - width - 4) / 2))
  local list_buf, preview_buf = H.scratch('caboose_checkpoints'), H.scratch('caboose_checkpoint_diff')
  local lines = vim.tbl_map(H.item_line, items)
  H.set_lines(list_buf, lines)
  for i, c in ipairs(items) do
    if c.rewound then
      vim.api.nvim_buf_set_extmark(list_buf, H.ns, i - 1, 0, { end_row = i - 1, end_col = #lines[i], hl_group = 'CabooseNotice' })
    end
  end
  local base = { relative = 'editor', row = row, height = height, style = 'minimal', border = 'rounded', title_pos = 'center' }
  local preview_win = vim.api.nvim_open_win(preview_buf, false, vim.tbl_extend('force', base, { col = col + list_w + 2, width = preview_w, title = ' Preview ', focusable = false }))
  local list_win = vim.api.nvim_open_win(list_buf, true, vim.tbl_extend('force', base, {
    col = col,
    width = list_w,
    title = ' Caboose checkpoints ',
    footer = ' <CR> rewind · q close ',
    footer_pos = 'center',
  }))
  -- One line per checkpoint (the file names at its end may go past the edge); the preview wraps, so a
  -- narrow screen still shows what a rewind would do.
  require('caboose.ui.windows').fix_buffer(list_win)
  vim.wo[list_win].cursorline = true
  vim.wo[list_win].wrap = false
  vim.wo[preview_win].wrap = true
  vim.wo[preview_win].linebreak = true
  H.picker = { list_buf = list_buf, list_win = list_win, preview_buf = preview_buf, preview_win = preview_win, items = items }
  local map = function(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = list_buf, nowait = true, desc = desc })
  end
  map('<CR>', H.choose, 'Caboose: rewind to this message')
  map('q', H.close, 'Caboose: close')
  map('<Esc>', H.close, 'Caboose: close')
  vim.api.nvim_create_autocmd('CursorMoved', { buffer = list_buf, callback = H.show_preview })
  vim.api.nvim_create_autocmd('WinLeave', {
    buffer = list_buf,
    callback = function()
      vim.schedule(H.close)
    end,
  })
  H.show_preview()
end

--- The session's checkpoints (newest first) in a picker with a diff preview; <CR> rewinds to one.
function M.pick()
  return H.caboose()._request(H.methods().checkpoint_list, {}, function(err, res)
    if err then
      return
    end
    local items = type(res) == 'table' and res.checkpoints or {}
    if #items == 0 then
      H.caboose()._notify('no checkpoints yet: the agent changed no file in this session')
      return
    end
    H.open(items)
  end)
end

--- The picker's windows (tests and statuslines): nil when closed.
function M.picker()
  local p = H.picker
  return p and { list_win = p.list_win, preview_win = p.preview_win, list_buf = p.list_buf, preview_buf = p.preview_buf } or nil
end

return M
