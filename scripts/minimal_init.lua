-- Isolated config for trying caboose: only this plugin on the runtimepath, nothing from your config.
--
-- Your own options: CABOOSE_CONFIG names a Lua file that returns the setup() table, or a JSON file, or is
-- a JSON object itself. They are merged over the defaults below (CABOOSE_MODEL, CABOOSE_LOG_LEVEL):
--   CABOOSE_CONFIG=~/caboose-try.lua scripts/caboose-nvim        -- the file: return { mode = 'chug' }
--   CABOOSE_CONFIG='{"mode":"chug","chat":{"position":"left"}}' scripts/caboose-nvim
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(root)
vim.o.termguicolors = true
vim.o.splitright = true

--- The user's options from CABOOSE_CONFIG: a table, or nil and the reason.
local function user_options(value)
  if value == nil or vim.trim(value) == '' then
    return {}
  end
  local text, from = value, 'CABOOSE_CONFIG'
  if not vim.trim(value):match('^{') then
    local file = vim.fn.fnamemodify(vim.fn.expand(value), ':p')
    if vim.fn.filereadable(file) ~= 1 then
      return nil, string.format('CABOOSE_CONFIG: %s is not a readable file (give a Lua file returning a table, a .json file, or a JSON object)', file)
    end
    from = file
    if not file:match('%.json$') then
      local ok, res = pcall(dofile, file)
      if not ok then
        return nil, string.format('CABOOSE_CONFIG: %s failed: %s', file, tostring(res))
      end
      if type(res) ~= 'table' then
        return nil, string.format('CABOOSE_CONFIG: %s must return a table of setup() options (it returned %s)', file, type(res))
      end
      return res
    end
    text = table.concat(vim.fn.readfile(file), '\n')
  end
  local ok, res = pcall(vim.json.decode, text, { luanil = { object = true, array = true } })
  if not ok or type(res) ~= 'table' then
    return nil, string.format('CABOOSE_CONFIG: %s is not a JSON object: %s', from, ok and type(res) or tostring(res))
  end
  return res
end

local defaults = {
  provider = { model = os.getenv('CABOOSE_MODEL') },
  log = { level = os.getenv('CABOOSE_LOG_LEVEL') or 'info' },
}
local opts, err = user_options(os.getenv('CABOOSE_CONFIG'))
if err then
  vim.api.nvim_echo({ { '(caboose) ' .. err .. '; starting with the defaults', 'ErrorMsg' } }, true, {})
  opts = {}
end
local ok, setup_err = pcall(require('caboose').setup, vim.tbl_deep_extend('force', defaults, opts))
if not ok then
  vim.api.nvim_echo({ { '(caboose) CABOOSE_CONFIG: ' .. tostring(setup_err) .. '; starting with the defaults', 'ErrorMsg' } }, true, {})
  require('caboose').setup(defaults)
end
vim.keymap.set('n', '<leader>cc', '<cmd>Caboose<cr>', { desc = 'Caboose: prompt' })
vim.keymap.set('x', '<leader>cc', ':Caboose<cr>', { desc = 'Caboose: prompt about the selection' })
