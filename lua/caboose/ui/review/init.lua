--- Inline review of a proposed file change, in the file's own window: a scratch buffer with the NEW text
--- (same filetype, so it keeps its highlighting) takes the window's place while the review is open; added
--- lines are highlighted, removed lines are virtual lines above them, changed words are marked. The file's
--- buffer (text, undo history, 'modified') is not touched: nothing is written until the user decides.
--- Keys (config `review.keys`): next/prev hunk, accept/reject the hunk under the cursor, accept/reject all,
--- leave it pending. A multi-file change is reviewed file after file; the decision goes to the host at the end.
---
--- This is its public API; the parts: state.lua (the review in progress), windows.lua (where it shows and
--- how the window is put back), draw.lua (highlights and winbar), keys.lua, decisions.lua (and the answer).
local R = require('caboose.ui.review.state')
local windows = require('caboose.ui.review.windows')
local draw = require('caboose.ui.review.draw')
local decisions = require('caboose.ui.review.decisions')

local M = {}

--- The files of a request that can be reviewed inline (nil when there are none).
function M.files(req)
  local p = type(req) == 'table' and req.preview or nil
  if type(p) ~= 'table' or p.kind ~= 'diff' or type(p.files) ~= 'table' or #p.files == 0 then
    return nil
  end
  return p.files
end

--- The hunk selection the host takes (caboose.ui.review.decisions).
M.selection = decisions.selection

--- Starts the inline review of `req` (an approval request whose preview has `files`).
function M.open(req, opts)
  if R.active and R.active.req.id == req.id then
    return M.focus()
  end
  R.active = { req = req, files = M.files(req), fi = 1, decisions = {}, rows = {} }
  for i = 1, #R.active.files do
    R.active.decisions[i] = {}
  end
  windows.show(opts and opts.focus)
end

--- Shows the review again (after `q`) and moves the cursor into it.
function M.focus()
  local a = R.active
  if not a then
    return false
  end
  if vim.api.nvim_get_current_win() ~= a.win then
    a.came_from = nil -- this jump's window is the one to come back to
  end
  if not a.rbuf then
    windows.show(true)
  else
    windows.enter()
  end
  return true
end

function M.active_id()
  return R.active and R.active.req.id or nil
end

--- The host withdrew or answered the request: the windows go back as they were.
function M.close(id)
  if R.active and (id == nil or R.active.req.id == id) then
    windows.restore()
    R.active = nil
  end
end

--- State for tests and statuslines: the file under review, its hunks' decisions, the review buffer/window.
function M.state()
  local a = R.active
  if not a then
    return nil
  end
  return { id = a.req.id, path = a.files[a.fi].path, file = a.fi, files = #a.files, buf = a.rbuf, win = a.win, decisions = vim.deepcopy(a.decisions[a.fi]) }
end

-- The winbar's form depends on the window's width.
vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, {
  group = vim.api.nvim_create_augroup('CabooseReviewLayout', { clear = true }),
  callback = vim.schedule_wrap(function() -- after the chat took its new size
    if R.active and R.active.win and vim.api.nvim_win_is_valid(R.active.win) then
      draw.winbar()
    end
  end),
})

M.ns = R.ns

return M
