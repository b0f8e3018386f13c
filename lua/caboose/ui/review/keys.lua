--- The review's keys (config `review.keys`): next/previous hunk, accept/reject the hunk under the cursor,
--- accept/reject all, leave it pending; `g?` lists them.
local R = require('caboose.ui.review.state')

local M = {}
local H = {}

--- A sibling part, required when used (the parts require each other).
local function part(name)
  return require('caboose.ui.review.' .. name)
end

--- Review keys left unset because the buffer already maps them (key name -> lhs); told once a session.
H.told = {}

--- The review keys (`g?` in the review buffer; `?` stays backward search).
H.show_keys = function()
  local k = R.cfg().review.keys
  local skipped = (R.active and R.active.skipped) or {}
  local list = {}
  for _, x in ipairs({
    { 'next_hunk', 'next hunk' },
    { 'prev_hunk', 'previous hunk' },
    { 'accept', 'accept the hunk under the cursor' },
    { 'reject', 'reject it (asks an optional reason)' },
    { 'accept_all', 'accept every remaining hunk' },
    { 'reject_all', 'reject every remaining hunk (asks a reason)' },
    { 'quit', 'later: it stays pending (:CabooseApproval)' },
  }) do
    local lhs = k[x[1]]
    if type(lhs) == 'string' and lhs ~= '' then
      local desc = x[2]
      if skipped[x[1]] then
        desc = string.format('NOT SET: this buffer maps %s already (review.keys.%s)', lhs, x[1])
      end
      table.insert(list, { 'n', lhs, desc })
    end
  end
  table.insert(list, { 'n', 'g?', 'this list' })
  return require('caboose.chat').show_keys({ title = ' Caboose review keys ', keys = list })
end

--- A mapping of `lhs` in Normal mode that is local to `buf` (set there by an ftplugin or the user's FileType
--- autocommand), or nil. Global mappings do not count: the review's map shadows them in its own buffer only.
H.local_map = function(buf, lhs)
  local m = vim.api.nvim_buf_call(buf, function()
    return vim.fn.maparg(lhs, 'n', false, true)
  end)
  if type(m) == 'table' and m.buffer == 1 then
    return m
  end
  return nil
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
  local skipped = {}
  if R.active then
    R.active.skipped = skipped
  end
  -- Never `nowait`: a review key that is the start of a longer mapping (Neovim's grn/gra/grr/gri, the user's
  -- own) waits for 'timeoutlen' as any ambiguous key does, so the longer ones stay reachable. A key the
  -- buffer already maps (an ftplugin, the user's FileType autocommand) is left theirs and said once.
  local map = function(name, fn, desc)
    local lhs = k[name]
    if type(lhs) ~= 'string' or lhs == '' then
      return -- "" or false: disabled
    end
    local theirs = H.local_map(buf, lhs)
    if theirs then
      skipped[name] = lhs
      if H.told[name] ~= lhs then
        H.told[name] = lhs
        vim.notify(
          string.format('Caboose review: %s (%s) is not set: this buffer maps %s already (%s); set review.keys.%s to another key', lhs, desc, lhs, theirs.desc or theirs.rhs or 'a Lua function', name),
          vim.log.levels.WARN
        )
      end
      return
    end
    vim.keymap.set('n', lhs, fn, { buffer = buf, desc = 'Caboose review: ' .. desc })
  end
  map('next_hunk', function()
    local a = R.active
    local row = H.cursor_row()
    for i, r in ipairs(a.rows) do
      if r[1] > row then
        return M.goto_hunk(i)
      end
    end
    M.goto_hunk(1)
  end, 'next hunk')
  map('prev_hunk', function()
    local a = R.active
    local row = H.cursor_row()
    for i = #a.rows, 1, -1 do
      if a.rows[i][1] < row then
        return M.goto_hunk(i)
      end
    end
    M.goto_hunk(#a.rows)
  end, 'previous hunk')
  map('accept', function()
    local i = H.hunk_at(H.cursor_row())
    if i then
      part('decisions').decide({ i }, 'accepted')
    end
  end, 'accept the hunk')
  map('reject', function()
    local i = H.hunk_at(H.cursor_row())
    if i then
      H.ask_reason(string.format('Reject hunk %d — reason (optional): ', i), function(reason)
        part('decisions').decide({ i }, 'rejected', reason)
      end)
    end
  end, 'reject the hunk')
  map('accept_all', function()
    local list = part('decisions').pending()
    if #list > 0 then
      part('decisions').decide(list, 'accepted')
    end
  end, 'accept every remaining hunk')
  map('reject_all', function()
    local list = part('decisions').pending()
    if #list > 0 then
      H.ask_reason('Reject all — reason (optional): ', function(reason)
        part('decisions').decide(list, 'rejected', reason)
      end)
    end
  end, 'reject every remaining hunk')
  map('quit', function()
    local a = R.active
    part('windows').restore()
    part('windows').go_back(a)
  end, 'leave the review pending (:CabooseApproval comes back)')
  if not H.local_map(buf, 'g?') then
    vim.keymap.set('n', 'g?', H.show_keys, { buffer = buf, desc = 'Caboose review: list the review keys' })
  end
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
