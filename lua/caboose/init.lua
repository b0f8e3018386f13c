--- caboose.nvim — an agentic coding assistant whose edits never silently disagree with your buffers.
--- Public API: setup(), state(), send(), stop(), set_mode(), approval_respond(), revoke(), restore(), undo(),
--- checkpoints(), audit(), mcp().
local M = {}
local H = {}

H.config = nil ---@type caboose.Config|nil
H.state = { state = 'idle', mode = nil, session = nil, grants = {} }

H.notify = function(msg, level)
  vim.notify('(caboose) ' .. msg, level or vim.log.levels.INFO)
end

--- A message that also stands in the chat (or a list): cut to one command line, so it never stops the
--- editor with a hit-enter prompt. `cut` is the part that gives way (by default the end of `msg`).
H.notify_line = function(msg, level, cut)
  local room = vim.v.echospace - vim.api.nvim_strwidth('(caboose) ' .. msg)
  if room < 0 then
    cut = cut or msg
    local keep = math.max(8, vim.api.nvim_strwidth(cut) + room - 1)
    msg = msg:gsub(vim.pesc(cut), (vim.fn.strcharpart(cut, 0, keep):gsub('%%', '%%%%')) .. '…', 1)
  end
  vim.cmd('redraw') -- a choice list or a float's closing may have scrolled the screen
  H.notify(msg, level)
end

H.cfg = function()
  if not H.config then
    H.config = require('caboose.config').build(vim.g.caboose_config)
    H.state.mode = H.config.mode
    require('caboose.highlights').setup()
  end
  return H.config
end

--- Configure caboose. Optional: without it, defaults and the environment are used.
---@param opts table|nil see |caboose-config|
function M.setup(opts)
  H.config = require('caboose.config').build(opts)
  H.state.mode = H.config.mode
  require('caboose.highlights').setup()
  if H.config.edit.keymap then
    vim.keymap.set('x', H.config.edit.keymap, '<Plug>(CabooseEdit)', { desc = 'Caboose: edit the selection' })
  end
  if require('caboose.rpc').is_running() then
    H.notify('configuration changes reach the host at its next start (:CabooseNew keeps it)', vim.log.levels.WARN)
  end
end

--- The effective configuration (read-only copy).
function M.config()
  return vim.deepcopy(H.cfg())
end

--- { state = 'idle'|'streaming'|'executing_tools'|'pending_approval', mode, session, grants }
--- `grants`: the tools approved with "always" in this session (:CabooseRevoke withdraws them).
function M.state()
  H.cfg() -- the mode is known before the host starts (reading the config starts nothing)
  return vim.deepcopy(H.state)
end

H.agent_state = 'idle' -- the host's state; H.state.state is the one shown to the user

--- The main agent keeps executing its `agent` calls while a subagent's request waits: for the user, that
--- is a pending approval (winbar, state(), CabooseStateChanged).
H.shown_state = function(agent)
  local approval = package.loaded['caboose.ui.approval']
  if agent == 'executing_tools' and approval and approval.subagent_waiting() then
    return 'pending_approval'
  end
  return agent
end

H.set_state = function(new, fields)
  H.agent_state = new
  new = H.shown_state(new)
  local previous = H.state.state
  H.state.state = new
  for k, v in pairs(fields or {}) do
    H.state[k] = v
  end
  local extra = { grants = H.state.grants }
  if new == 'idle' then
    extra.retry = false
  end
  H.chat().set_status(new, H.state.mode, extra)
  if fields and fields.mode and package.loaded['caboose.ui.approval'] then
    require('caboose.ui.approval').mode_changed(fields.mode)
  end
  if previous ~= new or (fields and fields.mode) then
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'CabooseStateChanged',
      modeline = false,
      data = { state = new, previous = previous, mode = H.state.mode, session = H.state.session, grants = vim.deepcopy(H.state.grants) },
    })
  end
end

H.chat = function()
  return require('caboose.chat')
end

-- Host → Lua events -------------------------------------------------------------------------------
H.handlers = {
  state = function(p)
    -- While a mode change is on its way, a state event sent before it carries the old mode.
    local mode = H.mode_changes > 0 and H.state.mode or p.mode
    H.set_state(p.state, { mode = mode, session = p.session, grants = p.grants or {} })
  end,
  session_info = function(p)
    local fields = { title = p.title or false }
    if p.model then
      fields.model = p.model
      -- Which agent runs this chat (an ACP agent's name; nil: the built-in one).
      H.state.agent = p.agent
    end
    H.chat().set_status(nil, nil, fields)
  end,
  transcript = function(p)
    if p.replaced then
      -- The same session's chat changed (a regenerated reply): shown as now stored, nothing else happens.
      H.chat().load(vim.json.decode(p.items_json, { luanil = { object = true, array = true } }))
      return
    end
    -- A reopened session: its chat replaces the current one (the unsent draft stays).
    require('caboose.ui.approval').close_all()
    H.chat().load(p.items_json and vim.json.decode(p.items_json, { luanil = { object = true, array = true } }) or p.items or {})
    H.chat().set_status(nil, nil, { title = p.title or false })
    M.open_chat()
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseSessionOpened', modeline = false, data = { session = p.session, title = p.title } })
  end,
  rules = function(p)
    H.chat().rules(p.lines or {})
  end,
  user_message = function(p)
    H.chat().user_message(p)
  end,
  queued = function(p)
    H.chat().queued(p)
  end,
  queue_discarded = function(p)
    H.chat().queue_discarded(p.messages or {})
  end,
  assistant_start = function()
    H.chat().assistant_start()
  end,
  assistant_delta = function(p)
    H.chat().assistant_delta(p.text)
  end,
  reasoning_delta = function(p)
    H.chat().reasoning_delta(p.text)
  end,
  assistant_end = function(p)
    H.chat().assistant_end(p)
  end,
  usage = function(p)
    H.chat().set_status(nil, nil, { usage = p })
  end,
  retry = function(p)
    H.chat().set_status(nil, nil, { retry = p })
  end,
  tool_call = function(p)
    H.chat().tool_call(p)
  end,
  tool_result = function(p)
    H.chat().tool_result(p)
  end,
  tool_progress = function(p)
    H.chat().tool_progress(p)
  end,
  todos = function(p)
    H.chat().todos(p.items)
  end,
  notice = function(p)
    H.chat().notice(p.text)
  end,
  error = function(p)
    H.chat().error(p.message)
    H.notify(p.message, vim.log.levels.ERROR)
  end,
  disk_changed = function()
    require('caboose.ui.refresh').clean_buffers()
  end,
  approval_request = function(p)
    require('caboose.ui.approval').show(p)
  end,
  approval_closed = function(p)
    require('caboose.ui.approval').close(p.id)
  end,
  ask = function(p)
    require('caboose.ui.ask').ask(p)
  end,
  mcp_changed = function(p)
    if p.state == 'failed' then
      -- Also where the user looks when the chat is closed (the chat has the notice too).
      local what = p.previous == 'running' and 'stopped' or 'failed to start'
      H.notify_line(string.format("MCP server '%s' %s: %s", tostring(p.server), what, tostring(p.reason or '?')), vim.log.levels.WARN)
    end
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseMcpChanged', modeline = false, data = p })
    if package.loaded['caboose.ui.mcp'] then
      require('caboose.ui.mcp').refresh()
    end
  end,
  host_exit = function(p)
    if not p.expected then
      local msg = string.format('the host exited unexpectedly (code %s); the next command starts a new one', tostring(p.code))
      H.chat().error(msg)
      H.notify(msg, vim.log.levels.ERROR)
    end
    pcall(function()
      require('caboose.ui.approval').close_all()
    end)
    H.chat().queue_discarded(nil)
    H.state.session = nil
    H.state.grants = {}
    H.set_state('idle')
  end,
}

H.report = function(msg)
  msg = tostring(msg):gsub('^%(caboose%) ', '')
  H.notify(msg, vim.log.levels.ERROR)
  H.chat().error(msg)
end

H.start_host = function(prestarting)
  local rpc = require('caboose.rpc')
  -- A half-built install (a build cut off by a plugin manager's timeout): finished in the background
  -- at the first command (not while a command is being typed).
  if not rpc.is_running() then
    local build = require('caboose.build')
    if prestarting then
      if not build.status().complete then
        return false, 'the install is not finished'
      end
    end
    local unfinished = not prestarting and build.ensure_built()
    if unfinished then
      return false, '(caboose) ' .. unfinished
    end
  end
  rpc.set_handlers(H.handlers)
  return pcall(rpc.ensure, H.cfg(), H.report)
end

--- Start the host (if needed), without waiting for it. Returns true when it is starting or up.
H.ensure_host = function()
  local ok, err = H.start_host()
  if not ok then
    H.report(err)
    return false
  end
  return true
end

--- Calls the host without waiting: `on_done(err, result)` runs when it answers. Errors are reported
--- (notify) unless `on_done` returns true for them. Returns false when the host could not be started.
H.call = function(method, params, on_done)
  if not H.ensure_host() then
    return false
  end
  require('caboose.rpc').call(method, params, function(err, result)
    local handled = on_done and on_done(err, result)
    if err and not handled then
      H.notify(tostring(err):gsub('^%(caboose%) ', ''), vim.log.levels.ERROR)
    end
  end)
  return true
end

--- Waits for the host's answer (API functions that return a value; never a user command's path).
H.request = function(method, params)
  if not H.ensure_host() then
    return nil
  end
  local ok, res = pcall(require('caboose.rpc').request, method, params)
  if not ok then
    local msg = tostring(res):gsub('^%(caboose%) ', '')
    H.notify(msg, vim.log.levels.ERROR)
    return nil, msg
  end
  return res
end

--- Start the host ahead of the first message (e.g. while a :Caboose command is being typed), so the
--- first reply streams without waiting for it to load. Costs the editor nothing: the host starts as a job.
function M.prestart()
  local cfg = H.cfg()
  -- The classic remote-plugin host starts synchronously: never while the user types.
  if require('caboose.rpc').is_running() or not cfg.host.prestart or cfg.host.transport == 'remote' then
    return
  end
  H.start_host(true)
end

--- Starts the host's job (not in 'remote' transport, which starts synchronously), quietly: whatever fails
--- here fails again, and is reported, at the call that follows.
H.start_early = function()
  if require('caboose.rpc').is_running() or H.cfg().host.transport == 'remote' then
    return
  end
  H.start_host(true)
end

--- A short status for statuslines: '' when idle, else e.g. 'caboose: streaming'.
function M.statusline()
  if H.state.state == 'idle' then
    return ''
  end
  return 'caboose: ' .. H.state.state:gsub('_', ' ')
end

--- Send a message to the agent (opens the chat). Returns at once; the host answers asynchronously.
---@param text string
---@param opts { context: table[]|nil, origin: integer|nil, on_done: fun(err: string|nil, result: table|nil)|nil }|nil
---  context: items attached to the message (see |caboose-context|); origin: the buffer `#buffer` means;
---  on_done: called with the host's answer (`{ id, status = 'started'|'queued'|'rejected', position }`, or
---  `{ status = 'command' }` when the text was a slash command). Slash commands and variables are expanded
---  as in the message area (|caboose-insertables|).
---@return boolean sent
function M.send(text, opts)
  if type(text) ~= 'string' or vim.trim(text) == '' then
    H.notify('nothing to send', vim.log.levels.WARN)
    return false
  end
  opts = opts or {}
  -- A cold start: the host's process starts first, so Node loads while the chat opens and the message is
  -- expanded (a failure to start is reported by the call below, where the chat shows it).
  H.start_early()
  if not opts.expanded then
    return require('caboose.insertables').send(text, opts)
  end
  M.open_chat()
  local params = { text = text }
  if opts.context and #opts.context > 0 then
    params.context = opts.context
  end
  return H.call(require('caboose.rpc').methods.send, params, function(err, res)
    if err then
      -- The host could not take the message (e.g. api_key_cmd failed): say so where the user looks.
      H.chat().error(tostring(err):gsub('^%(caboose%) ', ''))
    end
    if opts.on_done then
      opts.on_done(err, res)
    end
  end)
end

function M.open_chat()
  H.chat().set_status(H.state.state, H.state.mode or H.cfg().mode, { grants = H.state.grants })
  return H.chat().open(H.cfg())
end

--- Open the chat and put the cursor in its message area.
function M.focus_chat()
  M.open_chat()
  return H.chat().focus_input()
end

--- Ask for a message with vim.ui.input, then send it.
function M.prompt()
  vim.ui.input({ prompt = 'Caboose> ' }, function(text)
    if text and vim.trim(text) ~= '' then
      M.send(text)
    end
  end)
end

--- :Caboose [prompt] — with a range, the selected lines go along with the prompt; `#buffer` and `@path`
--- in the prompt attach the current buffer and files.
function M.command_caboose(o)
  local context = require('caboose.context')
  local origin = vim.api.nvim_get_current_buf()
  local selection = (o.range and o.range > 0) and context.selection(origin, o.line1, o.line2) or nil
  local send = function(text)
    M.send(text, { context = selection and { selection } or nil, origin = origin })
  end
  local text = o.args or ''
  if vim.trim(text) == '' then
    if not selection then
      M.open_chat()
    end
    vim.ui.input({ prompt = selection and 'Caboose (selection)> ' or 'Caboose> ' }, function(t)
      if t and vim.trim(t) ~= '' then
        send(t)
      end
    end)
    return
  end
  send(text)
end

--- Stop the running turn: the stream, every running tool, pending approvals; queued messages are dropped.
function M.stop()
  if package.loaded['caboose.edit'] then
    require('caboose.edit').stop()
  end
  if not require('caboose.rpc').is_running() then
    return
  end
  H.call(require('caboose.rpc').methods.stop, {})
end

H.mode_changes = 0

--- Edit lines `line1`..`line2` of the current buffer as `instruction` says (asks when it is empty); the
--- answer is reviewed in place. Returns at once.
function M.edit(line1, line2, instruction)
  M.prestart()
  return require('caboose.edit').start({ line1 = line1, line2 = line2, instruction = instruction })
end

function M.command_edit(o)
  return M.edit(o.line1, o.line2, o.args)
end

--- Set the permission mode: 'plan' | 'create' | 'auto-edit' | 'chug'.
function M.set_mode(mode)
  local ok = vim.tbl_contains({ 'plan', 'create', 'auto-edit', 'chug' }, mode)
  if not ok then
    H.notify('unknown mode ' .. tostring(mode) .. ' (plan, create, auto-edit, chug)', vim.log.levels.ERROR)
    return false
  end
  local previous = H.state.mode or H.cfg().mode
  H.cfg().mode = mode
  H.set_state(H.agent_state, { mode = mode })
  if require('caboose.rpc').is_running() then
    H.mode_changes = H.mode_changes + 1
    local sent = H.call(require('caboose.rpc').methods.set_mode, { mode = mode }, function(err)
      H.mode_changes = H.mode_changes - 1
      if err then
        -- The host kept the old mode: show the one in force.
        H.cfg().mode = previous
        H.set_state(H.agent_state, { mode = previous })
      end
    end)
    if not sent then
      H.mode_changes = H.mode_changes - 1
    end
  end
  H.notify('mode: ' .. mode)
  return true
end

H.grants_text = function()
  local grants = H.state.grants or {}
  if #grants == 0 then
    return 'no tool is always allowed'
  end
  return 'always allowed this session: ' .. table.concat(grants, ', ')
end

--- :CabooseMode without argument shows the mode and the standing grants.
function M.command_mode(o)
  if o.args == nil or o.args == '' then
    H.notify('mode: ' .. (H.state.mode or H.cfg().mode) .. '; ' .. H.grants_text())
    return
  end
  M.set_mode(o.args)
end

--- Withdraw standing "always" grants: {tool}'s, or every one without it. The tool asks again next time.
---@param tool string|nil
function M.revoke(tool)
  if tool == '' then
    tool = nil
  end
  local grants = H.state.grants or {}
  if #grants == 0 then
    H.notify('no tool is always allowed in this session')
    return false
  end
  if tool and not vim.tbl_contains(grants, tool) then
    H.notify(string.format('%s is not always allowed (%s)', tool, H.grants_text()), vim.log.levels.WARN)
    return false
  end
  local params = tool and { tool = tool } or vim.empty_dict()
  local names = tool or table.concat(grants, ', ')
  return H.call(require('caboose.rpc').methods.grants_revoke, params, function(err)
    if not err then
      H.notify('revoked: ' .. names .. ' (asks again)')
    end
  end)
end

function M.command_revoke(o)
  return M.revoke(vim.trim(o.args or ''))
end

--- Start a new conversation.
function M.new_session()
  local undo = M._leave_session()
  M.open_chat()
  return H.call(require('caboose.rpc').methods.reset, { cwd = vim.fn.getcwd() }, function(err)
    if err then
      undo()
    end
  end)
end

--- The chat leaves the current session (:CabooseNew, deleting it): nothing it still sends is shown, its
--- approval requests close, and the chat starts empty (the unsent draft stays). Returns what takes the
--- first part back when the host refuses.
M._leave_session = function()
  local undo = require('caboose.rpc').leave_scope()
  if package.loaded['caboose.ui.approval'] then
    require('caboose.ui.approval').close_all()
  end
  H.chat().reset()
  return undo
end

--- Pick a stored session and reopen it (vim.ui.select); `query` searches their text. With `delete`, the
--- chosen session is deleted (after asking) instead.
---@param query string|nil
---@param delete boolean|nil
function M.sessions(query, delete)
  return require('caboose.ui.sessions').pick(query and vim.trim(query) or nil, delete and 'delete' or 'open')
end

function M.command_sessions(o)
  return M.sessions(o.args, o.bang)
end

--- Rename the current session (asks when `title` is empty).
function M.rename(title)
  return require('caboose.ui.sessions').rename(title)
end

--- Answer the pending approval: 'once' | 'always' | 'reject' (with an optional reason).
function M.approval_respond(decision, reason)
  return require('caboose.ui.approval').respond(decision, reason)
end

--- Summarize the conversation now (the chat's /compact): the turns before the last one are replaced by a
--- summary the model writes (the chat shows a notice). Between turns only. Returns at once.
function M.compact()
  M.open_chat()
  return H.call(require('caboose.rpc').methods.session_compact, vim.empty_dict(), function(err, res)
    if not err and res and not res.compacted then
      H.notify('nothing to compact yet (the last turn is kept as it is)')
    end
  end)
end

--- Export the chat as Markdown to {path} (default: a file name from its title; an existing file is never
--- overwritten), or with {to_buffer} into a new buffer. Returns at once.
---@param path string|nil
---@param to_buffer boolean|nil
function M.export(path, to_buffer)
  return require('caboose.insertables.export').export(path, to_buffer)
end

--- Pick a trashed file and restore it (vim.ui.select).
function M.restore()
  require('caboose.ui.restore').pick()
end

--- Rewind the files the agent changed for the last message (:CabooseUndo). Asks first when one of them
--- changed since the agent wrote it. Returns at once.
function M.undo()
  return require('caboose.ui.checkpoints').rewind()
end

--- Pick a message to rewind to, with a diff preview (:CabooseCheckpoints). Returns at once.
function M.checkpoints()
  return require('caboose.ui.checkpoints').pick()
end

--- Show the audit log's last {count} entries (default 50) for the current workspace, newest first, in a
--- read-only split (<CR>: the entry's diff, q: close). Returns at once; the split opens when the host answers.
---@param count integer|nil
function M.audit(count)
  require('caboose.ui.audit').open(count)
end

--- :CabooseAudit [count]
function M.command_audit(o)
  local arg = vim.trim(o.args or '')
  local count = arg ~= '' and tonumber(arg) or nil
  if arg ~= '' and not (count and count >= 1 and count <= 10000 and count == math.floor(count)) then
    H.notify('CabooseAudit takes a count from 1 to 10000, not ' .. arg, vim.log.levels.ERROR)
    return
  end
  M.audit(count)
end

--- List the MCP servers, their state and their tools in a float (r: restart the server under the cursor,
--- q: close). Servers not started yet are started first. Returns at once; the float opens when the host answers.
function M.mcp()
  require('caboose.ui.mcp').open()
end

--- Stop and start MCP server {name} again (also one that failed or kept crashing). Returns at once.
---@param name string
function M.mcp_restart(name)
  return require('caboose.ui.mcp').restart(name)
end

--- :CabooseMcp [restart {name}]
function M.command_mcp(o)
  local args = vim.split(vim.trim(o.args or ''), '%s+', { trimempty = true })
  if #args == 0 then
    return M.mcp()
  end
  if args[1] == 'restart' and #args == 2 then
    return M.mcp_restart(args[2])
  end
  H.notify('usage: :CabooseMcp [restart {server}]', vim.log.levels.ERROR)
end

--- Open the model picker (vim.ui.select over every provider's models): the same one :CabooseModel and
--- the chat's gL open. `opts.on_choice(item|nil)` runs after the switch. Returns at once.
---@param opts { refresh: boolean|nil, on_choice: fun(item: table|nil)|nil }|nil
function M.pick_model(opts)
  return require('caboose.model').pick(opts)
end

--- Set the model of the next request: 'provider/model', a model of the current provider, or a provider.
---@param spec string
---@param on_done fun(res: { provider: string, model: string, label: string })|nil
function M.set_model(spec, on_done)
  return require('caboose.model').set(spec, on_done)
end

--- Completion items for MCP resources and prompts (servers are started first): calls `on_items` with a
--- list of `{ word, kind = 'resource'|'prompt', menu, info }`, e.g. `#mcp:everything:demo://…` to attach a
--- resource to a message, `/everything:simple-prompt` to run a prompt (at the start of a message). Returns
--- at once.
---@param on_items fun(items: table[])
function M.mcp_completion_items(on_items)
  return H.call(require('caboose.rpc').methods.mcp_items, vim.empty_dict(), function(err, res)
    if not err then
      on_items(res.items or {})
    end
  end)
end

--- Which agent runs the current chat: an `acp.agents` name, or nil for the built-in agent.
function M.agent_name()
  return H.state.agent
end

--- Run the chat with agent {name} (an `acp.agents` entry, or 'caboose' for the built-in agent). The current
--- chat switches while it is empty; a conversation keeps its agent and a new chat starts (always with
--- `new_chat`). Without {name}, picks one with vim.ui.select. Returns at once.
---@param name string|nil
---@param new_chat boolean|nil
function M.agent(name, new_chat)
  local methods = require('caboose.rpc').methods
  if not name or name == '' then
    return H.call(methods.agent_list, vim.empty_dict(), function(err, res)
      if err then
        return
      end
      local items = { 'caboose' }
      vim.list_extend(items, res.agents or {})
      vim.ui.select(items, {
        prompt = 'Agent for this chat',
        format_item = function(item)
          local current = (res.current or 'caboose') == item and '  (current)' or ''
          return (item == 'caboose' and 'caboose (built-in)' or item .. ' (ACP)') .. current
        end,
      }, function(choice)
        if choice then
          M.agent(choice, new_chat)
        end
      end)
    end)
  end
  if not new_chat and (H.state.agent or 'caboose') == name then
    H.notify('this chat already runs ' .. name)
    return true
  end
  local undo = M._leave_session()
  M.open_chat()
  return H.call(methods.agent_select, { name = name, new_chat = new_chat or false }, function(err, res)
    if err then
      undo()
      return
    end
    H.state.agent = res.agent
    H.notify(string.format('%s runs %s', res.new_chat and 'a new chat' or 'this chat', name == 'caboose' and 'the built-in agent' or name))
  end)
end

--- :CabooseAgent[!] [name]
function M.command_agent(o)
  return M.agent(vim.trim(o.args or ''), o.bang)
end

--- Run one tool directly, as the user (no model, no approval). Returns `{ ok, data }` or `{ ok = false, error }`.
--- Waits for the host: an API for scripts and tests, not a user command's path.
---@param name string e.g. 'read_file'
---@param args table
function M.tool_call(name, args)
  return H.request(require('caboose.rpc').methods.tool_call, { name = name, args = args or vim.empty_dict() })
end

--- Internal: used by the UI modules. Asynchronous: `on_done(err, result)` runs when the host answers.
M._request = function(method, params, on_done)
  return H.call(method, params, on_done)
end
M._notify = H.notify
M._notify_line = H.notify_line
--- The approval float's list changed (a request came or was answered): the shown state follows it.
M._approvals_changed = function()
  H.set_state(H.agent_state)
end
M._start_host = H.start_host

return M
