--- Context from the editor attached to a message: `#buffer` (the buffer you came from, unsaved text
--- included), `@path` (a file; completion in the message area), a visual range. Lua only gathers what
--- the editor knows (text, path, range, filetype); the host reads files and writes the prompt.
local M = {}
local H = {}

--- Buffers that are the user's code (not the chat, not help or terminal windows).
function M.is_code_buffer(buf)
  return vim.api.nvim_buf_is_valid(buf)
    and vim.bo[buf].buftype == ''
    and not vim.b[buf].caboose_chat
    and not vim.b[buf].caboose_input
end

--- Path as the user sees it: relative to the working directory when inside it; '' when unnamed.
H.display_path = function(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return ''
  end
  return vim.fn.fnamemodify(name, ':.')
end

--- The buffer `#buffer` means: `origin` when it is a code buffer, else the one the user was in last.
function M.origin_buffer(origin)
  if origin and M.is_code_buffer(origin) then
    return origin
  end
  local last = vim.g.caboose_last_code_buf
  if type(last) == 'number' and M.is_code_buffer(last) then
    return last
  end
  return nil
end

--- The buffer's full file name (what the host judges: the display path is relative to a cwd that may move).
H.abs = function(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  return name ~= '' and name or nil
end

H.buffer_text = function(buf, first, last)
  local lines = vim.api.nvim_buf_get_lines(buf, first, last, false)
  return table.concat(lines, '\n')
end

--- The whole buffer as a context item.
function M.buffer(buf)
  return {
    kind = 'buffer',
    path = H.display_path(buf),
    abs = H.abs(buf),
    filetype = vim.bo[buf].filetype,
    text = H.buffer_text(buf, 0, -1),
    modified = vim.bo[buf].modified,
  }
end

--- Lines line1..line2 (1-based, inclusive) of `buf`.
function M.selection(buf, line1, line2)
  return {
    kind = 'selection',
    path = H.display_path(buf),
    abs = H.abs(buf),
    filetype = vim.bo[buf].filetype,
    text = H.buffer_text(buf, line1 - 1, line2),
    start_line = line1,
    end_line = line2,
  }
end

--- `path` as typed, with a leading `~` expanded; nothing else (vim.fn.expand would read `%`, `#`, `<cword>`
--- as the current file, a word…, and throws E220 on an unbalanced `{`: a path such as `a{b}.lua` or `100%.md`).
function M.expand_path(path)
  if path == '~' or path:match('^~/') then
    return vim.fn.expand('~') .. path:sub(2)
  end
  return path
end

--- `@path` references in `text` that name readable files (trailing punctuation is not part of the path).
function M.file_refs(text)
  local refs, seen = {}, {}
  for path in (' ' .. text):gmatch('%s@([^%s@]+)') do
    path = path:gsub('[%.,;:!?%)%]}\'"]+$', '')
    if path ~= '' and not seen[path] and vim.fn.filereadable(M.expand_path(path)) == 1 then
      seen[path] = true
      table.insert(refs, path)
    end
  end
  return refs
end

--- Context items the message text asks for: `#buffer` once, then each `@path`.
---@param text string
---@param origin integer|nil the buffer the message was written from
function M.collect(text, origin)
  local items = {}
  if (' ' .. text .. ' '):find('[^%w_]#buffer[^%w_]') then
    local buf = M.origin_buffer(origin)
    if buf then
      table.insert(items, M.buffer(buf))
    else
      vim.notify('(caboose) #buffer: no file buffer to attach', vim.log.levels.WARN)
    end
  end
  for _, path in ipairs(M.file_refs(text)) do
    table.insert(items, { kind = 'file', path = vim.fn.fnamemodify(M.expand_path(path), ':.') })
  end
  return items
end

--- Completion for `@path` (omnifunc of the message area; also triggered after typing `@`).
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local before = vim.api.nvim_get_current_line():sub(1, col)
    local at = before:find('@[^%s@]*$')
    if not at then
      return -3 -- cancel silently
    end
    return at -- 0-based column just after '@'
  end
  local items = {}
  for _, f in ipairs(vim.fn.getcompletion(base, 'file')) do
    table.insert(items, { word = f, menu = vim.fn.isdirectory(f) == 1 and '[dir]' or '[file]' })
  end
  return items
end

--- Remember the last code buffer the user entered, for `#buffer` typed in the chat.
function M.track()
  local group = vim.api.nvim_create_augroup('CabooseContext', { clear = true })
  vim.api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(ev)
      if M.is_code_buffer(ev.buf) then
        vim.g.caboose_last_code_buf = ev.buf
      end
    end,
  })
  local cur = vim.api.nvim_get_current_buf()
  if M.is_code_buffer(cur) then
    vim.g.caboose_last_code_buf = cur
  end
end

return M
