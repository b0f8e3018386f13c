--- What the approval float says: who asks and why, the host's summary of the arguments, and the preview
--- (a command, a diff, or a diff as hunks the user can turn off), with the diff's highlights.
local A = require('caboose.ui.approval.state')

local M = {}
local H = {}

H.word_marks = {} ---@type integer[][] changed words in the hunks' added lines: { line (1-based), start col, end col } (0-based)

--- The files whose hunks can be toggled in the float (edits of existing files).
M.hunk_files = function(req)
  local files = require('caboose.ui.review').files(req)
  if not files then
    return nil
  end
  for _, f in ipairs(files) do
    if f.operation == 'edit' and #f.hunks > 0 then
      return files
    end
  end
  return nil
end

--- The preview as hunks: a header per hunk (with its state) then its removed and added lines.
H.hunk_body = function(req, add)
  A.hunk_at_line = {}
  H.word_marks = {}
  local skipped = A.skipped[req.id] or {}
  for fi, f in ipairs(M.hunk_files(req)) do
    add(string.format('── %s%s (%s) ──', f.path, f.toPath and (' → ' .. f.toPath) or '', f.operation))
    local units = f.operation == 'edit' and f.hunks or { f.hunks[1] or { oldStart = 0, oldLines = 0, newStart = 0, newLines = 0, removed = {}, added = {} } }
    for hi, h in ipairs(units) do
      local off = skipped[fi .. ':' .. hi]
      add(string.format('@@ hunk %d/%d -%d,%d +%d,%d @@%s', hi, #units, h.oldStart, h.oldLines, h.newStart, h.newLines, off and '  ✗ skipped' or ''))
      A.hunk_at_line[H.line_count] = { fi = fi, hi = hi }
      for _, l in ipairs(h.removed) do
        add('-' .. l)
        A.hunk_at_line[H.line_count] = { fi = fi, hi = hi }
      end
      local first_added = H.line_count + 1
      for _, l in ipairs(h.added) do
        add('+' .. l)
        A.hunk_at_line[H.line_count] = { fi = fi, hi = hi }
      end
      for _, w in ipairs(h.words or {}) do
        -- [offset in `added`, byte start, byte end): the '+' shifts the columns by one.
        table.insert(H.word_marks, { first_added + w[1], w[2] + 1, w[3] + 1 })
      end
    end
  end
end

--- Body lines: the host's summary of the arguments, then the preview.
M.lines = function(req)
  local lines = {}
  H.line_count = 0
  local add = function(s)
    for _, l in ipairs(vim.split(s, '\n', { plain = true })) do
      table.insert(lines, l)
      H.line_count = #lines
    end
  end
  if type(req.label) == 'string' and req.label ~= '' then
    add('asked by ' .. req.label) -- the title has room for the subagent's name only
  end
  if type(req.reason) == 'string' and req.reason ~= '' then
    add('⚠ ' .. req.reason) -- asked although the mode would not ask (a file that usually holds secrets)
  end
  for _, l in ipairs(type(req.summary) == 'table' and req.summary or {}) do
    add(tostring(l))
  end
  local p = req.preview
  local body
  if M.hunk_files(req) then
    if #lines > 0 then
      add('')
    end
    H.hunk_body(req, add)
    return lines
  end
  if type(p) == 'table' and p.kind == 'command' then
    -- The host's display form shows every line numbered and control characters made visible.
    body = type(p.display) == 'string' and p.display or ('$ ' .. H.visible(p.command or ''))
    -- Where it runs (issue 19): inside the sandbox, or OUTSIDE it (escalation, no sandbox, sandbox off).
    if type(p.sandbox) == 'string' and p.sandbox ~= '' then
      body = (p.sandbox:find('OUTSIDE', 1, true) and '⚠ ' or '') .. p.sandbox .. '\n' .. body
    end
  elseif type(p) == 'table' and p.kind == 'diff' then
    body = p.diff ~= '' and p.diff or '(no change)'
  elseif type(p) == 'table' and p.kind == 'text' then
    body = p.text or ''
  end
  if body then
    if #lines > 0 then
      add('')
    end
    add(body)
  end
  if #lines == 0 then
    add('(no arguments)')
  end
  return lines
end

--- Control characters made visible (^M, ^[): nothing in a command may hide what follows it.
H.visible = function(s)
  return (s:gsub('[%z\1-\8\11-\31\127]', function(c)
    return c == '\127' and '^?' or ('^' .. string.char(c:byte() + 64))
  end))
end

--- Diff lines in the preview get the CabooseDiff* groups (linked to DiffAdd/DiffDelete); the changed
--- words of added lines CabooseReviewText (DiffText), drawn over their line's group.
M.highlight = function(buf, lines, req)
  vim.api.nvim_buf_clear_namespace(buf, A.ns, 0, -1)
  if not (type(req.preview) == 'table' and req.preview.kind == 'diff') then
    return
  end
  if M.hunk_files(req) then
    for _, w in ipairs(H.word_marks) do
      pcall(vim.api.nvim_buf_set_extmark, buf, A.ns, w[1] - 1, w[2], { end_col = w[3], hl_group = 'CabooseReviewText', priority = 160 })
    end
  end
  for i, l in ipairs(lines) do
    local group
    if l:match('^%+') and not l:match('^%+%+%+ ') then
      group = 'CabooseDiffAdd'
    elseif l:match('^%-') and not l:match('^%-%-%- ') then
      group = 'CabooseDiffDelete'
    elseif l:match('^@@') then
      group = 'CabooseDiffHunk'
    end
    if group then
      vim.api.nvim_buf_set_extmark(buf, A.ns, i - 1, 0, { end_row = i - 1, end_col = #l, hl_group = group, hl_eol = true, priority = 150 })
    end
  end
end

return M
