-- caboose.nvim: commands only. Nothing heavy loads and no host starts until a command runs.
if vim.g.loaded_caboose then
  return
end
vim.g.loaded_caboose = true

-- :help caboose from a checkout (a plugin manager that generates tags, like lazy.nvim, has done it already):
-- (re)generate doc/tags when it is missing or older than the help file. Two stat calls when up to date.
do
  local doc = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h') .. '/doc'
  local txt, tags = doc .. '/caboose.txt', doc .. '/tags'
  local uv = vim.uv or vim.loop
  local src, dst = uv.fs_stat(txt), uv.fs_stat(tags)
  local older = src and dst and (dst.mtime.sec < src.mtime.sec or (dst.mtime.sec == src.mtime.sec and dst.mtime.nsec < src.mtime.nsec))
  if src and (not dst or older) and vim.fn.filewritable(doc) == 2 then
    pcall(vim.cmd.helptags, vim.fn.fnameescape(doc))
  end
end

local function caboose()
  return require('caboose')
end

vim.api.nvim_create_user_command('Caboose', function(o)
  caboose().command_caboose(o)
end, {
  nargs = '*',
  range = true,
  complete = function(lead, line)
    return require('caboose.prompts').complete_cmdline(lead, line)
  end,
  desc = 'Caboose: send a prompt to the agent (with a range: about the selection)',
})

vim.api.nvim_create_user_command('CabooseEdit', function(o)
  caboose().command_edit(o)
end, { nargs = '*', range = true, desc = 'Caboose: edit the selected lines as instructed (reviewed in place)' })
-- For a key of your own: vim.keymap.set('x', '<leader>ce', '<Plug>(CabooseEdit)'), or setup({ edit = { keymap = '<leader>ce' } })
vim.keymap.set('x', '<Plug>(CabooseEdit)', ':CabooseEdit<CR>', { silent = true, desc = 'Caboose: edit the selection' })

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

vim.api.nvim_create_user_command('CabooseSessions', function(o)
  caboose().command_sessions(o)
end, { nargs = '*', bang = true, desc = 'Caboose: reopen a stored conversation ([search words]; ! deletes one)' })

vim.api.nvim_create_user_command('CaboosePrompts', function(o)
  require('caboose.prompts').command(o)
end, { nargs = 0, range = true, desc = 'Caboose: pick a prompt of the library and run it (with a range: on the selection)' })

vim.api.nvim_create_user_command('CabooseRename', function(o)
  caboose().rename(o.args)
end, { nargs = '*', desc = 'Caboose: rename the current conversation' })

vim.api.nvim_create_user_command('CabooseRestore', function()
  caboose().restore()
end, { desc = 'Caboose: restore a file the agent deleted (from the trash)' })

vim.api.nvim_create_user_command('CabooseUndo', function()
  caboose().undo()
end, { desc = 'Caboose: rewind the files the agent changed for the last message' })

vim.api.nvim_create_user_command('CabooseCheckpoints', function()
  caboose().checkpoints()
end, { desc = 'Caboose: list the messages whose file changes can be rewound (diff preview)' })

vim.api.nvim_create_user_command('CabooseExport', function(o)
  caboose().export(o.args, o.bang)
end, { nargs = '?', bang = true, complete = 'file', desc = 'Caboose: the chat as Markdown in a file ([path]; ! a new buffer)' })

vim.api.nvim_create_user_command('CabooseDebug', function()
  require('caboose.ui.debug').open()
end, { desc = "Caboose: the chat's last model request (exact JSON) and response summary, secrets masked" })

vim.api.nvim_create_user_command('CabooseAudit', function(o)
  caboose().command_audit(o)
end, { nargs = '?', desc = 'Caboose: recent audit log entries of this workspace, newest first ([count], default 50)' })

vim.api.nvim_create_user_command('CabooseMcp', function(o)
  caboose().command_mcp(o)
end, {
  nargs = '*',
  desc = 'Caboose: MCP servers, their state and tools ([restart {server}])',
  complete = function(lead, line)
    local words = vim.split(line, '%s+', { trimempty = true })
    local candidates = { 'restart' }
    if words[2] == 'restart' and (#words > 2 or line:match('%s$')) then
      candidates = vim.tbl_keys((caboose().config().mcp or {}).servers or {})
      table.sort(candidates)
    end
    return vim.tbl_filter(function(c)
      return c:find(lead, 1, true) == 1
    end, candidates)
  end,
})

vim.api.nvim_create_user_command('CabooseBuild', function()
  require('caboose.build').start({ progress = true })
end, { desc = 'Caboose: finish (or resume) the install: dependencies, native SQLite module, compiled host' })

vim.api.nvim_create_user_command('CabooseModel', function(o)
  require('caboose.model').command(o)
end, {
  nargs = '?',
  bang = true,
  desc = 'Caboose: choose the model of the next request ([provider/model], or check: does each provider stream tool calls)',
  complete = function(lead)
    return require('caboose.model').complete(lead)
  end,
})

vim.api.nvim_create_user_command('CabooseRetry', function(o)
  require('caboose.conversation').command(o)
end, {
  nargs = '?',
  desc = 'Caboose: regenerate the last reply (drops it and asks again; [provider/model]: with that model)',
  complete = function(lead)
    return vim.tbl_filter(function(c)
      return c ~= 'check'
    end, require('caboose.model').complete(lead))
  end,
})

vim.api.nvim_create_user_command('CabooseAgent', function(o)
  caboose().command_agent(o)
end, {
  nargs = '?',
  bang = true,
  desc = 'Caboose: pick the agent of this chat (built-in or an ACP agent; ! starts a new chat)',
  complete = function(lead)
    local names = vim.tbl_keys((caboose().config().acp or {}).agents or {})
    table.sort(names)
    table.insert(names, 1, 'caboose')
    return vim.tbl_filter(function(n)
      return n:find(lead, 1, true) == 1
    end, names)
  end,
})

vim.api.nvim_create_user_command('CabooseChat', function()
  caboose().focus_chat()
end, { desc = 'Caboose: open the chat and go to its message area' })

vim.api.nvim_create_user_command('CabooseApproval', function()
  -- The pending approval, else the agent's waiting question (ask_user).
  if not require('caboose.ui.approval').focus() and not require('caboose.ui.ask').answer() then
    vim.notify('(caboose) no approval is pending', vim.log.levels.INFO)
  end
end, { desc = 'Caboose: show and focus the pending approval (or answer the agent\'s question)' })

-- For a key of your own: vim.keymap.set({ 'n', 'i' }, '<leader>ca', '<Plug>(CabooseApproval)')
vim.keymap.set({ 'n', 'i' }, '<Plug>(CabooseApproval)', '<Cmd>CabooseApproval<CR>', { desc = 'Caboose: show and focus the pending approval' })

-- Typing a :Caboose… command starts the host in the background, so the first reply does not wait for it.
vim.api.nvim_create_autocmd('CmdlineChanged', {
  group = vim.api.nvim_create_augroup('CaboosePrestart', { clear = true }),
  pattern = ':',
  callback = function()
    if vim.fn.getcmdline():match("^%s*[%d,.$'<>]*%s*Cab") then
      require('caboose').prestart()
    end
  end,
})
