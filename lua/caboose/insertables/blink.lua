--- A blink.cmp source for the chat's message area: `/commands` and `#variables` (see |caboose-completion|).
--- Registered by caboose when blink.cmp is loaded; by hand:
---   sources = { providers = { caboose = { name = 'Caboose', module = 'caboose.insertables.blink' } } }
local complete = function()
  return require('caboose.insertables.complete')
end

local source = {}

function source.new(opts)
  return setmetatable({ opts = opts or {} }, { __index = source })
end

function source:enabled()
  return complete().in_message_area(vim.api.nvim_get_current_buf())
end

function source:get_trigger_characters()
  return complete().TRIGGERS
end

--- ctx: blink's context (`line`, `cursor` = { row 1-based, col 0-based }, `bufnr`).
function source:get_completions(ctx, callback)
  local items = {}
  local bufnr = ctx and ctx.bufnr or vim.api.nvim_get_current_buf()
  if complete().in_message_area(bufnr) then
    local row, col = ctx.cursor[1], ctx.cursor[2]
    items = complete().lsp_items(row - 1, ctx.line:sub(1, col))
  end
  callback({ items = items, is_incomplete_forward = false, is_incomplete_backward = false })
  return function() end
end

return source
