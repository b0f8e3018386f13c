--- ask_user: the agent's question. With choices, vim.ui.select lists them plus a last item for an answer
--- of one's own (then vim.ui.input); without choices, vim.ui.input. Dismissing answers nothing (nil).
--- A question never takes the keys the user is typing: while they are in Insert mode or on the command
--- line it waits (and says so) until they leave it.
local M = {}
local H = {}

H.OTHER = 'Other answer…'

H.input = function(question, reply)
  vim.ui.input({ prompt = question .. ' ' }, function(answer)
    reply(answer)
  end)
end

H.typing = function()
  return vim.fn.mode():match('^[iRc]') ~= nil
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

function M.ask(p)
  local caboose = require('caboose')
  local reply = function(answer)
    local params = { id = p.id }
    if answer ~= nil then
      params.answer = answer
    end
    caboose._request(require('caboose.rpc').methods.ask_resolve, params)
  end
  local told = false
  local function when_free()
    if caboose.state().state == 'idle' and not p.outside_turn then
      return -- stopped meanwhile: the host already answered nothing
    end
    if not H.typing() then
      return H.show(p, reply)
    end
    if not told then
      told = true
      caboose._notify_line('the agent asks: ' .. p.question .. ' (when you leave Insert mode)', nil, p.question)
    end
    vim.api.nvim_create_autocmd({ 'InsertLeave', 'CmdlineLeave' }, { once = true, callback = vim.schedule_wrap(when_free) })
  end
  vim.schedule(when_free)
end

return M
