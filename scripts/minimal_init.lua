-- Isolated config for trying caboose: only this plugin on the runtimepath, nothing from your config.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(root)
vim.o.termguicolors = true
vim.o.splitright = true
require('caboose').setup({
  provider = { model = os.getenv('CABOOSE_MODEL') },
  log = { level = os.getenv('CABOOSE_LOG_LEVEL') or 'info' },
})
vim.keymap.set('n', '<leader>cc', '<cmd>Caboose<cr>', { desc = 'Caboose: prompt' })
vim.keymap.set('x', '<leader>cc', ':Caboose<cr>', { desc = 'Caboose: prompt about the selection' })
