--- The review's decisions: a hunk accepted or rejected (with its reason), the move to the next pending
--- hunk or file, and at the end the answer to the host (the hunks rejected, per file).
local R = require('caboose.ui.review.state')

local M = {}
local H = {}

--- A sibling part, required when used (the parts require each other).
local function part(name)
  return require('caboose.ui.review.' .. name)
end

M.next_pending = function(from)
  local a = R.active
  local n = #a.rows
  for k = 1, n do
    local i = ((from - 1 + k) % n) + 1
    if not a.decisions[a.fi][i] then
      return i
    end
  end
  return nil
end

M.pending = function()
  local a = R.active
  local out = {}
  for i = 1, #a.rows do
    if not a.decisions[a.fi][i] then
      table.insert(out, i)
    end
  end
  return out
end

--- Records a decision for hunks `list` and moves on (to the next pending hunk, file, or the answer).
M.decide = function(list, state, reason)
  local a = R.active
  if not a then
    return
  end
  for _, i in ipairs(list) do
    a.decisions[a.fi][i] = { state = state, reason = reason }
  end
  local nxt = M.next_pending(list[#list])
  if nxt then
    part('draw').decorate()
    part('keys').goto_hunk(nxt)
    return
  end
  H.finish_file()
end

H.finish_file = function()
  local a = R.active
  local focused = a.win and vim.api.nvim_get_current_win() == a.win
  part('windows').restore()
  if a.fi < #a.files then
    a.fi = a.fi + 1
    part('windows').show(focused)
    return
  end
  if focused then
    part('windows').go_back(a)
  end
  H.submit()
end

--- The hunk selection the host takes: per file, the hunks rejected (`rejected(fi, hi)` returns nil for an
--- accepted hunk, else the reason or ''). Also whether any hunk was accepted and the reasons given.
function M.selection(files, rejected)
  local out, reasons, any_accepted = {}, {}, false
  for fi, f in ipairs(files) do
    local list = {}
    for hi = 1, #R.units(f) do
      local reason = rejected(fi, hi)
      if reason == nil then
        any_accepted = true
      else
        table.insert(list, { hunk = hi, reason = reason ~= '' and reason or nil })
        if reason ~= '' then
          table.insert(reasons, string.format('%s hunk %d: %s', f.path, hi, reason))
        end
      end
    end
    if #list > 0 then
      table.insert(out, { path = f.path, before_sha256 = f.beforeSha256 or vim.NIL, rejected = list })
    end
  end
  return out, any_accepted, reasons
end

--- The answer: 'once' (with the rejected hunks, if any) or 'reject' when nothing was accepted.
H.submit = function()
  local a = R.active
  R.active = nil
  local files, any_accepted, reasons = M.selection(a.files, function(fi, hi)
    local d = a.decisions[fi][hi]
    return d and d.state == 'rejected' and (d.reason or '') or nil
  end)
  local answer = a.req.on_answer or function(...)
    require('caboose.ui.approval')._answer(a.req, ...)
  end
  if not any_accepted then
    answer('reject', #reasons > 0 and table.concat(reasons, '; ') or nil)
  elseif #files > 0 then
    answer('once', nil, { files = files })
  else
    answer('once')
  end
end

return M
