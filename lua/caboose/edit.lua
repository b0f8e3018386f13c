--- Visual-selection edits (:'<,'>CabooseEdit {instruction}, <Plug>(CabooseEdit)): the selected lines go to
--- the model with the instruction; its replacement is shown as an inline review in the source window.
--- The range is tracked with extmarks while the request runs (text inserted above it moves it); when the
--- range itself was edited meanwhile, the answer is refused as stale. Accepting writes through the host's
--- stale-gated write path for files (one undo step; disk for clean buffers, buffer only for unsaved ones)
--- and straight into the buffer for buffers without a file.
local M = {}
local H = {}

H.ns = vim.api.nvim_create_namespace('caboose_edit')
H.active = {} ---@type table<integer, table> running requests by id
H.next_id = 0
H.SPINNER = { '⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏' }
H.CONTEXT_LINES = 5

H.lines = function(buf, s, e)
  return vim.api.nvim_buf_get_lines(buf, s, e, false)
end

--- The tracked range now: 0-based start row and end row (exclusive).
H.range = function(job)
  local s = vim.api.nvim_buf_get_extmark_by_id(job.buf, H.ns, job.start_mark, {})
  local e = vim.api.nvim_buf_get_extmark_by_id(job.buf, H.ns, job.end_mark, {})
  if not s[1] or not e[1] then
    return nil
  end
  return s[1], e[1] + 1
end

--- The tracked range while it still holds the lines the model saw; else the request ends as stale (nil).
H.unchanged = function(job, when)
  local s, e = H.range(job)
  if s and vim.deep_equal(H.lines(job.buf, s, e), job.original) then
    return s, e
  end
  H.finish(job)
  H.notify('the selected lines changed ' .. when .. ': the edit was not applied (stale)', vim.log.levels.WARN)
  return nil
end

H.stop_spinner = function(job)
  if job.timer then
    job.timer:stop()
    job.timer:close()
    job.timer = nil
  end
end

H.spin = function(job)
  job.frame = (job.frame % #H.SPINNER) + 1
  local s = H.range(job)
  if not s or not vim.api.nvim_buf_is_valid(job.buf) then
    return
  end
  job.progress = vim.api.nvim_buf_set_extmark(job.buf, H.ns, s, 0, {
    id = job.progress,
    virt_text = { { H.SPINNER[job.frame] .. ' Caboose: ' .. job.instruction, 'CabooseEditProgress' } },
    virt_text_pos = 'eol',
  })
end

H.finish = function(job)
  H.active[job.id] = nil
  H.stop_spinner(job)
  if vim.api.nvim_buf_is_valid(job.buf) then
    vim.api.nvim_buf_clear_namespace(job.buf, H.ns, 0, -1)
  end
end

H.notify = function(msg, level)
  vim.notify('(caboose) ' .. msg, level or vim.log.levels.INFO)
end

--- Relative path of a file buffer inside the working directory (nil for buffers without a file).
H.path = function(buf)
  if vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil
  end
  return vim.fn.fnamemodify(name, ':p')
end

--- Starts an edit request for lines `line1`..`line2` (1-based) of the current buffer.
---@param opts { line1: integer, line2: integer, instruction: string|nil, buf: integer|nil }
function M.start(opts)
  local buf = opts.buf or vim.api.nvim_get_current_buf()
  local instruction = opts.instruction and vim.trim(opts.instruction) or ''
  if instruction == '' then
    vim.ui.input({ prompt = 'Caboose edit: ' }, function(text)
      if text and vim.trim(text) ~= '' then
        M.start(vim.tbl_extend('force', opts, { instruction = text, buf = buf }))
      end
    end)
    return
  end
  local line1, line2 = math.min(opts.line1, opts.line2), math.max(opts.line1, opts.line2)
  local text = H.lines(buf, line1 - 1, line2)
  H.next_id = H.next_id + 1
  local job = { id = H.next_id, buf = buf, instruction = instruction, original = text, frame = 0 }
  job.start_mark = vim.api.nvim_buf_set_extmark(buf, H.ns, line1 - 1, 0, { right_gravity = false })
  job.end_mark = vim.api.nvim_buf_set_extmark(buf, H.ns, line2 - 1, 0, { right_gravity = false })
  H.active[job.id] = job
  H.spin(job)
  job.timer = vim.uv.new_timer()
  job.timer:start(100, 100, vim.schedule_wrap(function()
    if H.active[job.id] then
      H.spin(job)
    end
  end))
  local abs = H.path(buf)
  local rel = abs and vim.fn.fnamemodify(abs, ':.') or nil
  job.abs, job.rel = abs, rel
  local params = {
    id = job.id,
    instruction = instruction,
    path = rel,
    filetype = vim.bo[buf].filetype,
    start_line = line1,
    end_line = line2,
    text = table.concat(text, '\n'),
    before = table.concat(H.lines(buf, math.max(0, line1 - 1 - H.CONTEXT_LINES), line1 - 1), '\n'),
    after = table.concat(H.lines(buf, line2, line2 + H.CONTEXT_LINES), '\n'),
  }
  local caboose = require('caboose')
  local sent = caboose._request(require('caboose.rpc').methods.selection_edit, params, function(err, res)
    if not H.active[job.id] then
      return true -- stopped meanwhile
    end
    if err then
      H.finish(job)
      return false -- reported by the caller
    end
    if type(res) ~= 'table' or res.cancelled then
      H.finish(job)
      return true
    end
    H.answer(job, res)
    return true
  end)
  if not sent then
    H.finish(job)
  end
  return job.id
end

--- The model answered: refuse when the range changed, else review the replacement in place.
H.answer = function(job, res)
  if not vim.api.nvim_buf_is_valid(job.buf) then
    return H.finish(job)
  end
  local s, e = H.unchanged(job, 'while the request ran')
  if not s then
    return
  end
  -- Progress off; the range marks stay for the review.
  H.stop_spinner(job)
  if job.progress then
    pcall(vim.api.nvim_buf_del_extmark, job.buf, H.ns, job.progress)
  end
  local all = H.lines(job.buf, 0, -1)
  local new = {}
  vim.list_extend(new, all, 1, s)
  vim.list_extend(new, res.lines or {})
  vim.list_extend(new, all, e + 1, #all)
  local hunks = {}
  for _, h in ipairs(res.hunks or {}) do
    local c = vim.deepcopy(h)
    c.oldStart, c.newStart = h.oldStart + s, h.newStart + s
    table.insert(hunks, c)
  end
  local display = job.rel or ('[buffer ' .. job.buf .. ']')
  local req = {
    id = 'edit-' .. job.id,
    tool = 'CabooseEdit',
    preview = {
      kind = 'diff',
      files = { { path = display, abs = job.abs or '', bufnr = job.buf, operation = 'edit', lines = new, hunks = hunks } },
    },
    on_answer = function(decision, _, review)
      H.apply(job, res.hunks or {}, decision, review)
    end,
  }
  if #hunks == 0 then
    H.finish(job)
    H.notify('the model left the selection as it was')
    return
  end
  job.review_id = req.id
  require('caboose.ui.review').open(req, { focus = vim.api.nvim_get_current_buf() == job.buf })
end

--- Applies the accepted hunks (a review answer) to the range, if it is still what the model saw.
H.apply = function(job, hunks, decision, review)
  if decision == 'reject' then
    H.finish(job)
    return
  end
  local rejected = {}
  for _, f in ipairs(review and review.files or {}) do
    for _, r in ipairs(f.rejected) do
      rejected[r.hunk] = true
    end
  end
  local s, e = H.unchanged(job, 'during the review')
  if not s then
    return
  end
  local lines = H.merge(job.original, hunks, rejected)
  H.finish(job)
  if not job.abs then
    vim.api.nvim_buf_set_lines(job.buf, s, e, false, lines) -- one change, one undo step
    return
  end
  -- A file: through the host's stale-gated write path (the buffer as the agent's tools see it).
  local buf_lines = H.lines(job.buf, 0, -1)
  local content = {}
  vim.list_extend(content, buf_lines, 1, s)
  vim.list_extend(content, lines)
  vim.list_extend(content, buf_lines, e + 1, #buf_lines)
  local text = table.concat(content, '\n') .. ((vim.bo[job.buf].eol or vim.bo[job.buf].fixeol) and #content > 0 and '\n' or '')
  local methods = require('caboose.rpc').methods
  local caboose = require('caboose')
  caboose._request(methods.tool_call, { name = 'read_file', args = { path = job.abs, startLine = 1, endLine = 1 } }, function(err, read)
    if err or type(read) ~= 'table' or not read.ok then
      H.notify('could not read ' .. job.rel .. ': ' .. tostring(err or (read and read.error and read.error.message)), vim.log.levels.ERROR)
      return true
    end
    local args = { path = job.abs, content = text, expectedSha256 = read.data.sha256 }
    caboose._request(methods.tool_call, { name = 'write_file', args = args }, function(err2, res)
      if err2 or type(res) ~= 'table' or not res.ok then
        local msg = err2 or (res and res.error and (res.error.kind .. ': ' .. res.error.message)) or '?'
        H.notify('the edit was not applied: ' .. tostring(msg), vim.log.levels.WARN)
      end
      return true
    end)
    return true
  end)
end

--- The selection's lines with only the accepted hunks applied (the host's hunks, relative to the selection).
H.merge = function(old, hunks, rejected)
  local out, oi = {}, 1
  for i, h in ipairs(hunks) do
    local first = h.oldLines == 0 and h.oldStart + 1 or h.oldStart -- an insertion comes after line oldStart
    for k = oi, first - 1 do
      table.insert(out, old[k])
    end
    if rejected[i] then
      for k = first, first + h.oldLines - 1 do
        table.insert(out, old[k])
      end
    else
      vim.list_extend(out, h.added)
    end
    oi = first + h.oldLines
  end
  for k = oi, #old do
    table.insert(out, old[k])
  end
  return out
end

--- Cancels every running edit request (:CabooseStop); the buffers stay as they were.
function M.stop()
  local any = false
  for id, job in pairs(H.active) do
    any = true
    if job.review_id then
      require('caboose.ui.review').close(job.review_id)
    end
    H.finish(job)
    if require('caboose.rpc').is_running() then
      require('caboose')._request(require('caboose.rpc').methods.selection_edit_cancel, { id = id }, function()
        return true
      end)
    end
  end
  return any
end

function M.running()
  return vim.tbl_count(H.active)
end

M.ns = H.ns

return M
