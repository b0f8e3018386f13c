--- The review's keys (config `review.keys`): next/previous hunk, accept/reject the hunk under the cursor,
--- accept/reject all, leave it pending; `g?` lists them.
local R = require('caboose.ui.review.state')

local M = {}
local H = {}

--- A sibling part, required when used (the parts require each other).
local function part(name)
  return require('caboose.ui.review.' .. name)
end

--- The review keys (`g?` in the review buffer; `?` stays backward search).
H.show_keys = function()
  local k = R.cfg().review.keys
  local list = {}
  for _, x in ipairs({
    { k.next_hunk, 'next hunk' },
    { k.prev_hunk, 'previous hunk' },
    { k.accept, 'accept the hunk under the cursor' },
    { k.reject, 'reject it (asks an optional reason)' },
    { k.accept_all, 'accept every remaining hunk' },
    { k.reject_all, 'reject every remaining hunk (asks a reason)' },
    { k.quit, 'later: it stays pending (:CabooseApproval)' },
    { 'g?', 'this list' },
  }) do
    if x[1] and x[1] ~= '' then
      table.insert(list, { 'n', x[1], x[2] })
    end
  end
  return require('caboose.chat').show_keys({ title = ' Caboose review keys ', keys = list })
end

--- The hunk under the cursor, else the next one below it, else the last one above.
H.hunk_at = function(row)
  local a = R.active
  local after, before
  for i, r in ipairs(a.rows) do
    if row >= r[1] and row <= r[2] then
      return i
    end
    if r[1] > row and not after then
      after = i
    end
    if r[2] < row then
      before = i
    end
  end
  return after or before
end

H.cursor_row = function()
  return vim.api.nvim_win_get_cursor(R.active.win)[1] - 1
end

M.goto_hunk = function(i)
  local a = R.active
  local r = a.rows[i]
  if r and a.win and vim.api.nvim_win_is_valid(a.win) then
    pcall(vim.api.nvim_win_set_cursor, a.win, { r[1] + 1, 0 })
    -- Removed lines above the window's top line are hidden unless shown as filler (e.g. line 1 changed).
    local above = (a.above or {})[i] or 0
    if above > 0 then
      vim.api.nvim_win_call(a.win, function()
        if vim.fn.line('w0') == r[1] + 1 then
          vim.fn.winrestview({ topline = r[1] + 1, topfill = above })
        end
      end)
    end
  end
end

H.ask_reason = function(prompt, fn)
  vim.ui.input({ prompt = prompt }, function(reason)
    if reason == nil then
      return -- cancelled: nothing decided
    end
    vim.schedule(function()
      fn(vim.trim(reason))
    end)
  end)
end

M.set = function(buf)
  local k = R.cfg().review.keys
  local map = function(lhs, fn, desc)
    if lhs and lhs ~= '' then
      vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'Caboose review: ' .. desc })
    end
  end
  map(k.next_hunk, function()
    local a = R.active
    local row = H.cursor_row()
    for i, r in ipairs(a.rows) do
      if r[1] > row then
        return M.goto_hunk(i)
      end
    end
    M.goto_hunk(1)
  end, 'next hunk')
  map(k.prev_hunk, function()
    local a = R.active
    local row = H.cursor_row()
    for i = #a.rows, 1, -1 do
      if a.rows[i][1] < row then
        return M.goto_hunk(i)
      end
    end
    M.goto_hunk(#a.rows)
  end, 'previous hunk')
  map(k.accept, function()
    local i = H.hunk_at(H.cursor_row())
    if i then
      part('decisions').decide({ i }, 'accepted')
    end
  end, 'accept the hunk')
  map(k.reject, function()
    local i = H.hunk_at(H.cursor_row())
    if i then
      H.ask_reason(string.format('Reject hunk %d — reason (optional): ', i), function(reason)
        part('decisions').decide({ i }, 'rejected', reason)
      end)
    end
  end, 'reject the hunk')
  map(k.accept_all, function()
    local list = part('decisions').pending()
    if #list > 0 then
      part('decisions').decide(list, 'accepted')
    end
  end, 'accept every remaining hunk')
  map(k.reject_all, function()
    local list = part('decisions').pending()
    if #list > 0 then
      H.ask_reason('Reject all — reason (optional): ', function(reason)
        part('decisions').decide(list, 'rejected', reason)
      end)
    end
  end, 'reject every remaining hunk')
  map(k.quit, function()
    local a = R.active
    part('windows').restore()
    part('windows').go_back(a)
  end, 'leave the review pending (:CabooseApproval comes back)')
  map('g?', H.show_keys, 'list the review keys')
  -- :q, :close, :bwipe… on the review window: like `q`, the request stays pending and can be shown again.
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      local a = R.active
      if not (a and a.rbuf == buf) then
        return -- restore() did it
      end
      local win, r = a.win, a.restore
      a.rbuf, a.win, a.rows = nil, nil, {}
      vim.schedule(function()
        -- The file's own window kept (:bwipe in the last window): its winbar as it was.
        if not r.created and win and vim.api.nvim_win_is_valid(win) and not (R.active and R.active.win == win) then
          vim.wo[win].winbar = r.winbar or ''
        end
      end)
    end,
  })
end

return M
