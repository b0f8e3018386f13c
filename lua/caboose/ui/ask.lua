--- ask_user: the agent's question, answered with vim.ui.select (choices) or vim.ui.input.
local M = {}

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
    if type(p.choices) == 'table' and #p.choices > 0 then
      vim.ui.select(p.choices, { prompt = p.question }, function(choice)
        reply(choice)
      end)
    else
      vim.ui.input({ prompt = p.question .. ' ' }, function(answer)
        reply(answer)
      end)
    end
  end)
end

return M
