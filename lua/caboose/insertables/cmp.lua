--- An nvim-cmp source for the chat's message area: `/commands` and `#variables` (see |caboose-completion|).
--- Registered as 'caboose' by caboose when nvim-cmp is loaded (cmp.register_source); the message area
--- lists it in its buffer sources.
local complete = function()
  return require('caboose.insertables.complete')
end

local source = {}

function source.new()
  return setmetatable({}, { __index = source })
end

function source:is_available()
  return complete().in_message_area(vim.api.nvim_get_current_buf())
end

function source:get_debug_name()
  return 'caboose'
end

function source:get_trigger_characters()
  return complete().TRIGGERS
end

function source:get_keyword_pattern()
  return [[\%([/#]{\?[[:alnum:]_:-]*\)]]
end

--- params.context: nvim-cmp's context (`cursor_before_line`, `cursor` = { row 1-based, col 1-based }).
function source:complete(params, callback)
  local ctx = params.context
  local row = ctx.cursor.row or ctx.cursor[1]
  callback({ items = complete().lsp_items(row - 1, ctx.cursor_before_line), isIncomplete = false })
end

return source
