--- Answering an approval request: the float's keys (once, always after a confirmation, reject with a
--- reason, a hunk off/on, hide), each ignored for a moment after a new request appears, and the answer
--- sent to the host.
local A = require('caboose.ui.approval.state')

local M = {}
local H = {}

--- A sibling part, required when used (the parts require each other).
local function part(name)
  return require('caboose.ui.approval.' .. name)
end

--- Runs a decision key's action on the request shown, unless the request only just replaced another.
H.decision_key = function(fn)
  return function()
    local req = A.current()
    if not req then
      return
    end
    if A.now() < A.grace_until then
      vim.notify('(caboose) a new approval request just appeared: read it, then answer', vim.log.levels.INFO)
      return
    end
    fn(req)
  end
end

--- "Always" runs the tool without asking for the rest of the session: confirm first (default: no).
H.confirm_always = function(req)
  local yes = string.format('Yes, always allow %s', req.tool or 'this tool')
  local prompt = string.format('Run %s without asking for the rest of this session? (:CabooseRevoke undoes it)', req.tool or 'this tool')
  vim.ui.select({ 'No', yes }, { prompt = prompt }, function(choice)
    if choice == yes then
      H.answer_with_hunks(req, 'always')
    end
  end)
end

M.set = function(buf)
  local map = function(lhs, fn, desc)
    vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'Caboose approval: ' .. desc })
  end
  local once = H.decision_key(function(req)
    H.answer_with_hunks(req, 'once')
  end)
  map('t', H.toggle_hunk, 'turn the hunk under the cursor off/on')
  map('<CR>', once, 'approve once')
  map('o', once, 'approve once')
  map('a', H.decision_key(H.confirm_always), 'always allow this tool (asks to confirm)')
  map(
    'r',
    H.decision_key(function(req)
      vim.ui.input({ prompt = 'Reason (optional): ' }, function(reason)
        if reason == nil then
          -- Cancelled (<Esc>): nothing is answered; back to the float if the request is still shown.
          if A.current() == req and A.win and vim.api.nvim_win_is_valid(A.win) then
            vim.api.nvim_set_current_win(A.win)
          end
          return
        end
        M.answer(req, 'reject', reason)
      end)
    end),
    'reject'
  )
  map('q', part('float').close_win, 'hide')
  map('<Esc>', part('float').close_win, 'hide')
end

H.toggle_hunk = function()
  local req = A.current()
  if not (req and part('body').hunk_files(req) and A.win and vim.api.nvim_win_is_valid(A.win)) then
    return
  end
  local at = A.hunk_at_line[vim.api.nvim_win_get_cursor(A.win)[1]]
  if not at then
    require('caboose')._notify('t turns off the hunk under the cursor: move to one of its lines (@@ hunk …) first')
    return
  end
  A.skipped[req.id] = A.skipped[req.id] or {}
  local key = at.fi .. ':' .. at.hi
  A.skipped[req.id][key] = not A.skipped[req.id][key] or nil
  local cursor = vim.api.nvim_win_get_cursor(A.win)
  part('float').render()
  pcall(vim.api.nvim_win_set_cursor, A.win, cursor)
end

--- The answer with the toggled-off hunks rejected ('reject' when every hunk is off).
H.answer_with_hunks = function(req, decision)
  local files = part('body').hunk_files(req)
  local skipped = A.skipped[req.id] or {}
  if not files or next(skipped) == nil then
    return M.answer(req, decision)
  end
  local out, any_on = require('caboose.ui.review').selection(files, function(fi, hi)
    return skipped[fi .. ':' .. hi] and '' or nil
  end)
  if not any_on then
    return M.answer(req, 'reject', 'the user turned off every hunk')
  end
  return M.answer(req, decision, nil, { files = out })
end

--- Answers `req` itself (a confirmation or a reason prompt may end after the request was withdrawn).
M.answer = function(req, decision, reason, review)
  if not vim.tbl_contains(A.pending, req) then
    vim.notify('(caboose) that approval request is no longer pending', vim.log.levels.WARN)
    return false
  end
  local rpc = require('caboose.rpc')
  local params = { id = req.id, decision = decision }
  if reason and reason ~= '' then
    params.reason = reason
  end
  if review then
    params.review = review
  end
  local ok = require('caboose')._request(rpc.methods.approval_resolve, params)
  return ok ~= nil
end

return M
