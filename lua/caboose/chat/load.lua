--- Reopened sessions: a stored session's transcript (host event `transcript`) written in one change, with
--- the same text live rendering wrote (caboose.chat.text), its folds, tool icons and rules lines.
local S = require('caboose.chat.state')
local T = require('caboose.chat.text')

local M = {}

--- The chat's public API (caboose.chat): required when used, as it requires this module.
local function chat()
  return require('caboose.chat')
end

--- Shows a stored session's transcript (host event `transcript`): the same text live rendering wrote,
--- set in one change, so a long session opens at once. Replaces what the chat showed (the message area
--- and its draft stay).
---@param items table[] { t = 'user'|'text'|'tool'|'notice'|'error', ... } (src/host/session-history.ts)
function M.load(items)
  local tools = require('caboose.chat.tools')
  local w = T.text_writer()
  local icons = {} ---@type { row: integer, status: string }[]
  local folds = {} ---@type integer[][]
  local rules = nil ---@type { row: integer, count: integer }|nil
  local users = {} ---@type { row: integer, text: string }[]
  local reply = { open = false, last = nil }
  for _, it in ipairs(items or {}) do
    if it.t == 'user' then
      reply = { open = false, last = nil }
      local text = T.user_text(it.text, it.labels)
      w.block(text)
      local _, breaks = text:gsub('\n', '')
      table.insert(users, { row = w.row() - breaks, text = it.text or '' })
    elseif it.t == 'text' then
      T.reply_part(reply, 'text', w)
      w.append(it.text or '')
      if it.interrupted then
        w.append(T.interrupted(it.text))
      end
    elseif it.t == 'tool' then
      T.put_tool_line(reply, tools.tool_line(it.status, it.text or '?', it.summary), w)
      table.insert(icons, { row = w.row(), status = it.status })
      if it.details and #it.details > 0 then
        local details = T.detail_lines(it.details)
        table.insert(folds, { w.row() + 2, w.row() + 1 + #details })
        w.append('\n' .. table.concat(details, '\n'))
      end
    elseif it.t == 'thinking' and it.text and it.text ~= '' and (require('caboose').config().chat or {}).show_thinking ~= false then
      local details = T.detail_lines({ it.text })
      T.put_tool_line(reply, string.format('%s (%d line%s, za)', S.THINKING, #details, #details == 1 and '' or 's'), w)
      table.insert(folds, { w.row() + 1, w.row() + 1 + #details })
      w.append('\n' .. table.concat(details, '\n'))
    elseif it.t == 'notice' or it.t == 'error' then
      w.block(it.t == 'notice' and T.notice_text(it.text) or T.error_text(it.text))
      if reply.open then
        reply.last = 'notice'
      end
    elseif it.t == 'rules' and it.lines and #it.lines > 0 then
      w.block(table.concat(it.lines, '\n'))
      rules = { row = w.row() - #it.lines + 1, count = #it.lines }
    end
  end
  local lines = w.lines()
  -- The transcript is replaced in place: deleting a long session's buffer and splitting its window
  -- again cost more than writing the new one.
  local buf = chat().buf()
  for _, ns in ipairs({ S.ns, S.ns_hint, S.ns_queue, S.ns_rules }) do
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  end
  local conversation = require('caboose.conversation')
  conversation.clear_marks(buf)
  S.hint = false
  S.clear_state()
  S.status.usage, S.status.retry = nil, nil
  local wins = vim.fn.win_findbuf(buf)
  for _, win in ipairs(wins) do
    vim.api.nvim_win_call(win, function()
      vim.cmd('silent! normal! zE')
    end)
  end
  local hl = vim.treesitter.highlighter.active[buf]
  if hl then
    require('caboose.chat.markdown').split_reset(buf, hl.tree)
  end
  S.edit(buf, function()
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end)
  tools.fold(buf, folds, wins)
  for _, u in ipairs(users) do
    conversation.mark_user(buf, u.row, u.text)
  end
  for _, ic in ipairs(icons) do
    tools.mark_icon(buf, ic.row, ic.status)
  end
  if rules then
    require('caboose.chat.rules').mark(buf, rules.row, rules.count)
  end
  for _, win in ipairs(wins) do
    S.scroll_to_end(win)
  end
  if #lines == 1 and lines[1] == '' then
    require('caboose.chat.transcript').render_hint()
  end
end

return M
