--- The review's window: where a file's review opens (its own window, else a split), the review buffer
--- shown there, and the window put back as it was when the review ends or is left pending.
local R = require('caboose.ui.review.state')

local M = {}
local H = {}

--- A sibling part, required when used (the parts require each other).
local function part(name)
  return require('caboose.ui.review.' .. name)
end

H.same_file = function(buf, abs)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return false
  end
  return name == abs or vim.uv.fs_realpath(name) == abs
end

--- The file's loaded buffer, if any.
H.file_buf = function(abs)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].buftype == '' and H.same_file(b, abs) then
      return b
    end
  end
  return nil
end

H.is_plain_win = function(win)
  if vim.api.nvim_win_get_config(win).relative ~= '' then
    return false
  end
  local b = vim.api.nvim_win_get_buf(win)
  return not vim.api.nvim_buf_get_name(b):match('^caboose://')
end

--- A window of the current tab showing `buf` (the current one first).
H.win_for = function(buf)
  if not buf then
    return nil
  end
  local cur = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(cur) == buf then
    return cur
  end
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(w) == buf and H.is_plain_win(w) then
      return w
    end
  end
  return nil
end

--- Where a file that is not shown gets its review: a split above the user's last editing window.
H.split_win = function(rbuf)
  local base
  local prev = vim.fn.win_getid(vim.fn.winnr('#'))
  for _, w in ipairs({ vim.api.nvim_get_current_win(), prev }) do
    if w ~= 0 and vim.api.nvim_win_is_valid(w) and H.is_plain_win(w) then
      base = w
      break
    end
  end
  if not base then
    for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if H.is_plain_win(w) then
        base = w
        break
      end
    end
  end
  return vim.api.nvim_open_win(rbuf, false, { split = 'above', win = base or -1 })
end

--- After the review in focus is left: back to the window the user came from (the transcript, say).
M.go_back = function(a)
  local back = a and a.came_from
  if a then
    a.came_from = nil
  end
  if back and vim.api.nvim_win_is_valid(back) and vim.api.nvim_win_get_tabpage(back) == vim.api.nvim_get_current_tabpage() then
    vim.api.nvim_set_current_win(back)
  end
end

--- Puts the window back as it was (the file's buffer and view, or closes the split we opened).
M.restore = function()
  local a = R.active
  if not a or not a.rbuf then
    return
  end
  local r, win, rbuf = a.restore, a.win, a.rbuf
  a.rbuf, a.win, a.rows = nil, nil, {} -- first: the review buffer's BufWipeout sees it is not the user's doing
  if win and vim.api.nvim_win_is_valid(win) then
    if r.created then
      pcall(vim.api.nvim_win_close, win, true)
    else
      if r.buf and vim.api.nvim_buf_is_valid(r.buf) then
        vim.api.nvim_win_set_buf(win, r.buf)
        pcall(vim.api.nvim_win_call, win, function()
          vim.fn.winrestview(r.view)
        end)
      end
      vim.wo[win].winbar = r.winbar or ''
    end
  end
  if vim.api.nvim_buf_is_valid(rbuf) then
    pcall(vim.api.nvim_buf_delete, rbuf, { force = true })
  end
end

--- Shows file `a.fi` of the active review in its window.
M.show = function(focus)
  local a = R.active
  local f = a.files[a.fi]
  local fbuf = f.bufnr and vim.api.nvim_buf_is_valid(f.bufnr) and f.bufnr or H.file_buf(f.abs)
  local win = H.win_for(fbuf)
  if win and win == vim.api.nvim_get_current_win() and vim.fn.mode():match('^[iR]') then
    -- Never swap the buffer under the user's typing: open the review once they leave Insert mode.
    vim.api.nvim_create_autocmd('InsertLeave', {
      once = true,
      callback = vim.schedule_wrap(function()
        if R.active == a and not a.rbuf then
          M.show(focus)
        end
      end),
    })
    return
  end
  local rbuf = vim.api.nvim_create_buf(false, true)
  vim.bo[rbuf].bufhidden = 'wipe'
  pcall(vim.api.nvim_buf_set_name, rbuf, 'caboose://review/' .. f.path)
  vim.api.nvim_buf_set_lines(rbuf, 0, -1, false, f.lines)
  vim.bo[rbuf].modifiable = false
  vim.b[rbuf].caboose_review = { id = a.req.id, path = f.path }
  a.rbuf, a.rows = rbuf, {}
  if win then
    a.restore = {
      buf = vim.api.nvim_win_get_buf(win),
      view = vim.api.nvim_win_call(win, vim.fn.winsaveview),
      winbar = vim.wo[win].winbar,
    }
    vim.api.nvim_win_set_buf(win, rbuf)
  else
    win = H.split_win(rbuf)
    a.restore = { created = true }
  end
  a.win = win
  local ft = fbuf and vim.bo[fbuf].filetype or vim.filetype.match({ filename = f.abs }) or ''
  if ft ~= '' then
    vim.bo[rbuf].filetype = ft
  end
  vim.bo[rbuf].modifiable = false
  part('keys').set(rbuf)
  part('draw').decorate()
  part('keys').goto_hunk(part('decisions').next_pending(#a.rows) or 1)
  if focus then
    M.enter()
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseReviewShown', modeline = false, data = { id = a.req.id, path = f.path, buf = rbuf, win = win } })
end

M.enter = function()
  local a = R.active
  if a and a.win and vim.api.nvim_win_is_valid(a.win) then
    if vim.fn.mode():match('^[iR]') then
      vim.cmd('stopinsert')
    end
    local cur = vim.api.nvim_get_current_win()
    if cur ~= a.win and not a.came_from then
      a.came_from = cur
    end
    vim.api.nvim_set_current_win(a.win)
  end
end

return M
