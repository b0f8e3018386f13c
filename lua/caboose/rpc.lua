--- The only module that talks to the Node host: starts it on first use, sends requests,
--- receives its events, and notices when it dies.
local M = {}
local H = {}

--- RPC method names; test/e2e checks they match src/host/protocol.ts.
M.methods = {
  ping = 'host.ping',
  init = 'host.init',
  send = 'session.send',
  stop = 'session.stop',
  reset = 'session.new',
  session_list = 'session.list',
  session_open = 'session.open',
  session_rename = 'session.rename',
  session_compact = 'session.compact',
  session_export = 'session.export',
  session_delete = 'session.delete',
  session_info = 'session.info',
  session_retry = 'session.retry',
  session_fork = 'session.fork',
  session_debug = 'session.debug',
  set_mode = 'mode.set',
  approval_resolve = 'approval.resolve',
  ask_resolve = 'ask.resolve',
  grants_revoke = 'grants.revoke',
  health = 'health.check',
  trash_list = 'trash.list',
  trash_restore = 'trash.restore',
  tool_call = 'tool.call',
  selection_edit = 'edit.selection',
  selection_edit_cancel = 'edit.cancel',
  checkpoint_list = 'checkpoint.list',
  checkpoint_diff = 'checkpoint.diff',
  checkpoint_rewind = 'checkpoint.rewind',
  audit_list = 'audit.list',
  audit_diff = 'audit.diff',
  mcp_list = 'mcp.list',
  mcp_restart = 'mcp.restart',
  model_list = 'model.list',
  model_set = 'model.set',
  model_check = 'model.check',
  mcp_items = 'mcp.items',
  agent_list = 'agent.list',
  agent_select = 'agent.select',
}

H.chan = nil ---@type integer|nil
H.job = nil ---@type integer|nil
H.stopping = false
H.handlers = {} ---@type table<string, fun(payload: table)>
H.callbacks = {} ---@type table<integer, fun(err: string|nil, result: any)|false>
H.next_id = 0

--- The notification that carries an asynchronous call; src/host/protocol-names.ts CALL_NOTIFICATION.
M.call_notification = 'caboose.call'

H.plugin_root = function()
  local src = debug.getinfo(1, 'S').source:sub(2)
  return vim.fn.fnamemodify(src, ':p:h:h:h')
end

--- Event handlers registered by init.lua (name → fn(payload)).
function M.set_handlers(handlers)
  H.handlers = handlers
end

--- A session's events carry its runtime's `_scope` (src/host/lua-ui.ts). Each time the chat leaves its
--- session it numbers a new scope and gives it to the host with the call that switches, and the host tags
--- the session it opens with it; events of a lower scope come from a session the chat has left (sent
--- before the host had the switch, still on their way, possibly from a session Lua never saw) and are dropped.
H.scope = 0

--- The chat leaves the current session (:CabooseNew, reopening or deleting it): what that session
--- still sends is not shown. Returns a function that takes it back (the host refused to leave it), and
--- the new scope (the `scope` parameter of the switching call).
function M.leave_scope()
  local before = H.scope
  H.scope = H.scope + 1
  local mine = H.scope
  return function()
    if H.scope == mine then
      H.scope = before
    end
  end, mine
end

--- Called by the host through nvim_exec_lua for every event it emits.
function M.on_event(name, payload)
  if name == 'reply' then
    return H.on_reply(payload or {})
  end
  local scope = payload and payload._scope
  if scope then
    payload._scope = nil
    if scope < H.scope then
      return
    end
  end
  local fn = H.handlers[name]
  if not fn then
    return
  end
  local ok, err = pcall(fn, payload or {})
  if not ok then
    vim.notify('(caboose) error handling ' .. name .. ': ' .. tostring(err), vim.log.levels.ERROR)
  end
  -- User CabooseProgress (fidget.nvim, statuslines): after the chat has the event.
  local pok, perr = pcall(require('caboose.progress').on_event, name, payload or {})
  if not pok then
    vim.notify('(caboose) progress: ' .. tostring(perr), vim.log.levels.ERROR)
  end
end

H.on_reply = function(p)
  local cb = H.callbacks[p.id]
  H.callbacks[p.id] = nil
  if not cb then
    return
  end
  local ok, err = pcall(cb, (not p.ok) and tostring(p.error or 'the host failed') or nil, p.result)
  if not ok then
    vim.notify('(caboose) error handling a reply: ' .. tostring(err), vim.log.levels.ERROR)
  end
end

--- Answers every call still waiting (the host is gone), so no callback waits forever.
H.fail_pending = function(msg)
  local pending = H.callbacks
  H.callbacks = {}
  for _, cb in pairs(pending) do
    if cb then
      pcall(cb, msg, nil)
    end
  end
end

function M.is_running()
  return H.chan ~= nil
end

--- The host's job id (nil when not started, or in 'remote' transport).
function M.job_id()
  return H.job
end

function M.host_pid()
  if not H.job then
    return nil
  end
  local ok, pid = pcall(vim.fn.jobpid, H.job)
  return ok and pid or nil
end

H.on_exit = function(job, code)
  if H.job ~= job then
    return
  end
  local expected = H.stopping
  H.chan, H.job, H.stopping = nil, nil, false
  H.scope = 0 -- a new host tags its sessions from 0 again
  H.fail_pending('the host exited' .. (H.last_stderr and H.last_stderr ~= '' and (': ' .. H.last_stderr) or ''))
  local fn = H.handlers['host_exit']
  if fn then
    pcall(fn, { code = code, expected = expected })
  end
  pcall(require('caboose.progress').on_event, 'host_exit', {})
end

H.start_job = function(cfg)
  local entry = H.plugin_root() .. '/rplugin/node/caboose'
  if vim.fn.executable(cfg.host.node) ~= 1 then
    error(string.format('(caboose) node executable not found: %s (set host.node in setup())', cfg.host.node), 0)
  end
  local stderr = {}
  -- The API key is not put in the host's environment (a command the agent runs could read
  -- /proc/<host pid>/environ): it goes over the RPC channel with host.init (H.init_params).
  local env = vim.fn.environ()
  env.OPENAI_API_KEY = nil
  env.CABOOSE_LOG_FILE = cfg.log.file
  env.CABOOSE_LOG_LEVEL = cfg.log.level
  -- Where the host keeps its compiled code between starts (rplugin/node/caboose/index.js).
  env.CABOOSE_CACHE_DIR = vim.fn.stdpath('cache') .. '/caboose'
  local job = vim.fn.jobstart({ cfg.host.node, entry }, {
    rpc = true,
    clear_env = true,
    env = env,
    on_stderr = function(_, data)
      for _, line in ipairs(data or {}) do
        if line ~= '' and #stderr < 50 then
          table.insert(stderr, line)
        end
      end
    end,
    on_exit = function(j, code)
      H.last_stderr = table.concat(stderr, '\n')
      H.on_exit(j, code)
    end,
  })
  if job <= 0 then
    error('(caboose) could not start the host: jobstart returned ' .. job, 0)
  end
  H.job, H.chan = job, job
end

H.init_params = function(cfg)
  local v = vim.version()
  return {
    config = require('caboose.config').host_part(cfg),
    cwd = vim.fn.getcwd(),
    data_dir = cfg.data_dir,
    log_file = cfg.log.file,
    log_level = cfg.log.level,
    nvim_version = string.format('%d.%d.%d', v.major, v.minor, v.patch),
    env_api_key = (vim.env.OPENAI_API_KEY ~= nil and vim.env.OPENAI_API_KEY ~= '') and vim.env.OPENAI_API_KEY or nil,
  }
end

--- Starts the host if needed and initialises it, without waiting for it: calls made meanwhile queue behind
--- the init on the channel. Errors (with a clear message) when the host cannot be started; an init that
--- fails later is reported through `on_init_error`.
---@param cfg caboose.Config
---@param on_init_error fun(msg: string)|nil
function M.ensure(cfg, on_init_error)
  if H.chan then
    return
  end
  H.cfg = cfg
  if cfg.host.transport == 'remote' then
    -- The manifest defines the functions lazily (FuncUndefined), so look for either.
    if vim.fn.exists('*CabooseHostRequest') ~= 1 and vim.fn.exists('#FuncUndefined#CabooseHostRequest') ~= 1 then
      error('(caboose) host.transport = "remote" but the remote plugin is not registered; run :UpdateRemotePlugins', 0)
    end
    H.chan = 'remote'
  else
    H.start_job(cfg)
  end
  local chan = H.chan
  M.call(M.methods.init, H.init_params(cfg), function(err)
    if err and H.chan == chan then
      M.shutdown()
      if on_init_error then
        on_init_error(err)
      end
    end
  end)
end

--- Asynchronous call: returns at once; `cb(err, result)` runs when the host answers (or exits).
---@param method string
---@param params table|nil
---@param cb fun(err: string|nil, result: any)|nil
function M.call(method, params, cb)
  if not H.chan then
    if cb then
      cb('host is not running', nil)
    end
    return
  end
  H.next_id = H.next_id + 1
  local id = H.next_id
  H.callbacks[id] = cb or false
  local payload = { id = id, method = method, params = params or vim.empty_dict() }
  if H.chan == 'remote' then
    vim.fn.CabooseHostNotify(M.call_notification, payload)
  else
    vim.rpcnotify(H.chan, M.call_notification, payload)
  end
end

--- Sends a request and waits for its result; raises '(caboose) …' on failure. Only for the API functions
--- that return a value (tool_call) and :checkhealth; user commands use M.call.
function M.request(method, params)
  if not H.chan then
    error('(caboose) host is not running', 0)
  end
  params = params or vim.empty_dict()
  if H.chan == 'remote' then
    local reply = vim.fn.CabooseHostRequest(method, params)
    if type(reply) ~= 'table' or not reply.ok then
      error('(caboose) ' .. tostring(type(reply) == 'table' and reply.error or reply), 0)
    end
    return reply.result
  end
  local ok, res = pcall(vim.rpcrequest, H.chan, method, params)
  if not ok then
    local msg = tostring(res):gsub('^Vim:', '')
    if not H.chan then
      msg = 'the host exited' .. (H.last_stderr and H.last_stderr ~= '' and (': ' .. H.last_stderr) or '')
    end
    error('(caboose) ' .. msg, 0)
  end
  return res
end

--- Fire-and-forget notification.
function M.notify(method, params)
  if not H.chan then
    return
  end
  params = params or vim.empty_dict()
  if H.chan == 'remote' then
    vim.fn.CabooseHostNotify(method, params)
  else
    vim.rpcnotify(H.chan, method, params)
  end
end

function M.shutdown()
  if H.job then
    H.stopping = true
    pcall(vim.fn.jobstop, H.job)
  end
  H.chan, H.job = nil, nil
  H.fail_pending('the host was stopped')
end

return M
