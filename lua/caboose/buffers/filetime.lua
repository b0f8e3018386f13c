--- The file's time and size as the buffer stores them, kept in step with the agent's write, so no
--- `:checktime` (W11/W12) and no later `:w` ("changed since reading it") asks anything, and nothing reloads.
local M = {}
local H = {}

--- Runs `fn` in buffer `b` with 'autoread' off; 'autoread' and 'eventignore' are restored after, and an
--- error `fn` raised is raised again.
H.without_autoread = function(b, fn)
  vim.api.nvim_buf_call(b, function()
    local ei = vim.o.eventignore
    vim.cmd('setlocal noautoread')
    local ok, err = pcall(fn)
    vim.o.eventignore = ei
    vim.cmd('setlocal autoread<')
    if not ok then
      error(err, 0)
    end
  end)
end

--- FileChangedShell ignored (until H.without_autoread restores 'eventignore').
H.ignore_file_changed_shell = function()
  local ei = vim.o.eventignore
  vim.o.eventignore = ei == '' and 'FileChangedShell' or (ei .. ',FileChangedShell')
end

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

--- Stores the file's current time in the buffer as if Neovim had read it, so neither `:checktime` (W11)
--- nor a later `:w` ("changed since reading it") asks anything, and nothing reloads. With 'autoread'
--- off and FileChangedShell ignored, `:checktime` that finds the same size and content records the time
--- as read. Neovim compares against the size it stored, so when the agent changed the size: first let
--- `:checktime` store the new size (a handled FileChangedShell keeps it silent), then move the file's
--- time on by a millisecond so the second `:checktime` runs the content comparison. Used when the user
--- has FileChangedShell autocommands (the quicker way below would run them with "conflict").
M.sync_file_time = function(b, size_changed)
  H.without_autoread(b, function()
    if size_changed then
      H.checktime_quietly(b)
      local name = vim.api.nvim_buf_get_name(b)
      local st = vim.uv.fs_stat(name)
      if st then
        local t = st.mtime.sec + st.mtime.nsec / 1e9 + 0.001
        vim.uv.fs_utime(name, st.atime.sec + st.atime.nsec / 1e9, t)
      end
    end
    H.ignore_file_changed_shell()
    vim.cmd('silent checktime ' .. b)
  end)
end

--- Whether `:write` of buffer `b` would run only the one-shot BufWriteCmd of M.record_written and
--- nothing else: no BufWriteCmd of the user's or of another plugin (any pattern), no ignored events
--- ('eventignore', 'eventignorewin': Neovim would then write the file itself), a 'filetype' (an empty
--- one makes `:write` detect it again and apply modelines), a normal file buffer.
H.can_record_by_write = function(b)
  if vim.o.eventignore ~= '' or vim.bo[b].buftype ~= '' or vim.bo[b].filetype == '' then
    return false
  end
  local name = vim.api.nvim_buf_get_name(b)
  local tail = vim.fn.fnamemodify(name, ':t')
  for _, au in ipairs(vim.api.nvim_get_autocmds({ event = 'BufWriteCmd' })) do
    if au.buffer then
      if au.buffer == b then
        return false
      end
    else
      -- A pattern that might match the file (case ignored, full name or tail): not used.
      local ok, re = pcall(vim.regex, '\\c' .. vim.fn.glob2regpat(au.pattern))
      if not ok or re:match_str(name) or re:match_str(tail) then
        return false
      end
    end
  end
  for _, w in ipairs(vim.fn.win_findbuf(b)) do
    local ok, v = pcall(vim.api.nvim_get_option_value, 'eventignorewin', { win = w })
    if ok and v ~= '' then
      return false
    end
  end
  return true
end

--- Records the file the agent just wrote as the buffer's file "as read" (its time and size: neither
--- `:checktime` (W11/W12) nor a later `:w` ("changed since reading it") asks anything), without
--- reading or comparing it and without touching the file: a `:write` whose only BufWriteCmd (one-shot,
--- buffer-local) does nothing. Neovim then takes the file as written by that autocommand and stores
--- its time, size and mode (`ml_timestamp`), as after any write. `lockmarks` keeps '[ and '] on the
--- agent's lines. The buffer must be clean and hold the file's text. `expect` (ino, size, mtime, ctime)
--- is the file the host wrote: another file there (a writer came in between — the ctime tells one that
--- wrote as many bytes in place and put the mtime back) is left for `:checktime` to report. Returns false
--- when this cannot be used (H.can_record_by_write); nothing was done then.
M.record_written = function(b, expect)
  if not H.can_record_by_write(b) then
    return false
  end
  local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(b))
  if
    not st
    or (expect.ino and st.ino ~= expect.ino)
    or (expect.size and st.size ~= expect.size)
    or (expect.mtime_sec and (st.mtime.sec ~= expect.mtime_sec or st.mtime.nsec ~= expect.mtime_nsec))
    or (expect.ctime_sec and (st.ctime.sec ~= expect.ctime_sec or st.ctime.nsec ~= expect.ctime_nsec))
  then
    return false
  end
  local ran = false
  local id = vim.api.nvim_create_autocmd('BufWriteCmd', {
    buffer = b,
    callback = function()
      ran = true
      vim.bo[b].modified = false
    end,
  })
  local ok = pcall(vim.api.nvim_buf_call, b, function()
    -- `!`: a 'readonly' buffer (`:view`) would otherwise refuse or, with 'confirm', ask.
    vim.cmd('silent lockmarks keepalt write!')
  end)
  pcall(vim.api.nvim_del_autocmd, id)
  return ok and ran
end

--- Stores the file's new time and size in the buffer while it is still marked modified (after the
--- agent's lines landed, before 'nomodified'): `:checktime` then sees a "conflict", stores the file's
--- time and size without comparing any content, and a handled FileChangedShell keeps it silent. From
--- then on no `:checktime` (W11/W12) asks anything and nothing reloads.
M.store_file_info = function(b)
  H.without_autoread(b, function()
    H.checktime_quietly(b)
  end)
end

--- Records the file's time as read (what keeps a later `:w` from asking "changed since reading it").
--- Neovim records it only when `:checktime` finds the same size and the same content in a clean buffer,
--- which means comparing the whole file: so this runs on the next main-loop turn, after the agent's
--- write has returned (the tool does not wait for the comparison). The file's time is moved on by a
--- millisecond so `:checktime` runs the comparison (store_file_info stored the current time). Skipped
--- when the buffer was changed meanwhile or the file is no longer the one just stored (`st`): a
--- `:checktime` then reports what really happened, as it would have anyway.
M.record_read_time_later = function(b, st)
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
    H.without_autoread(b, function()
      H.ignore_file_changed_shell()
      pcall(vim.cmd, 'silent checktime ' .. b)
    end)
  end)
end

return M
