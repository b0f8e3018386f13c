--- The approval float's shared state: the requests waiting (the first is shown), the float's window and
--- buffer, and the hunks the user turned off. Every part of lua/caboose/ui/approval/ reads it here;
--- requires no other part.
local A = {}

A.pending = {} ---@type table[] queue of requests, first is shown
A.win = nil
A.buf = nil
A.shown_id = nil ---@type string|nil the request the float shows
A.grace_until = 0 ---@type number decision keys are ignored until then (ms, vim.uv.hrtime based)
A.skipped = {} ---@type table<string, table<string, boolean>> per request: 'file:hunk' the user toggled off
A.hunk_at_line = {} ---@type table<integer, { fi: integer, hi: integer }> float line → hunk (files with hunks)
A.ns = vim.api.nvim_create_namespace('caboose_approval')

A.current = function()
  return A.pending[1]
end

A.now = function()
  return vim.uv.hrtime() / 1e6
end

return A
