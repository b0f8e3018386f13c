--- Live buffers for the host's file tools (src/host/nvim-buffers.ts is the only caller).
--- Snapshots give the bytes a buffer would write; updates land the agent's text in place as one undo
--- step (views, marks and extmarks outside the changed hunks kept), sync a clean buffer's stored file
--- time without a W11/W12 prompt, reload, wipe or rename buffers. Every function is one RPC round trip.
--- (`find` is shared with lua/caboose/diagnostics.lua.)
local M = {}
local H = {}

-- Helpers ====================================================================

--- Loaded normal buffer whose file is `path` (absolute, realpath-resolved), or nil.
--- With `any`, unloaded buffers count too (for wipe and rename).
H.find = function(path, any)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if (any or vim.api.nvim_buf_is_loaded(b)) and vim.bo[b].buftype == '' then
      local name = vim.api.nvim_buf_get_name(b)
      if name == path or (name ~= '' and vim.uv.fs_realpath(name) == path) then
        return b
      end
    end
  end
  return nil
end

H.encoding = function(fenc)
  fenc = (fenc or ''):lower()
  if fenc == '' or fenc == 'utf8' then
    return 'utf-8'
  end
  return fenc
end

H.BOMS = {
  ['utf-8'] = '\239\187\191',
  ['ucs-2'] = '\254\255',
  ['utf-16'] = '\254\255',
  ['ucs-2le'] = '\255\254',
  ['utf-16le'] = '\255\254',
  ['ucs-4'] = '\0\0\254\255',
  ['utf-32'] = '\0\0\254\255',
  ['ucs-4le'] = '\255\254\0\0',
  ['utf-32le'] = '\255\254\0\0',
}

H.format = function(b)
  local bo = vim.bo[b]
  local ff = bo.fileformat
  local fenc = H.encoding(bo.fileencoding)
  return {
    eol = ff == 'dos' and '\r\n' or ff == 'mac' and '\r' or '\n',
    final_eol = bo.eol or (bo.fixeol and not bo.binary),
    bom = bo.bomb and not bo.binary and H.BOMS[fenc] ~= nil,
    fileencoding = fenc,
  }
end

--- A buffer with no lines at all (what `ggdG` leaves) writes 0 bytes; one empty line writes one EOL.
H.is_empty = function(b, lines)
  if #lines ~= 1 or lines[1] ~= '' then
    return false
  end
  return vim.api.nvim_buf_call(b, function()
    return vim.fn.line2byte(vim.fn.line('$') + 1) == -1
  end)
end

--- The bytes `:write` would put on disk for buffer `b`.
--- The bytes `:write` would produce; for a non-UTF-8 'fileencoding' also the same text in UTF-8 (what
--- the tools read and edit; no BOM).
H.bytes = function(b, fmt)
  local lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  if H.is_empty(b, lines) then
    return ''
  end
  local text = table.concat(lines, fmt.eol)
  if fmt.final_eol then
    text = text .. fmt.eol
  end
  local utf8
  if fmt.fileencoding ~= 'utf-8' and not vim.bo[b].binary then
    utf8 = text
    text = vim.iconv(text, 'utf-8', fmt.fileencoding) or text
  end
  if fmt.bom then
    text = H.BOMS[fmt.fileencoding] .. text
  end
  return text, utf8
end

H.snapshot = function(b, with_bytes)
  local fmt = H.format(b)
  local modified = vim.bo[b].modified
  local snap = {
    bufnr = b,
    modified = modified,
    changedtick = vim.api.nvim_buf_get_changedtick(b),
    format = fmt,
  }
  if with_bytes == 'always' or (with_bytes == 'modified' and modified) then
    local bytes, utf8 = H.bytes(b, fmt)
    snap.bytes64 = vim.base64.encode(bytes)
    if utf8 then
      snap.utf8_64 = vim.base64.encode(utf8)
    end
  end
  return snap
end

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
H.set_text = function(b, new)
  local old_lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  local empty = H.is_empty(b, old_lines)
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
H.set_hunks = function(b, hunks)
  local line_count = vim.api.nvim_buf_line_count(b)
  local empty = H.is_empty(b, vim.api.nvim_buf_get_lines(b, 0, 1, false)) and line_count == 1
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

--- Stores the file's current time in the buffer as if Neovim had read it, so neither `:checktime` (W11)
--- nor a later `:w` ("changed since reading it") asks anything, and nothing reloads. With 'autoread'
--- off and FileChangedShell ignored, `:checktime` that finds the same size and content records the time
--- as read. Neovim compares against the size it stored, so when the agent changed the size: first let
--- `:checktime` store the new size (a handled FileChangedShell keeps it silent), then move the file's
--- time on by a millisecond so the second `:checktime` runs the content comparison. Used when the user
--- has FileChangedShell autocommands (the quicker way below would run them with "conflict").
--- `:checktime` of buffer `b` with a FileChangedShell that answers nothing: Neovim stores the file's time
--- and size and neither asks nor reloads. Raises what `:checktime` raised.
H.checktime_quietly = function(b)
  local id = vim.api.nvim_create_autocmd('FileChangedShell', {
    buffer = b,
    callback = function()
      vim.v.fcs_choice = ''
    end,
  })
  local ok, err = pcall(vim.cmd, 'silent checktime ' .. b)
  pcall(vim.api.nvim_del_autocmd, id)
  if not ok then
    error(err, 0)
  end
end

H.sync_file_time = function(b, size_changed)
  vim.api.nvim_buf_call(b, function()
    local ei = vim.o.eventignore
    vim.cmd('setlocal noautoread')
    local ok, err = pcall(function()
      if size_changed then
        H.checktime_quietly(b)
        local name = vim.api.nvim_buf_get_name(b)
        local st = vim.uv.fs_stat(name)
        if st then
          local t = st.mtime.sec + st.mtime.nsec / 1e9 + 0.001
          vim.uv.fs_utime(name, st.atime.sec + st.atime.nsec / 1e9, t)
        end
      end
      vim.o.eventignore = ei == '' and 'FileChangedShell' or (ei .. ',FileChangedShell')
      vim.cmd('silent checktime ' .. b)
    end)
    vim.o.eventignore = ei
    vim.cmd('setlocal autoread<')
    if not ok then
      error(err, 0)
    end
  end)
end

--- Stores the file's new time and size in the buffer while it is still marked modified (after the
--- agent's lines landed, before 'nomodified'): `:checktime` then sees a "conflict", stores the file's
--- time and size without comparing any content, and a handled FileChangedShell keeps it silent. From
--- then on no `:checktime` (W11/W12) asks anything and nothing reloads.
H.store_file_info = function(b)
  vim.api.nvim_buf_call(b, function()
    vim.cmd('setlocal noautoread')
    local ok, err = pcall(H.checktime_quietly, b)
    vim.cmd('setlocal autoread<')
    if not ok then
      error(err, 0)
    end
  end)
end

--- Records the file's time as read (what keeps a later `:w` from asking "changed since reading it").
--- Neovim records it only when `:checktime` finds the same size and the same content in a clean buffer,
--- which means comparing the whole file: so this runs on the next main-loop turn, after the agent's
--- write has returned (the tool does not wait for the comparison). The file's time is moved on by a
--- millisecond so `:checktime` runs the comparison (H.store_file_info stored the current time). Skipped
--- when the buffer was changed meanwhile or the file is no longer the one just stored (`st`): a
--- `:checktime` then reports what really happened, as it would have anyway.
H.record_read_time_later = function(b, st)
  vim.schedule(function()
    if not vim.api.nvim_buf_is_loaded(b) or vim.bo[b].modified then
      return
    end
    local name = vim.api.nvim_buf_get_name(b)
    local now = vim.uv.fs_stat(name)
    if
      not now
      or now.ino ~= st.ino
      or now.size ~= st.size
      or now.mtime.sec ~= st.mtime.sec
      or now.mtime.nsec ~= st.mtime.nsec
    then
      return
    end
    local t = now.mtime.sec + now.mtime.nsec / 1e9 + 0.001
    if not vim.uv.fs_utime(name, now.atime.sec + now.atime.nsec / 1e9, t) then
      return
    end
    vim.api.nvim_buf_call(b, function()
      local ei = vim.o.eventignore
      vim.cmd('setlocal noautoread')
      vim.o.eventignore = ei == '' and 'FileChangedShell' or (ei .. ',FileChangedShell')
      pcall(vim.cmd, 'silent checktime ' .. b)
      vim.o.eventignore = ei
      vim.cmd('setlocal autoread<')
    end)
  end)
end

--- Windows (any tab) showing `b`, with their views.
H.save_views = function(b)
  local views = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b then
      views[#views + 1] = { win = w, view = vim.api.nvim_win_call(w, vim.fn.winsaveview) }
    end
  end
  return views
end

H.restore_views = function(views)
  for _, v in ipairs(views) do
    if vim.api.nvim_win_is_valid(v.win) then
      vim.api.nvim_win_call(v.win, function()
        vim.fn.winrestview(v.view)
      end)
    end
  end
end

-- Operations =================================================================

H.op_set = function(op)
  local b = H.find(op.abs)
  if not b then
    return { ok = false, reason = 'not_loaded' }
  end
  if op.changedtick and vim.api.nvim_buf_get_changedtick(b) ~= op.changedtick then
    return { ok = false, reason = 'changed' }
  end
  if op.clean and vim.bo[b].modified then
    return { ok = false, reason = 'changed' }
  end
  vim.api.nvim_buf_call(b, function()
    -- A new undo step: the agent's change never merges with the user's last one.
    vim.cmd('let &l:undolevels = &l:undolevels')
    -- The undo step records whether the buffer was modified before it: for a clean update it is marked
    -- so, and `u` then leaves the buffer modified (the disk keeps the new text), as after a :write.
    if op.clean then
      vim.bo[b].modified = true
    end
    if op.hunks then
      H.set_hunks(b, op.hunks)
    else
      H.set_text(b, op.text)
    end
    vim.cmd('let &l:undolevels = &l:undolevels')
  end)
  if op.clean then
    -- The user's own FileChangedShell autocommands never see the agent's write: with any, the file time
    -- is recorded as before (one content compare, on this turn).
    local quick = #vim.api.nvim_get_autocmds({ event = 'FileChangedShell' }) == 0
    if quick then
      -- Still marked modified here: the file's new time and size are stored without a content compare.
      H.store_file_info(b)
    end
    if op.final_eol ~= nil then
      vim.bo[b].eol = op.final_eol
    end
    if op.bom ~= nil then
      vim.bo[b].bomb = op.bom
    end
    vim.bo[b].modified = false
    if not quick then
      H.sync_file_time(b, op.size_changed)
    else
      local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(b))
      if st then
        H.record_read_time_later(b, st)
      end
    end
  end
  local res = { ok = true, changedtick = vim.api.nvim_buf_get_changedtick(b) }
  if op.return_bytes then
    res.bytes64 = vim.base64.encode(H.bytes(b, H.format(b)))
  end
  return res
end

--- The clean buffer an op acts on: `b`, or nil and the op's result (not loaded: nothing to do; unsaved
--- changes: refused).
H.clean_target = function(abs, include_unloaded)
  local b = H.find(abs, include_unloaded)
  if not b then
    return nil, { ok = true }
  end
  if vim.bo[b].modified then
    return nil, { ok = false, reason = 'changed' }
  end
  return b
end

--- Re-reads `b` from disk with `:edit!`, keeping every window's view.
H.reread = function(b)
  local views = H.save_views(b)
  vim.api.nvim_buf_call(b, function()
    vim.cmd('silent edit!')
  end)
  H.restore_views(views)
end

H.op_reload = function(op)
  local b, res = H.clean_target(op.abs)
  if not b then
    return res
  end
  H.reread(b)
  return { ok = true }
end

--- Another buffer for windows that show a buffer about to be wiped (the alternate, or a new empty one).
H.replacement = function(b)
  for _, o in ipairs(vim.api.nvim_list_bufs()) do
    if o ~= b and vim.bo[o].buflisted and vim.api.nvim_buf_is_loaded(o) and vim.bo[o].buftype == '' then
      return o
    end
  end
  return vim.api.nvim_create_buf(true, false)
end

H.op_wipe = function(op)
  local b, res = H.clean_target(op.abs, true)
  if not b then
    return res
  end
  local other
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(w) == b then
      other = other or H.replacement(b)
      vim.api.nvim_win_set_buf(w, other)
    end
  end
  vim.api.nvim_buf_delete(b, { force = true })
  return { ok = true }
end

H.op_rename = function(op)
  local b, res = H.clean_target(op.from, true)
  if not b then
    return res
  end
  -- A clean buffer already named like the destination (e.g. `:edit new.txt` never written) makes way.
  local target = H.find(op.to, true)
  if target and target ~= b then
    if vim.bo[target].modified then
      return { ok = false, reason = 'target_modified' }
    end
    H.op_wipe({ abs = op.to })
  end
  vim.api.nvim_buf_set_name(b, op.to)
  -- Renaming leaves an unlisted, unloaded buffer with the old name behind: drop it.
  local old = H.find(op.from, true)
  if old and old ~= b and not vim.api.nvim_buf_is_loaded(old) then
    pcall(vim.api.nvim_buf_delete, old, { force = true })
  end
  if vim.api.nvim_buf_is_loaded(b) then
    -- Renaming marks the buffer "not edited" (E13 on :w); re-reading the identical file clears that.
    H.reread(b)
  end
  return { ok = true }
end

-- Public =====================================================================

--- The loaded normal buffer of `path` (absolute, realpath-resolved), or nil (also used by diagnostics.lua).
---@param path string
---@return integer|nil
function M.find(path)
  return H.find(path)
end

--- Snapshots of the loaded buffers of `paths` (map path → snapshot; missing = not loaded).
---@param paths string[]
---@param with_bytes 'modified'|'always'|'never'
---@param have? table<string, integer> changedticks whose bytes the host already holds (not sent again)
function M.status(paths, with_bytes, have)
  local out = {}
  for _, p in ipairs(paths) do
    local b = H.find(p)
    if b then
      local known = type(have) == 'table' and have[p] == vim.api.nvim_buf_get_changedtick(b)
      out[p] = H.snapshot(b, known and 'never' or with_bytes)
    end
  end
  return next(out) and out or vim.empty_dict()
end

--- Snapshots (with bytes) of every loaded file buffer with unsaved changes: list of {path, snapshot}.
function M.modified()
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' and vim.bo[b].modified then
      local name = vim.api.nvim_buf_get_name(b)
      if name ~= '' then
        local snap = H.snapshot(b, 'always')
        snap.path = vim.uv.fs_realpath(name) or name
        out[#out + 1] = snap
      end
    end
  end
  return out
end

--- Runs buffer operations in order; every 'set' is checked (changedtick, modified) before any runs,
--- so a batch lands in all its buffers or in none.
---@param ops table[]
function M.update(ops)
  local results = {}
  for i, op in ipairs(ops) do
    if op.type == 'set' and not op.clean then
      local b = H.find(op.abs)
      if b and op.changedtick and vim.api.nvim_buf_get_changedtick(b) ~= op.changedtick then
        for j = 1, #ops do
          results[j] = { ok = false, reason = j == i and 'changed' or 'skipped' }
        end
        return results
      end
    end
  end
  for i, op in ipairs(ops) do
    local fn = H['op_' .. op.type]
    local ok, res = pcall(fn, op)
    results[i] = ok and res or { ok = false, reason = 'error', message = tostring(res) }
  end
  return results
end

return M
