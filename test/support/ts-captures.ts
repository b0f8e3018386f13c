/**
 * Lua for e2e tests: `captures(buf)` → { ["row:col"] = "lang:capture,…" } for every column of every line
 * of `buf`, after a full treesitter parse (the highlighting a test compares).
 */
export const LUA_CAPTURES = `
local function captures(buf)
  vim.treesitter.get_parser(buf, 'markdown'):parse(true)
  local out = {}
  for row, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    for col = 0, math.max(#line - 1, 0) do
      local c = {}
      for _, x in ipairs(vim.treesitter.get_captures_at_pos(buf, row - 1, col)) do
        table.insert(c, x.lang .. ':' .. x.capture)
      end
      table.sort(c)
      out[(row - 1) .. ':' .. col] = table.concat(c, ',')
    end
  end
  return out
end
`;
