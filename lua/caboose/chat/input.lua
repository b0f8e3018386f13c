--- The message area: an ordinary buffer under the transcript (multi-line, undoable, your own mappings)
--- where you write; `@path`, `/command` and `#variable` complete as you type, and <CR> sends.
local S = require('caboose.chat.state')
local MD = require('caboose.chat.markdown')

local M = {}
local H = {}

--- Returns the message-area buffer, creating it if needed.
function M.input_buf()
  if S.valid(S.input) then
    return S.input
  end
  local buf = S.scratch('caboose://input/' .. S.count, true)
  vim.b[buf].caboose_input = true
  MD.set(buf)
  vim.bo[buf].omnifunc = MD.OMNIFUNC
  S.input = buf
  require('caboose.chat.keys').input(buf)
  vim.api.nvim_create_autocmd('TextChangedI', {
    buffer = buf,
    callback = function()
      -- `/command` and `#variable` (caboose.insertables), else `@path`.
      if not require('caboose.insertables.complete').popup() then
        H.complete_path()
      end
    end,
  })
  vim.api.nvim_create_autocmd('InsertCharPre', {
    buffer = buf,
    callback = function()
      require('caboose.insertables.complete').note_typed()
    end,
  })
  require('caboose.insertables.sources').attach(buf)
  vim.api.nvim_create_autocmd('InsertEnter', {
    buffer = buf,
    callback = function()
      require('caboose').prestart()
    end,
  })
  return buf
end

--- Typing `@` starts path completion (unless a completion menu is already open).
H.complete_path = function()
  if vim.fn.pumvisible() == 1 then
    return
  end
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = vim.api.nvim_get_current_line():sub(1, col)
  local at = before:find('@[^%s@]*$')
  if not at or (at > 1 and not before:sub(at - 1, at - 1):match('%s')) then
    return
  end
  local items = require('caboose.context').omnifunc(0, before:sub(at + 1))
  if #items == 0 then
    return
  end
  require('caboose.insertables.complete').offer(at + 1, items)
end

--- Sends the message area's text (with the context it names); the area is cleared once the host took
--- the message (`u` brings the text back), and keeps it when the host refused it.
function M.submit()
  local input = M.input_buf()
  local lines = vim.api.nvim_buf_get_lines(input, 0, -1, false)
  local text = table.concat(lines, '\n')
  if vim.trim(text) == '' then
    vim.notify('(caboose) nothing to send', vim.log.levels.WARN)
    return false
  end
  if vim.fn.mode() == 'i' then
    vim.cmd('stopinsert')
  end
  -- Slash commands and variables are expanded by send() (caboose.insertables).
  return require('caboose').send(text, {
    on_done = function(err, res)
      if err or (type(res) == 'table' and res.status == 'rejected') then
        return
      end
      if S.valid(input) and table.concat(vim.api.nvim_buf_get_lines(input, 0, -1, false), '\n') == text then
        vim.api.nvim_buf_set_lines(input, 0, -1, false, {})
      end
    end,
  })
end

return M
