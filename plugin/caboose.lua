-- caboose.nvim: commands only. Nothing heavy loads and no host starts until a command runs.
if vim.g.loaded_caboose then
  return
end
vim.g.loaded_caboose = true

local function caboose()
  return require('caboose')
end

vim.api.nvim_create_user_command('Caboose', function(o)
  caboose().command_caboose(o)
end, { nargs = '*', range = true, desc = 'Caboose: send a prompt to the agent (with a range: about the selection)' })

vim.api.nvim_create_user_command('CabooseStop', function()
  caboose().stop()
end, { desc = 'Caboose: stop the running turn (stream and tools)' })

vim.api.nvim_create_user_command('CabooseMode', function(o)
  caboose().command_mode(o)
end, {
  nargs = '?',
  desc = 'Caboose: show or set the permission mode',
  complete = function(lead)
    return vim.tbl_filter(function(m)
      return m:find(lead, 1, true) == 1
    end, { 'plan', 'create', 'auto-edit', 'chug' })
  end,
})

vim.api.nvim_create_user_command('CabooseRevoke', function(o)
  caboose().command_revoke(o)
end, {
  nargs = '?',
  desc = 'Caboose: revoke "always allow" for a tool (no argument: for every tool)',
  complete = function(lead)
    return vim.tbl_filter(function(t)
      return t:find(lead, 1, true) == 1
    end, caboose().state().grants or {})
  end,
})

vim.api.nvim_create_user_command('CabooseNew', function()
  caboose().new_session()
end, { desc = 'Caboose: start a new conversation' })

vim.api.nvim_create_user_command('CabooseRestore', function()
  caboose().restore()
end, { desc = 'Caboose: restore a file the agent deleted (from the trash)' })

vim.api.nvim_create_user_command('CabooseChat', function()
  caboose().open_chat()
end, { desc = 'Caboose: open the chat window' })

vim.api.nvim_create_user_command('CabooseApproval', function()
  if not require('caboose.ui.approval').focus() then
    vim.notify('(caboose) no approval is pending', vim.log.levels.INFO)
  end
end, { desc = 'Caboose: show and focus the pending approval' })

-- For a key of your own: vim.keymap.set({ 'n', 'i' }, '<leader>ca', '<Plug>(CabooseApproval)')
vim.keymap.set({ 'n', 'i' }, '<Plug>(CabooseApproval)', '<Cmd>CabooseApproval<CR>', { desc = 'Caboose: show and focus the pending approval' })
