--- caboose.nvim — an agentic coding assistant whose edits never silently disagree with your buffers.
--- Public API: setup(), state(), send(), stop(), set_mode(), approval_respond(), revoke(), restore(), undo(),
--- checkpoints(), audit(), mcp().
local S = require('caboose.state')
local host = require('caboose.host')
local commands = require('caboose.commands')

local M = {}
local H = {}

--- How long after the host's prestart the chat's markdown queries are loaded (see M.prestart).
H.PRELOAD_AFTER_MS = 200

--- Configure caboose. Optional: without it, defaults and the environment are used.
---@param opts table|nil see |caboose-config|
function M.setup(opts)
  S.config = require('caboose.config').build(opts)
  S.state.mode = S.config.mode
  require('caboose.highlights').setup()
  if S.config.edit.keymap then
    vim.keymap.set('x', S.config.edit.keymap, '<Plug>(CabooseEdit)', { desc = 'Caboose: edit the selection' })
  end
  if require('caboose.rpc').is_running() then
    S.notify('configuration changes reach the host at its next start (:CabooseNew keeps it)', vim.log.levels.WARN)
  end
end

--- The effective configuration (read-only copy).
function M.config()
  return vim.deepcopy(S.cfg())
end

--- { state = 'idle'|'streaming'|'executing_tools'|'pending_approval', mode, session, grants }
--- `grants`: the tools approved with "always" in this session (:CabooseRevoke withdraws them).
function M.state()
  S.cfg() -- the mode is known before the host starts (reading the config starts nothing)
  return vim.deepcopy(S.state)
end

--- Start the host ahead of the first message (e.g. while a :Caboose command is being typed), so the
--- first reply streams without waiting for it to load. Costs the editor nothing: the host starts as a job.
function M.prestart()
  local cfg = S.cfg()
  -- The classic remote-plugin host starts synchronously: never while the user types.
  if require('caboose.rpc').is_running() or not cfg.host.prestart or cfg.host.transport == 'remote' then
    return
  end
  if host.start_host(true) == true then
    -- The chat's markdown parsers and queries too, one piece a turn while the command is typed, once the
    -- host's Node has started (≈ 50–100 ms of both CPUs): the `markdown` highlights query (≈ 5 ms of CPU in
    -- one turn) then does not wait for a CPU behind it. Typed before then, the chat's opening loads them.
    vim.defer_fn(function()
      S.next_turn(function()
        require('caboose.chat.markdown').preload()
      end)
    end, H.PRELOAD_AFTER_MS)
  end
end

--- A short status for statuslines: '' when idle, else e.g. 'caboose: streaming'.
function M.statusline()
  if S.state.state == 'idle' then
    return ''
  end
  return 'caboose: ' .. S.state.state:gsub('_', ' ')
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
    S.notify('nothing to send', vim.log.levels.WARN)
    return false
  end
  opts = opts or {}
  -- A cold start: the host's process starts first, so Node loads while the chat opens and the message is
  -- expanded (a failure to start is reported by the call below, where the chat shows it). Starting it
  -- blocks the editor until the child has run exec (≈ 0.5 ms on an idle machine, 10–25 ms when the CPUs
  -- are busy). On a cold start or the chat's first opening, the rest runs in later turns of the main
  -- loop, keys typed meanwhile served between them: the chat's modules (≈ 2 ms on an idle machine), its
  -- buffers (≈ 2 ms), its windows, then the message expanded and sent. A message with a slash command
  -- (which may not open the chat) is expanded at once.
  local started = not opts.expanded and host.start_early()
  if not opts.expanded and (started or not H.chat_built()) then
    opts = vim.tbl_extend('force', opts, { origin = opts.origin or vim.api.nvim_get_current_buf() })
    local function expand()
      require('caboose.insertables').send(text, opts)
    end
    local steps = {
      function()
        S.chat() -- its modules
      end,
      function()
        S.chat().buf()
        S.chat().input_buf()
      end,
      M.open_chat,
      expand,
    }
    local i = 0
    local function step()
      i = i + 1
      steps[i]()
      if steps[i + 1] then
        S.next_turn(step)
      end
    end
    S.next_turn(function()
      if text:find('^%s*/') or text:find('\n%s*/') then
        return expand()
      end
      step()
    end)
    return true
  end
  if not opts.expanded then
    return require('caboose.insertables').send(text, opts)
  end
  M.open_chat()
  local params = { text = text }
  if opts.context and #opts.context > 0 then
    params.context = opts.context
  end
  return host.call(require('caboose.rpc').methods.send, params, function(err, res)
    if err then
      -- The host could not take the message (e.g. api_key_cmd failed): say so where the user looks.
      S.chat().error(tostring(err):gsub('^%(caboose%) ', ''))
    end
    if opts.on_done then
      opts.on_done(err, res)
    end
  end)
end

--- Whether the chat's buffers exist (without loading the chat).
H.chat_built = function()
  local cs = package.loaded['caboose.chat.state']
  return cs ~= nil and cs.valid(cs.buf) and cs.valid(cs.input)
end

function M.open_chat()
  S.chat().set_status(S.state.state, S.state.mode or S.cfg().mode, { grants = S.state.grants })
  return S.chat().open(S.cfg())
end

--- Open the chat and put the cursor in its message area.
function M.focus_chat()
  M.open_chat()
  return S.chat().focus_input()
end

--- Ask for a message with vim.ui.input, then send it.
function M.prompt()
  vim.ui.input({ prompt = 'Caboose> ' }, function(text)
    if text and vim.trim(text) ~= '' then
      M.send(text)
    end
  end)
end

--- Stop the running turn: the stream, every running tool, pending approvals; queued messages are dropped.
function M.stop()
  if package.loaded['caboose.edit'] then
    require('caboose.edit').stop()
  end
  if not require('caboose.rpc').is_running() then
    return
  end
  host.call(require('caboose.rpc').methods.stop, {})
end

--- Edit lines `line1`..`line2` of the current buffer as `instruction` says (asks when it is empty); the
--- answer is reviewed in place. Returns at once.
function M.edit(line1, line2, instruction)
  M.prestart()
  return require('caboose.edit').start({ line1 = line1, line2 = line2, instruction = instruction })
end

--- Set the permission mode: 'plan' | 'create' | 'auto-edit' | 'chug'.
function M.set_mode(mode)
  local ok = vim.tbl_contains({ 'plan', 'create', 'auto-edit', 'chug' }, mode)
  if not ok then
    S.notify('unknown mode ' .. tostring(mode) .. ' (plan, create, auto-edit, chug)', vim.log.levels.ERROR)
    return false
  end
  local previous = S.state.mode or S.cfg().mode
  S.cfg().mode = mode
  S.set_state(S.agent_state, { mode = mode })
  if require('caboose.rpc').is_running() then
    S.mode_changes = S.mode_changes + 1
    local sent = host.call(require('caboose.rpc').methods.set_mode, { mode = mode }, function(err)
      S.mode_changes = S.mode_changes - 1
      if err then
        -- The host kept the old mode: show the one in force.
        S.cfg().mode = previous
        S.set_state(S.agent_state, { mode = previous })
      end
    end)
    if not sent then
      S.mode_changes = S.mode_changes - 1
    end
  end
  S.notify('mode: ' .. mode)
  return true
end

--- Withdraw standing "always" grants: {tool}'s, or every one without it. The tool asks again next time.
---@param tool string|nil
function M.revoke(tool)
  if tool == '' then
    tool = nil
  end
  local grants = S.state.grants or {}
  if #grants == 0 then
    S.notify('no tool is always allowed in this session')
    return false
  end
  if tool and not vim.tbl_contains(grants, tool) then
    S.notify(string.format('%s is not always allowed (%s)', tool, S.grants_text()), vim.log.levels.WARN)
    return false
  end
  local params = tool and { tool = tool } or vim.empty_dict()
  local names = tool or table.concat(grants, ', ')
  return host.call(require('caboose.rpc').methods.grants_revoke, params, function(err)
    if not err then
      S.notify('revoked: ' .. names .. ' (asks again)')
    end
  end)
end

--- Start a new conversation.
function M.new_session()
  local undo, scope = M._leave_session()
  M.open_chat()
  return host.call(require('caboose.rpc').methods.reset, { cwd = vim.fn.getcwd(), scope = scope }, function(err)
    if err then
      undo()
    end
  end)
end

--- The chat leaves the current session (:CabooseNew, deleting it): nothing it still sends is shown, its
--- approval requests close, and the chat starts empty (the unsent draft stays). Returns what takes the
--- first part back when the host refuses, and the scope to give the host (rpc.leave_scope).
M._leave_session = function()
  local undo, scope = require('caboose.rpc').leave_scope()
  if package.loaded['caboose.ui.approval'] then
    require('caboose.ui.approval').close_all()
  end
  S.chat().reset()
  return undo, scope
end

--- Pick a stored session and reopen it (vim.ui.select); `query` searches their text. With `delete`, the
--- chosen session is deleted (after asking) instead.
---@param query string|nil
---@param delete boolean|nil
function M.sessions(query, delete)
  return require('caboose.ui.sessions').pick(query and vim.trim(query) or nil, delete and 'delete' or 'open')
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
  return host.call(require('caboose.rpc').methods.session_compact, vim.empty_dict(), function(err, res)
    if not err and res and not res.compacted then
      S.notify('nothing to compact yet (the last turn is kept as it is)')
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
  return host.call(require('caboose.rpc').methods.mcp_items, vim.empty_dict(), function(err, res)
    if not err then
      on_items(res.items or {})
    end
  end)
end

--- Which agent runs the current chat: an `acp.agents` name, or nil for the built-in agent.
function M.agent_name()
  return S.state.agent
end

--- Run the chat with agent {name} (an `acp.agents` entry, or 'caboose' for the built-in agent). The current
--- chat switches while it is empty; a conversation keeps its agent and a new chat starts (always with
--- `new_chat`). Without {name}, picks one with vim.ui.select. Returns at once.
---@param name string|nil
---@param new_chat boolean|nil
function M.agent(name, new_chat)
  local methods = require('caboose.rpc').methods
  if not name or name == '' then
    return host.call(methods.agent_list, vim.empty_dict(), function(err, res)
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
  if not new_chat and (S.state.agent or 'caboose') == name then
    S.notify('this chat already runs ' .. name)
    return true
  end
  local undo, scope = M._leave_session()
  M.open_chat()
  return host.call(methods.agent_select, { name = name, new_chat = new_chat or false, scope = scope }, function(err, res)
    if err then
      undo()
      return
    end
    S.state.agent = res.agent
    S.notify(string.format('%s runs %s', res.new_chat and 'a new chat' or 'this chat', name == 'caboose' and 'the built-in agent' or name))
  end)
end

--- Run one tool directly, as the user (no model, no approval). Returns `{ ok, data }` or `{ ok = false, error }`.
--- Waits for the host: an API for scripts and tests, not a user command's path.
---@param name string e.g. 'read_file'
---@param args table
function M.tool_call(name, args)
  return host.request(require('caboose.rpc').methods.tool_call, { name = name, args = args or vim.empty_dict() })
end

--- Internal: used by the UI modules. Asynchronous: `on_done(err, result)` runs when the host answers.
M._request = function(method, params, on_done)
  return host.call(method, params, on_done)
end
M._notify = S.notify
M._notify_line = S.notify_line
--- The approval float's list changed (a request came or was answered): the shown state follows it.
M._approvals_changed = function()
  S.set_state(S.agent_state)
end
M._start_host = host.start_host

-- The user commands' handlers (caboose.commands).
M.command_caboose = commands.caboose
M.command_edit = commands.edit
M.command_mode = commands.mode
M.command_revoke = commands.revoke
M.command_sessions = commands.sessions
M.command_audit = commands.audit
M.command_mcp = commands.mcp
M.command_agent = commands.agent

return M
