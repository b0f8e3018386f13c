--- The buffer operations the host asks for (caboose.buffers `update`), one function a type: set (the
--- agent's text, one undo step), reload, wipe and rename (clean buffers only).
local snapshot = require('caboose.buffers.snapshot')
local text = require('caboose.buffers.text')
local filetime = require('caboose.buffers.filetime')

local M = {}
local H = {}

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

--- The written file's final newline and byte-order mark, as the host wrote them.
H.set_file_format = function(b, op)
  if op.final_eol ~= nil then
    vim.bo[b].eol = op.final_eol
  end
  if op.bom ~= nil then
    vim.bo[b].bomb = op.bom
  end
end

M.set = function(op)
  local b = snapshot.find(op.abs)
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
      text.set_hunks(b, op.hunks)
    else
      text.set_text(b, op.text)
    end
    vim.cmd('let &l:undolevels = &l:undolevels')
  end)
  if op.clean then
    H.set_file_format(b, op)
    vim.bo[b].modified = false
    -- The file the host wrote is recorded as the buffer's file without comparing it (no read, no change
    -- to the file's time): see filetime.record_written.
    if filetime.record_written(b, op.file or {}) then
      return H.set_result(b, op)
    end
    vim.bo[b].modified = true
    -- The user's own FileChangedShell autocommands never see the agent's write: with any, the file time
    -- is recorded as before (one content compare, on this turn).
    local quick = #vim.api.nvim_get_autocmds({ event = 'FileChangedShell' }) == 0
    if quick then
      -- Still marked modified here: the file's new time and size are stored without a content compare.
      filetime.store_file_info(b)
    end
    vim.bo[b].modified = false
    if not quick then
      filetime.sync_file_time(b, op.size_changed)
    else
      local st = vim.uv.fs_stat(vim.api.nvim_buf_get_name(b))
      if st then
        filetime.record_read_time_later(b, st)
      end
    end
  end
  return H.set_result(b, op)
end

H.set_result = function(b, op)
  local res = { ok = true, changedtick = vim.api.nvim_buf_get_changedtick(b) }
  if op.return_bytes then
    res.bytes64 = vim.base64.encode(snapshot.bytes(b, snapshot.format(b)))
  end
  return res
end

--- The clean buffer an op acts on: `b`, or nil and the op's result (not loaded: nothing to do; unsaved
--- changes: refused).
H.clean_target = function(abs, include_unloaded)
  local b = snapshot.find(abs, include_unloaded)
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

M.reload = function(op)
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

M.wipe = function(op)
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

M.rename = function(op)
  local b, res = H.clean_target(op.from, true)
  if not b then
    return res
  end
  -- A clean buffer already named like the destination (e.g. `:edit new.txt` never written) makes way.
  local target = snapshot.find(op.to, true)
  if target and target ~= b then
    if vim.bo[target].modified then
      return { ok = false, reason = 'target_modified' }
    end
    M.wipe({ abs = op.to })
  end
  vim.api.nvim_buf_set_name(b, op.to)
  -- Renaming leaves an unlisted, unloaded buffer with the old name behind: drop it.
  local old = snapshot.find(op.from, true)
  if old and old ~= b and not vim.api.nvim_buf_is_loaded(old) then
    pcall(vim.api.nvim_buf_delete, old, { force = true })
  end
  if vim.api.nvim_buf_is_loaded(b) then
    -- Renaming marks the buffer "not edited" (E13 on :w); re-reading the identical file clears that.
    H.reread(b)
  end
  return { ok = true }
end

return M
