--- Live buffers for the host's file tools (src/host/nvim-buffers.ts is the only caller).
--- Snapshots give the bytes a buffer would write; updates land the agent's text in place as one undo
--- step (views, marks and extmarks outside the changed hunks kept), sync a clean buffer's stored file
--- time without a W11/W12 prompt, reload, wipe or rename buffers. Every function is one RPC round trip.
--- (`find` is shared with lua/caboose/diagnostics.lua.)
---
--- The parts: snapshot.lua (what a buffer would write), text.lua (landing text as small changes),
--- filetime.lua (the stored file time kept in step), ops.lua (the operations `update` runs).
local snapshot = require('caboose.buffers.snapshot')
local operations = require('caboose.buffers.ops')

local M = {}

--- The loaded normal buffer of `path` (absolute, realpath-resolved), or nil (also used by diagnostics.lua).
---@param path string
---@return integer|nil
function M.find(path)
  return snapshot.find(path)
end

--- Snapshots of the loaded buffers of `paths` (map path → snapshot; missing = not loaded).
---@param paths string[]
---@param with_bytes 'modified'|'always'|'never'
---@param have? table<string, integer> changedticks whose bytes the host already holds (not sent again)
function M.status(paths, with_bytes, have)
  local out = {}
  for _, p in ipairs(paths) do
    local b = snapshot.find(p)
    if b then
      local known = type(have) == 'table' and have[p] == vim.api.nvim_buf_get_changedtick(b)
      out[p] = snapshot.snapshot(b, known and 'never' or with_bytes)
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
        local snap = snapshot.snapshot(b, 'always')
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
      local b = snapshot.find(op.abs)
      if b and op.changedtick and vim.api.nvim_buf_get_changedtick(b) ~= op.changedtick then
        for j = 1, #ops do
          results[j] = { ok = false, reason = j == i and 'changed' or 'skipped' }
        end
        return results
      end
    end
  end
  for i, op in ipairs(ops) do
    local fn = operations[op.type]
    local ok, res = pcall(fn, op)
    results[i] = ok and res or { ok = false, reason = 'error', message = tostring(res) }
  end
  return results
end

return M
