--- The transcript: its buffer, and the streaming of a conversation into it (your messages, the reply's
--- text, notices and errors held while a reply streams, the task list, the empty chat's hint). Tool lines
--- are caboose.chat.tools, the reasoning caboose.chat.thinking, a reopened session caboose.chat.load.
local S = require('caboose.chat.state')
local T = require('caboose.chat.text')

local M = {}
local H = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

--- Returns the transcript buffer, creating it if needed.
function M.buf()
  if S.valid(S.buf) then
    return S.buf
  end
  S.count = S.count + 1
  local buf = S.scratch('caboose://chat/' .. S.count, false)
  vim.b[buf].caboose_chat = true
  -- Only the agent writes here: an undo history would copy every line written (a reopened session's too).
  vim.bo[buf].undolevels = -1
  require('caboose.chat.markdown').set(buf)
  S.buf = buf
  S.clear_state()
  require('caboose.chat.keys').transcript(buf)
  M.render_hint()
  if not H.resize_autocmd then
    H.resize_autocmd = vim.api.nvim_create_autocmd('VimResized', {
      group = vim.api.nvim_create_augroup('CabooseChat', { clear = true }),
      callback = function()
        chat().resize()
      end,
    })
  end
  require('caboose.context').track()
  return buf
end

--- Appends raw text at the very end of the buffer (continuing the last line), in one change.
function M.append(text)
  if text == nil or text == '' then
    return
  end
  local buf = M.buf()
  local follow = S.followers(buf)
  local lines = vim.split(text, '\n', { plain = true })
  local last = vim.api.nvim_buf_line_count(buf) - 1
  local last_line = vim.api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ''
  S.edit(buf, function()
    if lines[1] == '' then
      -- New lines only: added below the last one, which stays untouched (a fold ending on it keeps it).
      vim.api.nvim_buf_set_lines(buf, last + 1, last + 1, false, vim.list_slice(lines, 2))
    else
      vim.api.nvim_buf_set_text(buf, last, #last_line, last, #last_line, lines)
    end
  end)
  S.follow(buf, follow)
  -- A reply's big frame (a burst): its parse runs in short slices of later turns (Neovim 0.12).
  if S.streaming then
    require('caboose.chat.markdown').parse_later(buf, #text)
  end
  if S.hint then
    vim.api.nvim_buf_clear_namespace(buf, S.ns_hint, 0, -1)
    S.hint = false
  end
  if #S.queue > 0 then
    require('caboose.chat.queue').render()
  end
end

--- Starts a new block on its own line(s), separated by a blank line from what came before.
function M.block(text)
  local buf = M.buf()
  local prefix = ''
  if not S.is_empty(buf) then
    local count = vim.api.nvim_buf_line_count(buf)
    local last_line = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] or ''
    prefix = last_line == '' and '\n' or '\n\n'
  end
  M.append(prefix .. text)
end

function M.lines()
  if not S.valid(S.buf) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(S.buf, 0, -1, false)
end

-- Longest first: the hint is the first that fits the narrowest transcript window.
H.HINTS = {
  'Write below and press <CR> (or <C-s> in Insert mode) to send · g? lists the keys',
  'Write below, <CR> (<C-s> in Insert mode) sends · g? lists the keys',
  'Write below, <CR> sends · g? lists the keys',
  '<CR> sends · g? lists the keys',
  'g? lists the keys',
}

H.hint_text = function()
  local width
  for _, win in ipairs(S.wins()) do
    width = math.min(width or math.huge, vim.api.nvim_win_get_width(win))
  end
  local layout = require('caboose.chat.layout')
  width = width or (layout.vertical(S.cfg().chat.position) and layout.size() or vim.o.columns)
  for _, h in ipairs(H.HINTS) do
    if vim.api.nvim_strwidth(h) <= width then
      return h
    end
  end
  return H.HINTS[#H.HINTS]
end

--- The one-line hint an empty chat shows (under the rules lines when the chat starts with them).
M.render_hint = function()
  vim.api.nvim_buf_clear_namespace(S.buf, S.ns_hint, 0, -1)
  local hint = H.hint_text()
  if S.is_empty(S.buf) then
    vim.api.nvim_buf_set_extmark(S.buf, S.ns_hint, 0, 0, { virt_text = { { hint, 'CabooseNotice' } }, virt_text_pos = 'overlay' })
  else
    local last = vim.api.nvim_buf_line_count(S.buf) - 1
    vim.api.nvim_buf_set_extmark(S.buf, S.ns_hint, last, 0, { virt_lines = { { { '' } }, { { hint, 'CabooseNotice' } } } })
  end
  S.hint = true
end

--- The transcript as a place a reply's parts go (caboose.chat.text `reply_part`).
M.out = { append = function(t) chat().append(t) end, block = function(t) chat().block(t) end }

H.ensure_reply = function(kind)
  T.reply_part(S.reply, kind, M.out)
end

--- A message whose turn starts now (a queued one leaves the queue here).
function M.user_message(p)
  if type(p) == 'string' then
    p = { text = p }
  end
  M.buf()
  M.release_held()
  require('caboose.chat.queue').remove({ p.id })
  require('caboose.chat.thinking').close()
  S.reply = { open = false, last = nil }
  local text = T.user_text(p.text, p.context)
  M.block(text)
  -- Edit-and-resend finds the message by this mark (caboose.conversation).
  local _, breaks = text:gsub('\n', '')
  require('caboose.conversation').mark_user(S.buf, vim.api.nvim_buf_line_count(S.buf) - 1 - breaks, p.text or '')
end

function M.assistant_start()
  -- The heading waits for the first text or tool call, so a step with nothing to show adds nothing.
end

function M.assistant_delta(text)
  if text == nil or text == '' then
    return
  end
  if S.status.retry then
    chat().set_status(nil, nil, { retry = false })
  end
  require('caboose.chat.thinking').close()
  -- The text part's text so far: an interrupted reply closes the code block it leaves open.
  if not (S.reply.open and S.reply.last == 'text' and S.reply.parts) then
    S.reply.parts = {}
  end
  table.insert(S.reply.parts, text)
  H.ensure_reply('text')
  S.streaming = true
  M.append(text)
end

function M.assistant_end(info)
  require('caboose.chat.thinking').close()
  if info and info.interrupted then
    local text = S.reply.open and S.reply.last == 'text' and table.concat(S.reply.parts or {}) or ''
    H.ensure_reply('text')
    M.append(T.interrupted(text))
  end
  M.release_held()
end

M.release_held = function()
  S.streaming = false
  local held = S.held
  S.held = {}
  for _, text in ipairs(held) do
    H.write_notice(text)
  end
end

H.write_notice = function(text)
  if S.streaming then
    table.insert(S.held, text)
    return
  end
  M.block(text)
  if S.reply.open then
    S.reply.last = 'notice' -- the reply's next text starts below it
  end
end

function M.error(message)
  H.write_notice(T.error_text(message))
end

function M.notice(text)
  H.write_notice(T.notice_text(text))
end

function M.todos(items)
  local out = { '**Tasks**', '' }
  local marks = { pending = '[ ]', in_progress = '[~]', completed = '[x]' }
  for _, it in ipairs(items or {}) do
    table.insert(out, string.format('- %s %s', marks[it.status] or '[ ]', it.content))
  end
  M.block(table.concat(out, '\n'))
end

return M
