--- Host → Lua events: what each event the host sends (rpc.lua `on_event`) does in the editor; most are
--- drawn in the chat (caboose.chat), approvals and questions in their floats.
local S = require('caboose.state')

local M = {}

M.handlers = {
  state = function(p)
    -- While a mode change is on its way, a state event sent before it carries the old mode.
    local mode = S.mode_changes > 0 and S.state.mode or p.mode
    S.set_state(p.state, { mode = mode, session = p.session, grants = p.grants or {} })
  end,
  session_info = function(p)
    local fields = { title = p.title or false }
    if p.model then
      fields.model = p.model
      -- Which agent runs this chat (an ACP agent's name; nil: the built-in one).
      S.state.agent = p.agent
    end
    S.chat().set_status(nil, nil, fields)
  end,
  transcript = function(p)
    if p.replaced then
      -- The same session's chat changed (a regenerated reply): shown as now stored, nothing else happens.
      S.chat().load(vim.json.decode(p.items_json, { luanil = { object = true, array = true } }))
      return
    end
    -- A reopened session: its chat replaces the current one (the unsent draft stays).
    require('caboose.ui.approval').close_all()
    S.chat().load(p.items_json and vim.json.decode(p.items_json, { luanil = { object = true, array = true } }) or p.items or {})
    S.chat().set_status(nil, nil, { title = p.title or false })
    require('caboose').open_chat()
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseSessionOpened', modeline = false, data = { session = p.session, title = p.title } })
  end,
  rules = function(p)
    S.chat().rules(p.lines or {})
  end,
  user_message = function(p)
    S.chat().user_message(p)
  end,
  queued = function(p)
    S.chat().queued(p)
  end,
  queue_discarded = function(p)
    S.chat().queue_discarded(p.messages or {})
  end,
  assistant_start = function()
    S.chat().assistant_start()
  end,
  assistant_delta = function(p)
    S.chat().assistant_delta(p.text)
  end,
  reasoning_delta = function(p)
    S.chat().reasoning_delta(p.text)
  end,
  assistant_end = function(p)
    S.chat().assistant_end(p)
  end,
  usage = function(p)
    S.chat().set_status(nil, nil, { usage = p })
  end,
  retry = function(p)
    S.chat().set_status(nil, nil, { retry = p })
  end,
  tool_call = function(p)
    S.chat().tool_call(p)
  end,
  tool_result = function(p)
    S.chat().tool_result(p)
  end,
  tool_progress = function(p)
    S.chat().tool_progress(p)
  end,
  todos = function(p)
    S.chat().todos(p.items)
  end,
  notice = function(p)
    S.chat().notice(p.text)
  end,
  error = function(p)
    S.chat().error(p.message)
    S.notify(p.message, vim.log.levels.ERROR)
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
      S.notify_line(string.format("MCP server '%s' %s: %s", tostring(p.server), what, tostring(p.reason or '?')), vim.log.levels.WARN)
    end
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseMcpChanged', modeline = false, data = p })
    if package.loaded['caboose.ui.mcp'] then
      require('caboose.ui.mcp').refresh()
    end
  end,
  host_exit = function(p)
    if not p.expected then
      local msg = string.format('the host exited unexpectedly (code %s); the next command starts a new one', tostring(p.code))
      S.chat().error(msg)
      S.notify(msg, vim.log.levels.ERROR)
    end
    pcall(function()
      require('caboose.ui.approval').close_all()
    end)
    S.chat().queue_discarded(nil)
    S.state.session = nil
    S.state.grants = {}
    S.set_state('idle')
  end,
}

return M
