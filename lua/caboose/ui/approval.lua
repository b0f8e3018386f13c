--- Approval float: the tool, a summary of its arguments (computed by the host) and a preview (diff,
--- command or text); never modal. The keys stay in the footer; the body wraps and scrolls.
--- It opens WITHOUT focus, so what the user is typing stays in their buffer; :CabooseApproval (or
--- <Plug>(CabooseApproval)) jumps in. Keys in the float: <CR>/o approve once (default), a always allow this
--- tool (after a yes/no confirmation), r reject (asks a reason), q/<Esc> hide (come back with
--- :CabooseApproval, or answer with require('caboose').approval_respond()).
local M = {}
local H = {}

H.pending = {} ---@type table[] queue of requests, first is shown
H.win = nil
H.buf = nil
H.shown_id = nil ---@type string|nil the request the float shows
H.grace_until = 0 ---@type number decision keys are ignored until then (ms, vim.uv.hrtime based)

-- The keys, longest form first: the first that fits the float's width is shown.
H.FOOTER = { ' [o/<CR>] once  [a] always  [r] reject  [q] hide ', ' [o] once [a] always [r] reject [q] hide ' }
H.FOOTER_HUNKS = {
  ' [t] hunk off/on  [o/<CR>] once  [a] always  [r] reject  [q] hide ',
  ' [t] hunk  [o/<CR>] once  [a] always  [r] reject  [q] hide ',
  ' [t] hunk [o] once [a] always [r] reject [q] hide ',
  ' t hunk · o once · a always · r reject · q ',
}
-- Until the user is in the float its keys do nothing: say how to get there.
H.FOOTER_UNFOCUSED = { ' answer: :CabooseApproval (ga in the chat) ', ' answer: :CabooseApproval ' }

H.footer = function(forms, width)
  for _, f in ipairs(forms) do
    if vim.api.nvim_strwidth(f) <= width then
      return f
    end
  end
  return forms[#forms]
end

H.current = function()
  return H.pending[1]
end

H.skipped = {} ---@type table<string, table<string, boolean>> per request: 'file:hunk' the user toggled off
H.hunk_at_line = {} ---@type table<integer, { fi: integer, hi: integer }> float line → hunk (files with hunks)
H.word_marks = {} ---@type integer[][] changed words in the hunks' added lines: { line (1-based), start col, end col } (0-based)

--- The files whose hunks can be toggled in the float (edits of existing files).
H.hunk_files = function(req)
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
  H.hunk_at_line = {}
  H.word_marks = {}
  local skipped = H.skipped[req.id] or {}
  for fi, f in ipairs(H.hunk_files(req)) do
    add(string.format('── %s%s (%s) ──', f.path, f.toPath and (' → ' .. f.toPath) or '', f.operation))
    local units = f.operation == 'edit' and f.hunks or { f.hunks[1] or { oldStart = 0, oldLines = 0, newStart = 0, newLines = 0, removed = {}, added = {} } }
    for hi, h in ipairs(units) do
      local off = skipped[fi .. ':' .. hi]
      add(string.format('@@ hunk %d/%d -%d,%d +%d,%d @@%s', hi, #units, h.oldStart, h.oldLines, h.newStart, h.newLines, off and '  ✗ skipped' or ''))
      H.hunk_at_line[H.line_count] = { fi = fi, hi = hi }
      for _, l in ipairs(h.removed) do
        add('-' .. l)
        H.hunk_at_line[H.line_count] = { fi = fi, hi = hi }
      end
      local first_added = H.line_count + 1
      for _, l in ipairs(h.added) do
        add('+' .. l)
        H.hunk_at_line[H.line_count] = { fi = fi, hi = hi }
      end
      for _, w in ipairs(h.words or {}) do
        -- [offset in `added`, byte start, byte end): the '+' shifts the columns by one.
        table.insert(H.word_marks, { first_added + w[1], w[2] + 1, w[3] + 1 })
      end
    end
  end
end

--- The answer with the toggled-off hunks rejected ('reject' when every hunk is off).
H.answer_with_hunks = function(req, decision)
  local files = H.hunk_files(req)
  local skipped = H.skipped[req.id] or {}
  if not files or next(skipped) == nil then
    return H.answer(req, decision)
  end
  local out, any_on = require('caboose.ui.review').selection(files, function(fi, hi)
    return skipped[fi .. ':' .. hi] and '' or nil
  end)
  if not any_on then
    return H.answer(req, 'reject', 'the user turned off every hunk')
  end
  return H.answer(req, decision, nil, { files = out })
end

H.toggle_hunk = function()
  local req = H.current()
  if not (req and H.hunk_files(req) and H.win and vim.api.nvim_win_is_valid(H.win)) then
    return
  end
  local at = H.hunk_at_line[vim.api.nvim_win_get_cursor(H.win)[1]]
  if not at then
    require('caboose')._notify('t turns off the hunk under the cursor: move to one of its lines (@@ hunk …) first')
    return
  end
  H.skipped[req.id] = H.skipped[req.id] or {}
  local key = at.fi .. ':' .. at.hi
  H.skipped[req.id][key] = not H.skipped[req.id][key] or nil
  local cursor = vim.api.nvim_win_get_cursor(H.win)
  H.render()
  pcall(vim.api.nvim_win_set_cursor, H.win, cursor)
end

--- Body lines: the host's summary of the arguments, then the preview.
H.lines_for = function(req)
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
  if H.hunk_files(req) then
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

--- When the text does not fit the float: which lines show (long and short form), so the user knows
--- there is more to read.
H.scroll_marker = function()
  if not (H.win and vim.api.nvim_win_is_valid(H.win)) then
    return nil
  end
  local total = vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(H.win))
  local rows = vim.api.nvim_win_text_height(H.win, {}).all
  if rows <= vim.api.nvim_win_get_height(H.win) then
    return nil
  end
  local first = vim.fn.line('w0', H.win)
  local last = vim.fn.line('w$', H.win)
  local arrow = last < total and (first > 1 and '↕' or '▼') or '▲'
  return { string.format(' %s lines %d–%d of %d ', arrow, first, last, total), string.format(' %s %d–%d/%d', arrow, first, last, total) }
end

--- The footer forms with the scroll marker in front (when the text scrolls): the marker always shows.
H.footer_forms = function(forms)
  local marker = H.scroll_marker()
  if not marker then
    return forms
  end
  local out = {}
  -- The fullest keys first (with the long, then the short marker), then shorter keys.
  for _, f in ipairs(forms) do
    for _, m in ipairs(marker) do
      table.insert(out, m .. f)
    end
  end
  table.insert(out, marker[2] .. ' ')
  return out
end

H.close_win = function()
  if H.win and vim.api.nvim_win_is_valid(H.win) then
    pcall(vim.api.nvim_win_close, H.win, true)
  end
  H.win = nil
end

--- ` Caboose: approve edit_file? (create mode) `; a subagent's request starts with its name (`agent #2 ·`).
H.title = function(req)
  local title = string.format(' Caboose: approve %s? (%s mode) ', req.tool or '?', req.mode or '?')
  local who = type(req.label) == 'string' and req.label:match('^[^:]+') or nil
  return who and (' ' .. vim.fn.strcharpart(who, 0, 24) .. ' ·' .. title) or title
end

--- Screen rows of the chat's message area (with the line above it), if it is shown in this tab.
H.message_area = function()
  local chat = package.loaded['caboose.chat']
  local win = chat and chat.input_win()
  if not win then
    return nil
  end
  local pos = vim.api.nvim_win_get_position(win)
  local winbar = vim.wo[win].winbar ~= '' and 1 or 0
  return { top = pos[1] - 1, bottom = pos[1] + winbar + vim.api.nvim_win_get_height(win) + 1, col = pos[2], width = vim.api.nvim_win_get_width(win) }
end

--- Size and place the float: as wide as readable, as high as its (wrapped) text, within the screen and
--- never over the chat's message area (the user may be typing there).
H.layout = function(req, height)
  local width = math.min(math.max(60, math.floor(vim.o.columns * 0.7)), vim.o.columns - 4)
  local col = math.floor((vim.o.columns - width - 2) / 2)
  local rows = vim.o.lines - vim.o.cmdheight -- editor rows a float may cover
  local lo, hi = 0, rows -- the rows the float, borders included, may take: lo .. hi - 1
  local m = H.message_area()
  if m and col < m.col + m.width and m.col < col + width + 2 then
    local above, below = math.max(0, m.top), math.max(0, rows - m.bottom)
    if above >= below then
      -- The transcript's last lines stay visible too when the float keeps 5 text rows.
      hi = above - 2 >= 7 and above - 2 or above
    else
      lo = m.bottom
    end
  end
  local band = hi - lo
  -- Text rows: at most 80% of the screen, and always two borders (and a margin on a full screen) short of it.
  local max_height = math.max(1, math.min(band - (band == rows and 3 or 2), math.max(5, math.floor(rows * 0.8))))
  height = math.max(1, math.min(height, max_height))
  return {
    relative = 'editor',
    width = width,
    height = height,
    row = lo + math.max(0, math.floor((band - height - 2) / 2)),
    col = col,
    style = 'minimal',
    border = 'rounded',
    title = H.title(req),
    title_pos = 'center',
    footer = H.footer(H.footer_forms((H.win and vim.api.nvim_get_current_win() == H.win) and (H.hunk_files(req) and H.FOOTER_HUNKS or H.FOOTER) or H.FOOTER_UNFOCUSED), width),
    footer_pos = 'center',
    focusable = true,
  }
end

--- Inline review in the file's window (approval.style 'inline') for changes to files.
H.inline = function(req)
  return require('caboose').config().approval.style == 'inline' and require('caboose.ui.review').files(req) ~= nil
end

H.render = function()
  local req = H.current()
  if not req then
    H.close_win()
    return
  end
  if H.inline(req) then
    H.close_win()
    require('caboose.ui.review').open(req)
    return
  end
  if not (H.buf and vim.api.nvim_buf_is_valid(H.buf)) then
    H.buf = vim.api.nvim_create_buf(false, true)
    vim.bo[H.buf].bufhidden = 'hide'
    vim.bo[H.buf].filetype = 'caboose_approval'
    H.keymaps(H.buf)
    vim.api.nvim_create_autocmd({ 'BufEnter', 'BufLeave' }, {
      buffer = H.buf,
      callback = function()
        vim.schedule(H.relayout) -- after the window switch, so the footer matches the focus
      end,
    })
  end
  local lines = H.lines_for(req)
  vim.bo[H.buf].modifiable = true
  vim.api.nvim_buf_set_lines(H.buf, 0, -1, false, lines)
  vim.bo[H.buf].modifiable = false
  H.highlight(H.buf, lines, req)
  vim.b[H.buf].caboose_approval_id = req.id
  local cfg = H.layout(req, #lines)
  local opened = false
  if H.win and vim.api.nvim_win_is_valid(H.win) then
    vim.api.nvim_win_set_config(H.win, cfg)
  else
    opened = true
    -- Never take focus: keys typed in the user's buffer while a request arrives must stay there.
    H.win = vim.api.nvim_open_win(H.buf, false, cfg)
    require('caboose.ui.windows').fix_buffer(H.win)
    vim.wo[H.win].winhighlight = 'FloatBorder:CabooseApprovalBorder,FloatTitle:CabooseApprovalTitle,FloatFooter:CabooseApprovalTitle'
    vim.wo[H.win].wrap = true
    vim.wo[H.win].linebreak = true
    vim.wo[H.win].breakindent = true
  end
  -- Wrapped lines take more rows than lines: fit the float to its text (clamped by H.layout).
  local rows = vim.api.nvim_win_text_height(H.win, {}).all
  if rows ~= cfg.height then
    vim.api.nvim_win_set_config(H.win, H.layout(req, rows))
  end
  -- Again once the height is final: the footer's scroll marker depends on it.
  vim.api.nvim_win_set_config(H.win, H.layout(req, rows))
  local changed = H.shown_id ~= req.id
  if changed then
    H.shown_id = req.id
    pcall(vim.api.nvim_win_set_cursor, H.win, { 1, 0 })
    -- A new request under the user's cursor: a key pressed twice must not answer it unseen.
    local focused = vim.api.nvim_get_current_win() == H.win
    H.grace_until = focused and (H.now() + require('caboose').config().approval.grace_ms) or 0
  end
  if changed or opened then
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseApprovalShown', modeline = false, data = { id = req.id, tool = req.tool } })
  end
end

--- Re-fit the open float (focus changed, or the screen was resized).
H.relayout = function()
  local req = H.current()
  if req and H.win and vim.api.nvim_win_is_valid(H.win) then
    vim.api.nvim_win_set_config(H.win, H.layout(req, vim.api.nvim_win_text_height(H.win, {}).all))
    -- The width may have changed, and with it the wrapped height.
    vim.api.nvim_win_set_config(H.win, H.layout(req, vim.api.nvim_win_text_height(H.win, {}).all))
  end
end

-- Scrolling the float moves its scroll marker (the lines shown).
vim.api.nvim_create_autocmd('WinScrolled', {
  group = vim.api.nvim_create_augroup('CabooseApprovalScroll', { clear = true }),
  callback = function()
    if H.win and vim.api.nvim_win_is_valid(H.win) and vim.v.event[tostring(H.win)] then
      H.relayout()
    end
  end,
})

-- WinResized: the chat opened, closed or changed size (its message area must stay uncovered).
vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, {
  group = vim.api.nvim_create_augroup('CabooseApprovalLayout', { clear = true }),
  callback = vim.schedule_wrap(function() -- after the chat took its new size
    H.relayout()
  end),
})

H.ns = vim.api.nvim_create_namespace('caboose_approval')

--- Diff lines in the preview get the CabooseDiff* groups (linked to DiffAdd/DiffDelete); the changed
--- words of added lines CabooseReviewText (DiffText), drawn over their line's group.
H.highlight = function(buf, lines, req)
  vim.api.nvim_buf_clear_namespace(buf, H.ns, 0, -1)
  if not (type(req.preview) == 'table' and req.preview.kind == 'diff') then
    return
  end
  if H.hunk_files(req) then
    for _, w in ipairs(H.word_marks) do
      pcall(vim.api.nvim_buf_set_extmark, buf, H.ns, w[1] - 1, w[2], { end_col = w[3], hl_group = 'CabooseReviewText', priority = 160 })
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
      vim.api.nvim_buf_set_extmark(buf, H.ns, i - 1, 0, { end_row = i - 1, end_col = #l, hl_group = group, hl_eol = true, priority = 150 })
    end
  end
end

H.now = function()
  return vim.uv.hrtime() / 1e6
end

--- Runs a decision key's action on the request shown, unless the request only just replaced another.
H.decision_key = function(fn)
  return function()
    local req = H.current()
    if not req then
      return
    end
    if H.now() < H.grace_until then
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

H.keymaps = function(buf)
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
          if H.current() == req and H.win and vim.api.nvim_win_is_valid(H.win) then
            vim.api.nvim_set_current_win(H.win)
          end
          return
        end
        H.answer(req, 'reject', reason)
      end)
    end),
    'reject'
  )
  map('q', H.close_win, 'hide')
  map('<Esc>', H.close_win, 'hide')
end

--- Called for each approval_request event from the host.
function M.show(req)
  table.insert(H.pending, req)
  if #H.pending == 1 then
    H.render()
  end
  H.refresh_status()
end

--- The state says "pending approval" while any request waits (a subagent's too).
H.refresh_status = function()
  require('caboose')._approvals_changed()
end

--- Show the float of the pending approval (after hiding it) and move the cursor into it.
function M.focus()
  if not H.current() then
    -- A :CabooseEdit review is not an approval request, but it waits for an answer too.
    return require('caboose.ui.review').focus()
  end
  if H.inline(H.current()) then
    H.render()
    return require('caboose.ui.review').focus()
  end
  H.render()
  if vim.fn.mode():match('^[iR]') then
    vim.cmd('stopinsert') -- the float's keys are normal-mode keys
  end
  vim.api.nvim_set_current_win(H.win)
  return true
end

function M.pending()
  return vim.deepcopy(H.pending)
end

--- Answer the first pending request (no confirmation: this is the API).
---@param decision 'once'|'always'|'reject'
---@param reason string|nil
function M.respond(decision, reason)
  local req = H.current()
  if not req then
    vim.notify('(caboose) no approval is pending', vim.log.levels.WARN)
    return false
  end
  if not vim.tbl_contains({ 'once', 'always', 'reject' }, decision) then
    vim.notify('(caboose) decision must be once, always or reject', vim.log.levels.ERROR)
    return false
  end
  return H.answer(req, decision, reason)
end

--- Answers `req` itself (a confirmation or a reason prompt may end after the request was withdrawn).
H.answer = function(req, decision, reason, review)
  if not vim.tbl_contains(H.pending, req) then
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

--- The host closed a request (answered, or cancelled by :CabooseStop).
function M.close(id)
  require('caboose.ui.review').close(id)
  H.skipped[id] = nil
  for i, req in ipairs(H.pending) do
    if req.id == id then
      table.remove(H.pending, i)
      break
    end
  end
  if H.current() then
    H.render()
  else
    H.close_win()
  end
  H.refresh_status()
end

function M.close_all()
  require('caboose.ui.review').close(nil)
  H.pending = {}
  H.close_win()
  H.refresh_status()
end

--- The mode changed (:CabooseMode): the requests that still wait say the mode now in force (the host
--- answered those the new mode does not ask about).
function M.mode_changed(mode)
  local changed = false
  for _, req in ipairs(H.pending) do
    if req.mode ~= mode then
      req.mode, changed = mode, true
    end
  end
  if changed and H.current() and H.win and vim.api.nvim_win_is_valid(H.win) then
    H.render()
  end
end

--- How many requests wait for an answer.
function M.count()
  return #H.pending
end

--- Whether a subagent's request waits (its parent keeps executing tools meanwhile).
function M.subagent_waiting()
  for _, req in ipairs(H.pending) do
    if type(req.label) == 'string' and req.label ~= '' then
      return true
    end
  end
  return false
end

--- Internal (review.lua): answers `req` with an optional hunk selection.
M._answer = function(req, decision, reason, review)
  return H.answer(req, decision, reason, review)
end

return M
