--- Approval float: the tool, a summary of its arguments (computed by the host) and a preview (diff,
--- command or text); never modal. The keys stay in the footer; the body wraps and scrolls.
--- It opens WITHOUT focus, so what the user is typing stays in their buffer; :CabooseApproval (or
--- <Plug>(CabooseApproval)) jumps in. Keys in the float: <CR>/o approve once (default), a always allow this
--- tool (after a yes/no confirmation), r reject (asks a reason), q/<Esc> hide (come back with
--- :CabooseApproval, or answer with require('caboose').approval_respond()).
---
--- This is its public API; the parts: state.lua (the requests waiting, the float), body.lua (its text),
--- float.lua (the window, its size and place), keys.lua (the keys and the answer).
local A = require('caboose.ui.approval.state')
local float = require('caboose.ui.approval.float')
local keys = require('caboose.ui.approval.keys')

local M = {}
local H = {}

--- Called for each approval_request event from the host.
function M.show(req)
  table.insert(A.pending, req)
  if #A.pending == 1 then
    float.render()
  end
  H.refresh_status()
end

--- The state says "pending approval" while any request waits (a subagent's too).
H.refresh_status = function()
  require('caboose')._approvals_changed()
end

--- Show the float of the pending approval (after hiding it) and move the cursor into it.
function M.focus()
  if not A.current() then
    -- A :CabooseEdit review is not an approval request, but it waits for an answer too.
    return require('caboose.ui.review').focus()
  end
  if float.inline(A.current()) then
    float.render()
    return require('caboose.ui.review').focus()
  end
  float.render()
  if vim.fn.mode():match('^[iR]') then
    vim.cmd('stopinsert') -- the float's keys are normal-mode keys
  end
  vim.api.nvim_set_current_win(A.win)
  return true
end

function M.pending()
  return vim.deepcopy(A.pending)
end

--- Answer the first pending request (no confirmation: this is the API).
---@param decision 'once'|'always'|'reject'
---@param reason string|nil
function M.respond(decision, reason)
  local req = A.current()
  if not req then
    vim.notify('(caboose) no approval is pending', vim.log.levels.WARN)
    return false
  end
  if not vim.tbl_contains({ 'once', 'always', 'reject' }, decision) then
    vim.notify('(caboose) decision must be once, always or reject', vim.log.levels.ERROR)
    return false
  end
  return keys.answer(req, decision, reason)
end

--- The host closed a request (answered, or cancelled by :CabooseStop).
function M.close(id)
  require('caboose.ui.review').close(id)
  A.skipped[id] = nil
  for i, req in ipairs(A.pending) do
    if req.id == id then
      table.remove(A.pending, i)
      break
    end
  end
  if A.current() then
    float.render()
  else
    float.close_win()
  end
  H.refresh_status()
end

function M.close_all()
  require('caboose.ui.review').close(nil)
  A.pending = {}
  float.close_win()
  H.refresh_status()
end

--- The mode changed (:CabooseMode): the requests that still wait say the mode now in force (the host
--- answered those the new mode does not ask about).
function M.mode_changed(mode)
  local changed = false
  for _, req in ipairs(A.pending) do
    if req.mode ~= mode then
      req.mode, changed = mode, true
    end
  end
  if changed and A.current() and A.win and vim.api.nvim_win_is_valid(A.win) then
    float.render()
  end
end

--- How many requests wait for an answer.
function M.count()
  return #A.pending
end

--- Whether a subagent's request waits (its parent keeps executing tools meanwhile).
function M.subagent_waiting()
  for _, req in ipairs(A.pending) do
    if type(req.label) == 'string' and req.label ~= '' then
      return true
    end
  end
  return false
end

--- Internal (caboose.ui.review): answers `req` with an optional hunk selection.
M._answer = function(req, decision, reason, review)
  return keys.answer(req, decision, reason, review)
end

return M
