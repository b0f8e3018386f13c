--- Conversation control (issue 22): regenerate the last reply (:CabooseRetry [model], the chat's `gR`) and
--- edit-and-resend a previous message (the chat's `gI` on one of your messages: the chat forks there).
--- The host drops the turn or forks the session (src/host/session-parts/conversation-control.ts); this
--- module asks what to do with the files a dropped turn changed, and shows the editor float.
local M = {}
local H = {}

H.caboose = function()
  return require('caboose')
end

H.methods = function()
  return require('caboose.rpc').methods
end

H.notify = function(msg, level)
  H.caboose()._notify(msg, level)
end

--- The keys of the chat transcript (`chat.keys`, "" disables one).
M.DEFAULT_KEYS = { regenerate = 'gR', edit = 'gI', approval = 'gA' }

function M.keys()
  local cfg = (H.caboose().config().chat or {}).keys or {}
  return vim.tbl_extend('force', M.DEFAULT_KEYS, cfg)
end

--- True (and says so) while a turn runs: regenerate and edit-and-resend wait for it to be stopped.
H.busy = function()
  local s = H.caboose().state().state
  if s ~= nil and s ~= 'idle' then
    H.notify('a turn is running: stop it first (<C-c> or :CabooseStop), then regenerate or edit the message', vim.log.levels.WARN)
    return true
  end
  return false
end

H.names = function(files)
  local shown = {}
  for i, f in ipairs(files or {}) do
    if i > 4 then
      table.insert(shown, string.format('+%d more', #files - 4))
      break
    end
    table.insert(shown, f)
  end
  return table.concat(shown, ', ')
end

H.plural = function(n, word)
  return string.format('%d %s%s', n, word, n == 1 and '' or 's')
end

--- The files the dropped turns changed: rewind them, keep them, or cancel (vim.ui.select).
--- `on_choice('rewind'|'keep')` runs unless the user cancels.
H.ask_files = function(what, files, verb, on_choice)
  local items = { 'Rewind the files and ' .. verb, 'Keep the files and ' .. verb, 'Cancel' }
  local prompt = string.format('%s changed %s (%s): ', what, H.plural(#files, 'file'), H.names(files))
  vim.ui.select(items, { prompt = prompt }, function(_, idx)
    if idx == 1 then
      on_choice('rewind')
    elseif idx == 2 then
      on_choice('keep')
    end
  end)
end

--- A rewind stopped: files changed since the agent wrote them. Overwrite them (force) or cancel.
H.ask_conflict = function(res, on_force)
  local names = vim.tbl_map(function(c)
    return c.path .. (c.reason == 'deleted' and ' (deleted)' or c.reason == 'exists' and ' (now exists)' or '')
  end, res.conflicts or {})
  local prompt = string.format('%s changed since the agent wrote them: %s. Rewind anyway?', H.plural(#names, 'file'), table.concat(names, ', '))
  vim.ui.select({ 'Rewind', 'Cancel' }, { prompt = prompt }, function(choice)
    if choice == 'Rewind' then
      on_force()
    end
  end)
end

--- Sends `method` with `params`; while the host answers 'ask' (the dropped turns changed files) or
--- 'conflict' (a rewind met files changed since), asks the user and sends again with the answer. `done`
--- gets any other answer.
H.request_asking = function(method, params, what, verb, done)
  local function go(files, force)
    local p = vim.tbl_extend('force', params, { files = files, force = force or nil })
    return H.caboose()._request(method, p, function(err, res)
      if err or type(res) ~= 'table' then
        return
      end
      if res.status == 'ask' then
        H.ask_files(what, res.files or {}, verb, function(choice)
          go(choice)
        end)
      elseif res.status == 'conflict' then
        H.ask_conflict(res, function()
          go('rewind', true)
        end)
      else
        done(res)
      end
    end)
  end
  return go('ask')
end

--- Regenerates the last reply: the host drops the last turn (the reply, its tool calls and results) from
--- the conversation and the session, and sends the same message again. When that turn changed files,
--- asks first: rewind them, keep them, or cancel. With {model} ('provider/model', a model of the current
--- provider, a provider), the chat switches to that model first (as :CabooseModel). Refused while a turn
--- runs (stop it first). Returns at once.
---@param model string|nil
function M.retry(model)
  if H.busy() then
    return false
  end
  local params = {}
  if model and model ~= '' then
    params.model = model
  end
  return H.request_asking(H.methods().session_retry, params, 'The replies to your last message', 'regenerate', function(res)
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'CabooseRegenerated',
      modeline = false,
      data = { message = res.message, model = res.model, rewound = res.rewound or {} },
    })
  end)
end

--- :CabooseRetry [model]
function M.command(o)
  return M.retry(vim.trim(o.args or ''))
end

-- Edit and resend ----------------------------------------------------------------------------------

H.HEADING = '## You'

--- The transcript marks each of your messages (its heading) with an extmark, and keeps its text: the
--- message under the cursor is found by its mark, never by text a reply could imitate.
M.ns = vim.api.nvim_create_namespace('caboose_chat_user')
H.texts = {} ---@type table<string, string> 'buf:extmark id' → the message's text

--- Marks row `row0` (0-based) of `buf` as the heading of a user message whose text is `text`.
function M.mark_user(buf, row0, text)
  local ok, id = pcall(vim.api.nvim_buf_set_extmark, buf, M.ns, row0, 0, {})
  if ok then
    H.texts[buf .. ':' .. id] = text
  end
end

--- Forgets the marks of `buf` (its transcript is replaced).
function M.clear_marks(buf)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local prefix = buf .. ':'
  for k in pairs(H.texts) do
    if k:sub(1, #prefix) == prefix then
      H.texts[k] = nil
    end
  end
end

--- The marked user message holding row `row` (1-based) of `buf`: its index (1-based), and its text.
--- nil when the row is in a reply; false when the transcript has no marks.
H.marked_at = function(buf, row)
  local marks = vim.api.nvim_buf_get_extmarks(buf, M.ns, 0, -1, {})
  if #marks == 0 then
    return false
  end
  local index, mark = nil, nil
  for i, m in ipairs(marks) do
    if m[2] + 1 <= row then
      index, mark = i, m
    end
  end
  if not mark then
    return nil
  end
  -- A reply's heading between the message's and the cursor: the cursor is in the reply.
  local between = vim.api.nvim_buf_get_lines(buf, mark[2] + 1, row, false)
  for i, l in ipairs(between) do
    if l:match('^## ') and (between[i - 1] or '') == '' then
      return nil
    end
  end
  return index, H.texts[buf .. ':' .. mark[1]]
end

--- Which of the transcript's user messages (1-based, in order) holds row `row` of `lines`; nil when the
--- row is not inside one (a reply, a notice).
function M.user_message_at(lines, row)
  local at = nil
  for r = math.min(row, #lines), 1, -1 do
    local l = lines[r]
    if l == H.HEADING and (r == 1 or lines[r - 1] == '') then
      at = r
      break
    end
    if l:match('^## ') and (r == 1 or lines[r - 1] == '') then
      return nil -- the reply's heading (## Caboose) comes first
    end
  end
  if not at then
    return nil
  end
  local index = 0
  for r = 1, at do
    if lines[r] == H.HEADING and (r == 1 or lines[r - 1] == '') then
      index = index + 1
    end
  end
  return index, at
end

--- The text of the user message whose heading is at row `at` (its lines up to the attached-context labels
--- or the next entry).
H.text_after = function(lines, at)
  local out = {}
  for r = at + 2, #lines do
    local l = lines[r]
    if l:match('^> 📎 ') or l:match('^## ') or l:match('^> ') and lines[r - 1] == '' then
      break
    end
    table.insert(out, l)
  end
  while #out > 0 and out[#out] == '' do
    table.remove(out)
  end
  return table.concat(out, '\n')
end

H.float = nil ---@type { win: integer, buf: integer }|nil

H.close_float = function()
  local f = H.float
  H.float = nil
  if f and vim.api.nvim_win_is_valid(f.win) then
    pcall(vim.api.nvim_win_close, f.win, true)
  end
end

--- Forks the chat before its `index`-th user message (shown as `original`) and sends `text` in the new
--- branch. Asks first when the turns from there on changed files.
function M.resend(index, original, text)
  if vim.trim(text or '') == '' then
    H.notify('nothing to send', vim.log.levels.WARN)
    return false
  end
  if H.busy() then
    return false
  end
  return H.request_asking(H.methods().session_fork, { index = index, text = original }, 'The replies from this message on', 'resend', function(res)
    if res.status ~= 'forked' then
      return
    end
    H.close_float()
    H.caboose()._notify_line(string.format('forked from “%s”: the earlier branch stays in :CabooseSessions', res.forked_from_title or '?'))
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'CabooseForked',
      modeline = false,
      data = { session = res.session, from = res.from, message = res.message },
    })
    H.caboose().send(text)
  end)
end

--- Opens the user message under the cursor (in the transcript) in a float to edit it; <C-s> (or <CR> in
--- Normal mode) forks the chat there and sends the edited text; q or <Esc> (Normal mode) cancels.
function M.edit_at_cursor()
  local buf = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local index, text = H.marked_at(buf, row)
  if index == false then
    -- No marks (a transcript written another way): the headings tell.
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local at
    index, at = M.user_message_at(lines, row)
    text = index and H.text_after(lines, at) or nil
  end
  if not index or not text then
    H.notify('put the cursor on one of your messages (under a "## You" heading) to edit and resend it', vim.log.levels.WARN)
    return false
  end
  if H.busy() then
    return false
  end
  return M.edit(index, text)
end

--- The editor float for user message `index` (its text `original`).
function M.edit(index, original)
  H.close_float()
  local ebuf = vim.api.nvim_create_buf(false, true)
  vim.bo[ebuf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_lines(ebuf, 0, -1, false, vim.split(original, '\n', { plain = true }))
  vim.bo[ebuf].filetype = 'markdown'
  local width = math.min(vim.o.columns - 4, 80)
  local height = math.min(math.max(vim.api.nvim_buf_line_count(ebuf) + 1, 5), vim.o.lines - 6)
  local win = vim.api.nvim_open_win(ebuf, true, vim.tbl_extend('force', require('caboose.ui.windows').centered(width, height), {
    border = 'rounded',
    title = string.format(' Edit message %d and resend (forks the chat) ', index),
    title_pos = 'center',
  }))
  vim.wo[win].winbar = '%#CabooseNotice#<C-s> / <CR> send as a new branch · q <Esc> cancel%*'
  H.float = { win = win, buf = ebuf }
  local function send()
    if vim.fn.mode() == 'i' then
      vim.cmd('stopinsert')
    end
    M.resend(index, original, table.concat(vim.api.nvim_buf_get_lines(ebuf, 0, -1, false), '\n'))
  end
  local o = { buffer = ebuf, nowait = true }
  vim.keymap.set({ 'n', 'i' }, '<C-s>', send, vim.tbl_extend('force', o, { desc = 'Caboose: send as a new branch' }))
  vim.keymap.set('n', '<CR>', send, vim.tbl_extend('force', o, { desc = 'Caboose: send as a new branch' }))
  for _, lhs in ipairs({ 'q', '<Esc>' }) do
    vim.keymap.set('n', lhs, H.close_float, vim.tbl_extend('force', o, { desc = 'Caboose: cancel the edit' }))
  end
  return true
end

--- The float's buffer while it is open (tests).
function M._float()
  return H.float
end

return M
