--- The inline review's shared state: the review in progress (`R.active`) and what every part of
--- lua/caboose/ui/review/ reads of it. Requires no other part.
local R = {}

R.ns = vim.api.nvim_create_namespace('caboose_review')
R.active = nil ---@type table|nil { req, files, fi, decisions, win, rbuf, restore }

--- Hunks of a file as the user decides them: a whole-file operation (create, delete, move) is one.
R.units = function(f)
  if f.operation == 'edit' and #f.hunks > 0 then
    return f.hunks
  end
  return { f.hunks[1] or { newStart = 0, newLines = #f.lines, oldStart = 0, oldLines = 0, removed = {}, added = f.lines, words = {} } }
end

R.cfg = function()
  return require('caboose').config()
end

return R
