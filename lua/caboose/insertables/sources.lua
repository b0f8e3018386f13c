--- Registers the completion sources with blink.cmp and nvim-cmp when they are installed (once), and
--- lists the nvim-cmp source in the message area's buffer sources. Nothing happens without them.
local M = {}
local H = { blink = false, cmp = false }

function M.register()
  if not H.blink then
    local ok, blink = pcall(require, 'blink.cmp')
    if ok and type(blink) == 'table' and blink.add_source_provider then
      H.blink = pcall(blink.add_source_provider, 'caboose', { name = 'Caboose', module = 'caboose.insertables.blink' })
      if H.blink and blink.add_filetype_source then
        -- The message area is markdown; the source's enabled() keeps it out of other markdown buffers.
        pcall(blink.add_filetype_source, 'markdown', 'caboose')
      end
    end
  end
  if not H.cmp then
    local ok, cmp = pcall(require, 'cmp')
    if ok and type(cmp) == 'table' and cmp.register_source then
      H.cmp = pcall(cmp.register_source, 'caboose', require('caboose.insertables.cmp').new())
    end
  end
  return { blink = H.blink, cmp = H.cmp }
end

--- The message area `buf` (current buffer): nvim-cmp offers the caboose source there, before its others.
function M.attach(buf)
  local state = M.register()
  if state.cmp then
    local cmp = require('cmp')
    local ok, current = pcall(function()
      return cmp.get_config().sources
    end)
    local sources = { { name = 'caboose' } }
    for _, s in ipairs(ok and current or {}) do
      if s.name ~= 'caboose' then
        table.insert(sources, s)
      end
    end
    vim.api.nvim_buf_call(buf, function()
      pcall(cmp.setup.buffer, { sources = sources })
    end)
  end
  return state
end

return M
