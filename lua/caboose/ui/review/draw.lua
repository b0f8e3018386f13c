--- What the review shows: the added lines highlighted, the removed ones as virtual lines above them, the
--- changed words marked, each hunk's decision at its first line, and the winbar (what is reviewed, the
--- counts and the keys, shortened to fit the window).
local R = require('caboose.ui.review.state')

local M = {}
local H = {}

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

M.decorate = function()
  local a = R.active
  local f = a.files[a.fi]
  local buf = a.rbuf
  vim.api.nvim_buf_clear_namespace(buf, R.ns, 0, -1)
  local nlines = vim.api.nvim_buf_line_count(buf)
  local units = R.units(f)
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
        vim.api.nvim_buf_set_extmark(buf, R.ns, row, 0, { end_row = row + 1, end_col = 0, hl_group = add_hl, hl_eol = true, priority = 150, strict = false })
      end
    end
    if not (d and d.state == 'rejected') then
      for _, w in ipairs(h.words or {}) do
        local row = h.newStart - 1 + w[1]
        if row < nlines then
          pcall(vim.api.nvim_buf_set_extmark, buf, R.ns, row, w[2], { end_col = w[3], hl_group = 'CabooseReviewText', priority = 160 })
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
      vim.api.nvim_buf_set_extmark(buf, R.ns, below and math.min(h.newStart - 1, nlines - 1) or first, 0, {
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
    vim.api.nvim_buf_set_extmark(buf, R.ns, first, 0, { virt_text = { { label, hl } }, virt_text_pos = 'eol', priority = 200 })
    a.rows[i] = { first, last }
  end
  M.winbar()
end

H.counts = function()
  local a = R.active
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


--- The review keys that are set (a string, not "" or false, and not left to the buffer's own mapping).
H.keys_set = function(k, skipped)
  local out = {}
  for name, lhs in pairs(k) do
    if type(lhs) == 'string' and lhs ~= '' and not (skipped and skipped[name]) then
      out[name] = lhs
    end
  end
  return out
end

H.one = function(lhs, what)
  return lhs and (lhs .. ' ' .. what) or nil
end

--- "a/b what" when both keys are set, else the one that is.
H.pair = function(a, b, what, what_a, what_b)
  if a and b then
    return a .. '/' .. b .. ' ' .. what
  end
  return H.one(a, what_a) or H.one(b, what_b)
end

H.join = function(parts, sep)
  local list = {}
  for i = 1, table.maxn(parts) do
    if parts[i] then
      table.insert(list, parts[i])
    end
  end
  return table.concat(list, sep or ' · ')
end

M.winbar = function()
  local a = R.active
  if not (a.win and vim.api.nvim_win_is_valid(a.win)) then
    return
  end
  local f = a.files[a.fi]
  local k = R.cfg().review.keys
  local acc, rej = H.counts()
  local units = R.units(f)
  -- A subagent's request says which one asks.
  local who = type(a.req.label) == 'string' and a.req.label ~= '' and a.req.label or nil
  local title = 'Review ' .. (a.req.tool or '')
  local what = H.what(a.req, f) .. (#a.files > 1 and string.format(' (file %d/%d)', a.fi, #a.files) or '')
  local counts = string.format('%d hunk%s: ✓%d ✗%d', #units, #units == 1 and '' or 's', acc, rej)
  local kk = H.keys_set(k, a.skipped)
  local keys = H.join({ H.pair(kk.next_hunk, kk.prev_hunk, 'hunk', 'next hunk', 'previous hunk'), H.one(kk.accept, 'accept'), H.one(kk.reject, 'reject'), H.pair(kk.accept_all, kk.reject_all, 'all', 'accept all', 'reject all'), H.one(kk.quit, 'later'), 'g? keys' })
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
    local short = H.join({ H.one(kk.accept, 'accept'), H.one(kk.reject, 'reject'), 'g? keys' })
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
      local forms = {
        short,
        H.join({ H.one(kk.accept, 'accept'), H.one(kk.reject, 'reject') }),
        H.join({ H.one(kk.accept, '✓'), H.one(kk.reject, '✗'), 'g?' }, ' '),
      }
      forms = vim.tbl_filter(function(x)
        return x ~= ''
      end, forms)
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

return M
