--- Inline review of a proposed file change, in the file's own window: a scratch buffer with the NEW text
--- (same filetype, so it keeps its highlighting) takes the window's place while the review is open; added
--- lines are highlighted, removed lines are virtual lines above them, changed words are marked. The file's
--- buffer (text, undo history, 'modified') is not touched: nothing is written until the user decides.
--- Keys (config `review.keys`): next/prev hunk, accept/reject the hunk under the cursor, accept/reject all,
--- leave it pending. A multi-file change is reviewed file after file; the decision goes to the host at the end.
local M = {}
local H = {}

H.ns = vim.api.nvim_create_namespace('caboose_review')
H.active = nil ---@type table|nil { req, files, fi, decisions, win, rbuf, restore }

--- The files of a request that can be reviewed inline (nil when there are none).
function M.files(req)
  local p = type(req) == 'table' and req.preview or nil
  if type(p) ~= 'table' or p.kind ~= 'diff' or type(p.files) ~= 'table' or #p.files == 0 then
    return nil
  end
  return p.files
end

--- Hunks of a file as the user decides them: a whole-file operation (create, delete, move) is one.
H.units = function(f)
  if f.operation == 'edit' and #f.hunks > 0 then
    return f.hunks
  end
  return { f.hunks[1] or { newStart = 0, newLines = #f.lines, oldStart = 0, oldLines = 0, removed = {}, added = f.lines, words = {} } }
end

H.cfg = function()
  return require('caboose').config()
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

--- Tabs expanded, so a removed line drawn as virtual text lines up with the code.
H.expand = function(line, ts)
  if not line:find('\t', 1, true) then
    return line
  end
  local out, col = {}, 0
  for ch in line:gmatch('.') do
    if ch == '\t' then
      local n = ts - (col % ts)
      table.insert(out, string.rep(' ', n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + 1
    end
  end
  return table.concat(out)
end

--- First and last rows (0-based) a hunk occupies in the review buffer.
H.rows = function(h, nlines)
  local first = h.newLines > 0 and h.newStart - 1 or math.max(h.newStart - 1, 0)
  local last = h.newLines > 0 and first + h.newLines - 1 or first
  first = math.min(first, math.max(nlines - 1, 0))
  return first, math.min(last, math.max(nlines - 1, 0))
end

H.decorate = function()
  local a = H.active
  local f = a.files[a.fi]
  local buf = a.rbuf
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  local nlines = vim.api.nvim_buf_line_count(buf)
  local units = H.units(f)
  local ts = vim.bo[buf].tabstop
  a.above = {} -- per hunk: removed lines shown above its first row
  for i, h in ipairs(units) do
    local d = a.decisions[a.fi][i]
    local first, last = H.rows(h, nlines)
    local add_hl = d and d.state == 'rejected' and 'CabooseReviewRejected' or 'CabooseReviewAdd'
    for l = 0, (h.newLines or 0) - 1 do
      local row = h.newStart - 1 + l
      if row < nlines then
        -- A range to the next line's start (not line_hl_group, which is drawn over every other highlight
        -- of the line and hid the changed words): the words' marks, of higher priority, show on top.
        vim.api.nvim_buf_set_extmark(buf, H.ns, row, 0, { end_row = row + 1, end_col = 0, hl_group = add_hl, hl_eol = true, priority = 150, strict = false })
      end
    end
    if not (d and d.state == 'rejected') then
      for _, w in ipairs(h.words or {}) do
        local row = h.newStart - 1 + w[1]
        if row < nlines then
          pcall(vim.api.nvim_buf_set_extmark, buf, H.ns, row, w[2], { end_col = w[3], hl_group = 'CabooseReviewText', priority = 160 })
        end
      end
    end
    if #h.removed > 0 then
      local virt = {}
      for _, l in ipairs(h.removed) do
        table.insert(virt, { { H.expand(l, ts), d and d.state == 'rejected' and 'CabooseReviewKept' or 'CabooseReviewDelete' } })
      end
      local below = h.newLines == 0 and h.newStart > 0
      a.above[i] = not below and #virt or 0
      vim.api.nvim_buf_set_extmark(buf, H.ns, below and math.min(h.newStart - 1, nlines - 1) or first, 0, {
        virt_lines = virt,
        virt_lines_above = not below,
      })
    end
    local label = string.format(' hunk %d/%d', i, #units)
    local hl = 'CabooseReviewHunk'
    if d and d.state == 'accepted' then
      label, hl = label .. ' ✓ accepted', 'CabooseToolOk'
    elseif d and d.state == 'rejected' then
      label, hl = label .. ' ✗ rejected' .. (d.reason and d.reason ~= '' and (': ' .. d.reason) or ''), 'CabooseToolRejected'
    end
    vim.api.nvim_buf_set_extmark(buf, H.ns, first, 0, { virt_text = { { label, hl } }, virt_text_pos = 'eol', priority = 200 })
    a.rows[i] = { first, last }
  end
  H.winbar()
end

H.counts = function()
  local a = H.active
  local acc, rej = 0, 0
  for _, d in pairs(a.decisions[a.fi]) do
    if d.state == 'accepted' then
      acc = acc + 1
    else
      rej = rej + 1
    end
  end
  return acc, rej
end

--- What the review is about: the path, with the operation unless the tool's name already says it
--- (`create_file docs/new.md`, `apply_patch create docs/new.md`, `move a → b`).
H.what = function(req, f)
  local path = f.path .. (f.toPath and (' → ' .. f.toPath) or '')
  local tool = req.tool or ''
  if f.operation == 'edit' or tool:find(f.operation, 1, true) == 1 then
    return path
  end
  return f.operation .. ' ' .. path
end

--- `s` in at most `width` cells, its end kept (a path's file name): `…long-name.md`.
H.cut_start = function(s, width)
  if vim.api.nvim_strwidth(s) <= width then
    return s
  end
  if width < 2 then
    return '…'
  end
  local n = vim.fn.strchars(s)
  local i = 0
  while vim.api.nvim_strwidth(vim.fn.strcharpart(s, i)) > width - 1 and i < n do
    i = i + 1
  end
  return '…' .. vim.fn.strcharpart(s, i)
end

H.esc = function(s)
  return (s:gsub('%%', '%%%%'))
end

H.winbar = function()
  local a = H.active
  if not (a.win and vim.api.nvim_win_is_valid(a.win)) then
    return
  end
  local f = a.files[a.fi]
  local k = H.cfg().review.keys
  local acc, rej = H.counts()
  local units = H.units(f)
  -- A subagent's request says which one asks.
  local who = type(a.req.label) == 'string' and a.req.label ~= '' and a.req.label or nil
  local title = 'Review ' .. (a.req.tool or '')
  local what = H.what(a.req, f) .. (#a.files > 1 and string.format(' (file %d/%d)', a.fi, #a.files) or '')
  local counts = string.format('%d hunk%s: ✓%d ✗%d', #units, #units == 1 and '' or 's', acc, rej)
  local keys = string.format('%s/%s hunk · %s accept · %s reject · %s/%s all · %s later · g? keys', k.next_hunk, k.prev_hunk, k.accept, k.reject, k.accept_all, k.reject_all, k.quit)
  local width = vim.api.nvim_win_get_width(a.win)
  local w = vim.api.nvim_strwidth
  local asker = who and ('%#CabooseNotice#' .. H.esc(who) .. '%* │ ') or ''
  local who_w = who and w(who .. ' │ ') or 0
  local bar
  if 1 + who_w + w(title) + 1 + w(what) + 3 + w(counts) + 3 + w(keys) <= width then
    bar = string.format(' %s%%#CabooseTitle#%s%%* %s │ %s │ %s', asker, H.esc(title), H.esc(what), counts, H.esc(keys))
  else
    -- Short of space: the keys first; the path is what gets cut (its end kept), then the counts, then the
    -- long list of keys gives way to the short one (`g?` lists them all). A subagent goes by its name.
    who = who and who:match('^[^:]+') or nil
    asker = who and ('%#CabooseNotice#' .. H.esc(who) .. '%* │ ') or ''
    who_w = who and w(who .. ' │ ') or 0
    local short = string.format('%s accept · %s reject · g? keys', k.accept, k.reject)
    local MIN_PATH = 8
    local fixed_full = 1 + w(keys) + 3 + who_w + w(title) + 1
    local fixed_short = 1 + w(short) + 3 + who_w + w(title) + 1
    local tail = ''
    if fixed_full + math.min(w(what), MIN_PATH) + 3 + w(counts) <= width then
      tail = ' │ ' .. counts
      what = H.cut_start(what, width - fixed_full - 3 - w(counts))
    elseif fixed_full + math.min(w(what), MIN_PATH) <= width then
      what = H.cut_start(what, width - fixed_full)
    elseif fixed_short + math.min(w(what), MIN_PATH) + 3 + w(counts) <= width then
      keys, tail = short, ' │ ' .. counts
      what = H.cut_start(what, width - fixed_short - 3 - w(counts))
    else
      -- A very narrow window: which subagent asks and the keys, in the longest form that fits, then as
      -- much of the title as fits; the subagent's name goes before the keys do.
      local forms = { short, string.format('%s accept · %s reject', k.accept, k.reject), string.format('%s ✓ %s ✗ g?', k.accept, k.reject) }
      for _, with_who in ipairs(who and { true, false } or { false }) do
        local lead, lead_w = with_who and asker or '', with_who and who_w or 0
        for _, form in ipairs(forms) do
          if 1 + lead_w + w(form) <= width then
            local room = width - 1 - lead_w - w(form) - 3
            local rest = title .. ' ' .. H.cut_start(what, MIN_PATH)
            if w(rest) > room then
              rest = room >= 4 and (vim.fn.strcharpart(rest, 0, room - 1) .. '…') or ''
            end
            vim.wo[a.win].winbar = string.format(' %s%%#CabooseNotice#%s%%*%s', lead, H.esc(form), rest ~= '' and (' │ ' .. H.esc(rest)) or '')
            return
          end
        end
      end
      vim.wo[a.win].winbar = string.format(' %%#CabooseNotice#%s%%*', H.esc(forms[#forms]))
      return
    end
    bar = string.format(' %%#CabooseNotice#%s%%* │ %s%%#CabooseTitle#%s%%* %s%s', H.esc(keys), asker, H.esc(title), H.esc(what), tail)
  end
  vim.wo[a.win].winbar = bar
end

--- The review keys (`g?` in the review buffer; `?` stays backward search).
H.show_keys = function()
  local k = H.cfg().review.keys
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
  local a = H.active
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
  return vim.api.nvim_win_get_cursor(H.active.win)[1] - 1
end

H.goto_hunk = function(i)
  local a = H.active
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

H.next_pending = function(from)
  local a = H.active
  local n = #a.rows
  for k = 1, n do
    local i = ((from - 1 + k) % n) + 1
    if not a.decisions[a.fi][i] then
      return i
    end
  end
  return nil
end

--- Records a decision for hunks `list` and moves on (to the next pending hunk, file, or the answer).
H.decide = function(list, state, reason)
  local a = H.active
  if not a then
    return
  end
  for _, i in ipairs(list) do
    a.decisions[a.fi][i] = { state = state, reason = reason }
  end
  local nxt = H.next_pending(list[#list])
  if nxt then
    H.decorate()
    H.goto_hunk(nxt)
    return
  end
  H.finish_file()
end

H.finish_file = function()
  local a = H.active
  local focused = a.win and vim.api.nvim_get_current_win() == a.win
  H.restore()
  if a.fi < #a.files then
    a.fi = a.fi + 1
    H.show(focused)
    return
  end
  if focused then
    H.go_back(a)
  end
  H.submit()
end

--- The hunk selection the host takes: per file, the hunks rejected (`rejected(fi, hi)` returns nil for an
--- accepted hunk, else the reason or ''). Also whether any hunk was accepted and the reasons given.
function M.selection(files, rejected)
  local out, reasons, any_accepted = {}, {}, false
  for fi, f in ipairs(files) do
    local list = {}
    for hi = 1, #H.units(f) do
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
  local a = H.active
  H.active = nil
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

H.pending_list = function()
  local a = H.active
  local out = {}
  for i = 1, #a.rows do
    if not a.decisions[a.fi][i] then
      table.insert(out, i)
    end
  end
  return out
end

H.keymaps = function(buf)
  local k = H.cfg().review.keys
  local map = function(lhs, fn, desc)
    if lhs and lhs ~= '' then
      vim.keymap.set('n', lhs, fn, { buffer = buf, nowait = true, desc = 'Caboose review: ' .. desc })
    end
  end
  map(k.next_hunk, function()
    local a = H.active
    local row = H.cursor_row()
    for i, r in ipairs(a.rows) do
      if r[1] > row then
        return H.goto_hunk(i)
      end
    end
    H.goto_hunk(1)
  end, 'next hunk')
  map(k.prev_hunk, function()
    local a = H.active
    local row = H.cursor_row()
    for i = #a.rows, 1, -1 do
      if a.rows[i][1] < row then
        return H.goto_hunk(i)
      end
    end
    H.goto_hunk(#a.rows)
  end, 'previous hunk')
  map(k.accept, function()
    local i = H.hunk_at(H.cursor_row())
    if i then
      H.decide({ i }, 'accepted')
    end
  end, 'accept the hunk')
  map(k.reject, function()
    local i = H.hunk_at(H.cursor_row())
    if i then
      H.ask_reason(string.format('Reject hunk %d — reason (optional): ', i), function(reason)
        H.decide({ i }, 'rejected', reason)
      end)
    end
  end, 'reject the hunk')
  map(k.accept_all, function()
    local list = H.pending_list()
    if #list > 0 then
      H.decide(list, 'accepted')
    end
  end, 'accept every remaining hunk')
  map(k.reject_all, function()
    local list = H.pending_list()
    if #list > 0 then
      H.ask_reason('Reject all — reason (optional): ', function(reason)
        H.decide(list, 'rejected', reason)
      end)
    end
  end, 'reject every remaining hunk')
  map(k.quit, function()
    local a = H.active
    H.restore()
    H.go_back(a)
  end, 'leave the review pending (:CabooseApproval comes back)')
  map('g?', H.show_keys, 'list the review keys')
  -- :q, :close, :bwipe… on the review window: like `q`, the request stays pending and can be shown again.
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      local a = H.active
      if not (a and a.rbuf == buf) then
        return -- H.restore did it
      end
      local win, r = a.win, a.restore
      a.rbuf, a.win, a.rows = nil, nil, {}
      vim.schedule(function()
        -- The file's own window kept (:bwipe in the last window): its winbar as it was.
        if not r.created and win and vim.api.nvim_win_is_valid(win) and not (H.active and H.active.win == win) then
          vim.wo[win].winbar = r.winbar or ''
        end
      end)
    end,
  })
end

--- After the review in focus is left: back to the window the user came from (the transcript, say).
H.go_back = function(a)
  local back = a and a.came_from
  if a then
    a.came_from = nil
  end
  if back and vim.api.nvim_win_is_valid(back) and vim.api.nvim_win_get_tabpage(back) == vim.api.nvim_get_current_tabpage() then
    vim.api.nvim_set_current_win(back)
  end
end

--- Puts the window back as it was (the file's buffer and view, or closes the split we opened).
H.restore = function()
  local a = H.active
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
H.show = function(focus)
  local a = H.active
  local f = a.files[a.fi]
  local fbuf = f.bufnr and vim.api.nvim_buf_is_valid(f.bufnr) and f.bufnr or H.file_buf(f.abs)
  local win = H.win_for(fbuf)
  if win and win == vim.api.nvim_get_current_win() and vim.fn.mode():match('^[iR]') then
    -- Never swap the buffer under the user's typing: open the review once they leave Insert mode.
    vim.api.nvim_create_autocmd('InsertLeave', {
      once = true,
      callback = vim.schedule_wrap(function()
        if H.active == a and not a.rbuf then
          H.show(focus)
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
  H.keymaps(rbuf)
  H.decorate()
  H.goto_hunk(H.next_pending(#a.rows) or 1)
  if focus then
    H.enter()
  end
  vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseReviewShown', modeline = false, data = { id = a.req.id, path = f.path, buf = rbuf, win = win } })
end

H.enter = function()
  local a = H.active
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

--- Starts the inline review of `req` (an approval request whose preview has `files`).
function M.open(req, opts)
  if H.active and H.active.req.id == req.id then
    return M.focus()
  end
  H.active = { req = req, files = M.files(req), fi = 1, decisions = {}, rows = {} }
  for i = 1, #H.active.files do
    H.active.decisions[i] = {}
  end
  H.show(opts and opts.focus)
end

--- Shows the review again (after `q`) and moves the cursor into it.
function M.focus()
  local a = H.active
  if not a then
    return false
  end
  if vim.api.nvim_get_current_win() ~= a.win then
    a.came_from = nil -- this jump's window is the one to come back to
  end
  if not a.rbuf then
    H.show(true)
  else
    H.enter()
  end
  return true
end

function M.active_id()
  return H.active and H.active.req.id or nil
end

--- The host withdrew or answered the request: the windows go back as they were.
function M.close(id)
  if H.active and (id == nil or H.active.req.id == id) then
    H.restore()
    H.active = nil
  end
end

--- State for tests and statuslines: the file under review, its hunks' decisions, the review buffer/window.
function M.state()
  local a = H.active
  if not a then
    return nil
  end
  return { id = a.req.id, path = a.files[a.fi].path, file = a.fi, files = #a.files, buf = a.rbuf, win = a.win, decisions = vim.deepcopy(a.decisions[a.fi]) }
end

-- The winbar's form depends on the window's width.
vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, {
  group = vim.api.nvim_create_augroup('CabooseReviewLayout', { clear = true }),
  callback = vim.schedule_wrap(function() -- after the chat took its new size
    if H.active and H.active.win and vim.api.nvim_win_is_valid(H.active.win) then
      H.winbar()
    end
  end),
})

M.ns = H.ns

return M
