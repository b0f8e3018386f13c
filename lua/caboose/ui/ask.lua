--- ask_user: the agent's question. With choices, vim.ui.select lists them plus a last item for an answer
--- of one's own (then vim.ui.input); without choices, vim.ui.input. Dismissing answers nothing (nil).
local M = {}
local H = {}

H.OTHER = 'Other answer…'

H.input = function(question, reply)
  vim.ui.input({ prompt = question .. ' ' }, function(answer)
    reply(answer)
  end)
end

function M.ask(p)
  local rpc = require('caboose.rpc')
  local reply = function(answer)
    local params = { id = p.id }
    if answer ~= nil then
      params.answer = answer
    end
    require('caboose')._request(rpc.methods.ask_resolve, params)
  end
  vim.schedule(function()
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
  end)
end

return M
