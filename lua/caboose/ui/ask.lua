--- ask_user: the agent's question. With choices, vim.ui.select lists them plus a last item for an answer
--- of one's own (then vim.ui.input); without choices, vim.ui.input. Dismissing answers nothing (nil).
--- A question never takes keys meant for another buffer: it opens where the user chooses to answer —
--- when the chat is focused (outside Insert mode), or on :CabooseApproval, <Plug>(CabooseApproval) or
--- `gA` in the chat (chat.keys.approval). Until then it waits, and says so.
local M = {}
local H = {}

H.OTHER = 'Other answer…'
H.waiting = {} ---@type { p: table, reply: fun(answer: string|nil) }[] oldest first
H.showing = false

H.input = function(question, reply)
  vim.ui.input({ prompt = question .. ' ' }, function(answer)
    reply(answer)
  end)
end

H.typing = function()
  return vim.fn.mode():match('^[iRc]') ~= nil
end

H.in_chat = function()
  local b = vim.api.nvim_get_current_buf()
  return vim.b[b].caboose_chat == true or vim.b[b].caboose_input == true
end

H.show = function(p, reply)
  if type(p.choices) ~= 'table' or #p.choices == 0 then
    return H.input(p.question, reply)
  end
  local items = vim.list_extend(vim.deepcopy(p.choices), { H.OTHER })
  vim.ui.select(items, { prompt = p.question }, function(choice, idx)
    if choice ~= nil and idx == #items then
      return H.input(p.question, reply)
    end
    reply(choice)
  end)
end

--- Questions of a turn that ended (stopped: the host answered nothing) are dropped.
H.prune = function()
  if require('caboose').state().state == 'idle' then
    -- A question asked outside a turn (a slash command's arguments) waits even while idle.
    H.waiting = vim.tbl_filter(function(q)
      return q.p.outside_turn == true
    end, H.waiting)
  end
end

--- Shows the oldest waiting question (one at a time).
H.next = function()
  H.prune()
  local q = table.remove(H.waiting, 1)
  if not q then
    return false
  end
  H.showing = true
  H.show(q.p, function(answer)
    H.showing = false
    q.reply(answer)
    vim.schedule(H.try)
  end)
  return true
end

--- Opens the question when the user is in the chat and not typing. A question that answers the user's own
--- command (a slash prompt's arguments, asked outside a turn) opens wherever they are, once not typing.
H.try = function()
  H.prune()
  if H.showing or #H.waiting == 0 or H.typing() then
    return
  end
  if not H.in_chat() and H.waiting[1].p.outside_turn ~= true then
    return
  end
  H.next()
end

H.autocmds = function()
  if H.group then
    return
  end
  H.group = vim.api.nvim_create_augroup('CabooseAsk', { clear = true })
  vim.api.nvim_create_autocmd({ 'WinEnter', 'BufEnter', 'InsertLeave', 'CmdlineLeave' }, {
    group = H.group,
    callback = function()
      if #H.waiting > 0 then
        vim.schedule(H.try) -- after the switch or the mode change is complete
      end
    end,
  })
end

--- Whether a question waits for the user.
function M.waiting()
  H.prune()
  return #H.waiting
end

--- Opens the waiting question now (:CabooseApproval, `gA` in the chat). Returns false when none waits.
function M.answer()
  H.prune()
  if #H.waiting == 0 or H.showing then
    return H.showing
  end
  if vim.fn.mode():match('^[iR]') then
    vim.cmd('stopinsert')
  end
  vim.schedule(H.next) -- after the command that asked for it
  return true
end

function M.ask(p)
  local caboose = require('caboose')
  local reply = function(answer)
    local params = { id = p.id }
    if answer ~= nil then
      params.answer = answer
    end
    caboose._request(require('caboose.rpc').methods.ask_resolve, params)
  end
  H.autocmds()
  table.insert(H.waiting, { p = p, reply = reply })
  vim.schedule(function()
    if (H.in_chat() or p.outside_turn == true) and not H.typing() and not H.showing then
      return H.try()
    end
    caboose._notify_line('the agent asks: ' .. p.question .. ' (answer in the chat, or :CabooseApproval)', nil, p.question)
    H.try()
  end)
end

return M
