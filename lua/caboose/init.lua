--- caboose.nvim — an agentic coding assistant whose edits never silently disagree with your buffers.
--- Public API: setup(), state(), send(), stop(), set_mode(), approval_respond(), revoke(), restore().
local M = {}
local H = {}

H.config = nil ---@type caboose.Config|nil
H.state = { state = 'idle', mode = nil, session = nil, grants = {} }

H.notify = function(msg, level)
  vim.notify('(caboose) ' .. msg, level or vim.log.levels.INFO)
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

H.set_state = function(new, fields)
  local previous = H.state.state
  H.state.state = new
  for k, v in pairs(fields or {}) do
    H.state[k] = v
  end
  H.chat().set_status(new, H.state.mode, H.state.grants)
  if previous ~= new or (fields and fields.mode) then
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'CabooseStateChanged',
      modeline = false,
      data = { state = new, previous = previous, mode = H.state.mode, session = H.state.session, grants = vim.deepcopy(H.state.grants) },
    })
  end
end

H.chat = function()
  return require('caboose.ui.chat')
end

-- Host → Lua events -------------------------------------------------------------------------------
H.handlers = {
  state = function(p)
    H.set_state(p.state, { mode = p.mode, session = p.session, grants = p.grants or {} })
  end,
  user_message = function(p)
    H.chat().user_message(p.text)
  end,
  assistant_start = function()
    H.chat().assistant_start()
  end,
  assistant_delta = function(p)
    H.chat().assistant_delta(p.text)
  end,
  assistant_end = function(p)
    H.chat().assistant_end(p)
  end,
  tool_call = function(p)
    H.chat().tool_call(p)
  end,
  tool_result = function(p)
    H.chat().tool_result(p)
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
  host_exit = function(p)
    if not p.expected then
      local msg = string.format('the host exited unexpectedly (code %s); the next command starts a new one', tostring(p.code))
      H.chat().error(msg)
      H.notify(msg, vim.log.levels.ERROR)
    end
    pcall(function()
      require('caboose.ui.approval').close_all()
    end)
    H.state.session = nil
    H.state.grants = {}
    H.set_state('idle')
  end,
}

H.start_host = function()
  local rpc = require('caboose.rpc')
  rpc.set_handlers(H.handlers)
  return pcall(rpc.ensure, H.cfg())
end

--- Start the host (if needed). Returns true when it is up.
H.ensure_host = function()
  local ok, err = H.start_host()
  if not ok then
    local msg = tostring(err):gsub('^%(caboose%) ', '')
    H.notify(msg, vim.log.levels.ERROR)
    H.chat().error(msg)
    return false
  end
  return true
end

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

--- A short status for statuslines: '' when idle, else e.g. 'caboose: streaming'.
function M.statusline()
  if H.state.state == 'idle' then
    return ''
  end
  return 'caboose: ' .. H.state.state:gsub('_', ' ')
end

--- Send a message to the agent (opens the chat).
---@param text string
function M.send(text)
  if type(text) ~= 'string' or vim.trim(text) == '' then
    H.notify('nothing to send', vim.log.levels.WARN)
    return nil
  end
  M.open_chat()
  local res, err = H.request(require('caboose.rpc').methods.send, { text = text })
  if not res and err then
    -- The host could not take the message (e.g. api_key_cmd failed): say so where the user looks.
    H.chat().error(err)
  end
  return res
end

function M.open_chat()
  H.chat().set_status(H.state.state, H.state.mode or H.cfg().mode, H.state.grants)
  return H.chat().open(H.cfg())
end

--- Ask for a message with vim.ui.input, then send it.
function M.prompt()
  vim.ui.input({ prompt = 'Caboose> ' }, function(text)
    if text and vim.trim(text) ~= '' then
      M.send(text)
    end
  end)
end

H.selection_prompt = function(o, text)
  local buf = vim.api.nvim_get_current_buf()
  local lines = vim.api.nvim_buf_get_lines(buf, o.line1 - 1, o.line2, false)
  local name = vim.api.nvim_buf_get_name(buf)
  local rel = name ~= '' and vim.fn.fnamemodify(name, ':.') or '[No Name]'
  return string.format(
    '%s\n\nSelection: %s lines %d-%d\n```%s\n%s\n```',
    text,
    rel,
    o.line1,
    o.line2,
    vim.bo[buf].filetype,
    table.concat(lines, '\n')
  )
end

--- :Caboose [prompt] — with a range, the selected lines go along with the prompt.
function M.command_caboose(o)
  local text = o.args or ''
  if o.range and o.range > 0 then
    if vim.trim(text) == '' then
      vim.ui.input({ prompt = 'Caboose (selection)> ' }, function(t)
        if t and vim.trim(t) ~= '' then
          M.send(H.selection_prompt(o, t))
        end
      end)
      return
    end
    text = H.selection_prompt(o, text)
  end
  if vim.trim(text) == '' then
    M.open_chat()
    return M.prompt()
  end
  return M.send(text)
end

--- Stop the running turn: the stream, every running tool, pending approvals.
function M.stop()
  if not require('caboose.rpc').is_running() then
    return
  end
  H.request(require('caboose.rpc').methods.stop, {})
end

--- Set the permission mode: 'plan' | 'create' | 'auto-edit' | 'chug'.
function M.set_mode(mode)
  local ok = vim.tbl_contains({ 'plan', 'create', 'auto-edit', 'chug' }, mode)
  if not ok then
    H.notify('unknown mode ' .. tostring(mode) .. ' (plan, create, auto-edit, chug)', vim.log.levels.ERROR)
    return false
  end
  H.cfg().mode = mode
  if require('caboose.rpc').is_running() then
    if not H.request(require('caboose.rpc').methods.set_mode, { mode = mode }) then
      return false
    end
  end
  H.set_state(H.state.state, { mode = mode })
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
  if not H.request(require('caboose.rpc').methods.grants_revoke, params) then
    return false
  end
  H.notify('revoked: ' .. (tool or table.concat(grants, ', ')) .. ' (asks again)')
  return true
end

function M.command_revoke(o)
  return M.revoke(vim.trim(o.args or ''))
end

--- Start a new conversation.
function M.new_session()
  H.chat().reset()
  local res = H.request(require('caboose.rpc').methods.reset, { cwd = vim.fn.getcwd() })
  M.open_chat()
  return res
end

--- Answer the pending approval: 'once' | 'always' | 'reject' (with an optional reason).
function M.approval_respond(decision, reason)
  return require('caboose.ui.approval').respond(decision, reason)
end

--- Pick a trashed file and restore it (vim.ui.select).
function M.restore()
  require('caboose.ui.restore').pick()
end

--- Run one tool directly, as the user (no model, no approval). Returns `{ ok, data }` or `{ ok = false, error }`.
---@param name string e.g. 'read_file'
---@param args table
function M.tool_call(name, args)
  return H.request(require('caboose.rpc').methods.tool_call, { name = name, args = args or vim.empty_dict() })
end

--- Internal: used by the UI modules.
M._request = function(method, params)
  return H.request(method, params)
end
M._notify = H.notify
M._start_host = H.start_host

return M
