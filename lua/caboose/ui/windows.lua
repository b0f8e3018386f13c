--- Small window helpers shared by the chat, its floats and the pickers.
local M = {}

--- Keeps `win` on its buffer (`'winfixbuf'`, Neovim 0.10+): `:e` and the like give E1513 instead of
--- loading another buffer into one of our windows (a float titled "MCP servers" showing a source file).
---@param win integer
---@param on boolean|nil default true
function M.fix_buffer(win, on)
  if vim.fn.exists('+winfixbuf') == 1 then
    vim.wo[win].winfixbuf = on ~= false
  end
end

return M
