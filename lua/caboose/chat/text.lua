--- The transcript's text: what each kind of entry (your message, the reply's heading, a notice, an error,
--- a tool call's details) reads as, with text from tools, the host and servers made safe to show, and
--- where a reply's parts go. Shared by live rendering (the buffer) and the bulk load of a reopened
--- session (a text writer), so both write the same lines.
local S = require('caboose.chat.state')

local M = {}
local H = {}

-- The text of each kind of entry: shared by live rendering and the bulk load of a reopened session.
M.REPLY_HEADING = '## Caboose\n\n'
M.INTERRUPTED = '\n\n_[response interrupted]_'

--- The fence (``` or ~~~, as long as it was) of a code block `text` leaves open, or nil.
M.open_fence = function(text)
  local open ---@type string|nil
  for line in ((text or '') .. '\n'):gmatch('([^\n]*)\n') do
    local f = line:match('^ ? ? ?(```+)') or line:match('^ ? ? ?(~~~+)')
    if f and not open then
      open = f
    elseif f and open and f:sub(1, 1) == open:sub(1, 1) and #f >= #open and line:match('^%s*[`~]+%s*$') then
      open = nil
    end
  end
  return open
end

--- What marks a reply cut short after `text` (its streamed text part): a code block it leaves open is
--- closed first, so the marker and every later message do not render as code.
M.interrupted = function(text)
  local fence = M.open_fence(text)
  if not fence then
    return M.INTERRUPTED
  end
  return ((text or ''):sub(-1) == '\n' and '' or '\n') .. fence .. M.INTERRUPTED
end

M.user_text = function(text, labels)
  local out = '## You\n\n' .. table.concat(M.clean_lines(text, math.huge), '\n')
  for _, label in ipairs(labels or {}) do
    out = out .. '\n> 📎 ' .. M.clean(label)
  end
  return out
end

-- Text from tools, the host and servers is shown, never trusted to be one short line: line breaks end a
-- line (or become spaces where one line is wanted), other control characters show as ^X, and a very long
-- line is cut, saying how much was left out.
M.MAX_LINE = 1000 -- bytes of a detail, notice or error line
M.MAX_TOOL_LINE = 300 -- bytes of a tool call's line
H.UNSAFE = '[%z\1-\8\10-\31\127]' -- control characters but the tab

H.cut = function(s, max)
  if #s <= max then
    return s
  end
  -- Cut on a character boundary (a trailing partial UTF-8 sequence goes with the rest).
  local head = s:sub(1, max):gsub('[\192-\255][\128-\191]*$', '')
  return string.format('%s … (%d more characters)', head, vim.fn.strchars(s:sub(#head + 1)))
end

--- One displayable line of at most `max` bytes.
M.clean = function(s, max)
  s = tostring(s == nil and '' or s)
  if s:find(H.UNSAFE) then
    s = s:gsub('\r?\n', ' '):gsub(H.UNSAFE, function(c)
      return c == '\127' and '^?' or '^' .. string.char(c:byte() + 64)
    end)
  end
  return H.cut(s, max or M.MAX_LINE)
end

--- Displayable lines of `s` (CRLF, LF end lines; each line cleaned).
M.clean_lines = function(s, max)
  s = tostring(s == nil and '' or s)
  if not s:find(H.UNSAFE) and #s <= (max or M.MAX_LINE) then
    return { s } -- most are one short line (a reopened session has thousands)
  end
  local out = {}
  for _, l in ipairs(vim.split(s, '\r?\n')) do
    out[#out + 1] = M.clean((l:gsub('\r+$', '')), max) -- a line's CR (CRLF split by the host) says nothing
  end
  return out
end

M.error_text = function(message)
  return '> **Error:** ' .. table.concat(M.clean_lines(message), '\n> ')
end

-- A quoted line, no emphasis markup (the chat shows markdown unconcealed: `_…_` would show its underscores).
M.notice_text = function(text)
  return '> ' .. M.clean(text)
end

M.detail_lines = function(details, out)
  out = out or {}
  for _, d in ipairs(details or {}) do
    for _, l in ipairs(M.clean_lines(d)) do
      out[#out + 1] = S.DETAIL .. l
    end
  end
  return out
end

-- Where a reply's text or tool line goes, shared by live rendering (the buffer) and the bulk load of a
-- reopened session (a text writer): `out` has `append(text)` and `block(text)`.
M.reply_part = function(reply, kind, out)
  if not reply.open then
    out.block(M.REPLY_HEADING)
    reply.open = true
  elseif kind == 'text' and reply.last ~= nil and reply.last ~= 'text' then
    out.block('') -- after a tool line or a notice, text starts a paragraph of its own
  end
  reply.last = kind
end

--- A tool call's line: under the previous one when the reply's last part was a tool line.
M.put_tool_line = function(reply, line, out)
  if reply.open and reply.last == 'tool' then
    out.append('\n' .. line)
  elseif not reply.open then
    M.reply_part(reply, 'tool', out)
    out.append(line) -- the heading already ends with its blank line
  else
    M.reply_part(reply, 'tool', out)
    out.block(line)
  end
  reply.last = 'tool'
end

--- Text written the way the transcript's append / block write the buffer, collected as chunks and split
--- into lines once (a long session has tens of thousands of lines). `row()` is the 0-based row of the
--- last line.
M.text_writer = function()
  local chunks, n, rows, ends_nl, empty = {}, 0, 0, false, true
  local w = {}
  function w.append(text)
    if text == '' then
      return
    end
    n = n + 1
    chunks[n] = text
    local _, nl = text:gsub('\n', '')
    rows = rows + nl
    ends_nl = text:sub(-1) == '\n'
    empty = false
  end
  function w.block(text)
    if not empty then
      text = (ends_nl and '\n' or '\n\n') .. text
    end
    w.append(text)
  end
  function w.row()
    return rows
  end
  function w.lines()
    return vim.split(table.concat(chunks), '\n', { plain = true })
  end
  return w
end

return M
