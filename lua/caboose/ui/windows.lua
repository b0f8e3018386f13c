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

--- The screen rows `lines` take in a window `width` columns wide with 'wrap' on: a float sized with it
--- shows every line whole (sizing by the line count cuts off what long lines push below, shown as @@@).
---@param lines string[]
---@param width integer
---@return integer
function M.wrapped_rows(lines, width)
  local rows = 0
  for _, l in ipairs(lines) do
    -- nvim_strwidth: strdisplaywidth() counts the current window's 'linebreak'/'breakindent' too (the
    -- chat's). A tab counts as a full 'tabstop' (never fewer rows than drawn).
    local cells = vim.api.nvim_strwidth((l:gsub('\t', string.rep(' ', math.max(1, vim.o.tabstop)))))
    rows = rows + math.max(1, math.ceil(cells / math.max(1, width)))
  end
  return rows
end

--- A float's position in the middle of the editor (a row higher than the exact middle), `width` × `height`.
---@param width integer
---@param height integer
---@return table nvim_open_win config: relative, width, height, row, col
function M.centered(width, height)
  return {
    relative = 'editor',
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2),
  }
end

return M
