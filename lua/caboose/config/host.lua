--- The part of the configuration the host owns, in the form it expects: tables by name travel as
--- objects (an empty Lua table would travel as an array), commands split into program and arguments,
--- `~` expanded where the host would not.
local M = {}
local H = {}

--- The ACP agents as the host expects them: `command` split into the program and its arguments.
H.acp_part = function(acp)
  local agents = setmetatable({}, getmetatable(vim.empty_dict()))
  for name, a in pairs(acp.agents or {}) do
    local cmd = type(a.command) == 'table' and a.command or { a.command }
    local program = cmd[1]
    if program:sub(1, 2) == '~/' then
      program = vim.fs.normalize(program)
    end
    agents[name] = {
      command = program,
      args = vim.list_slice(cmd, 2),
      env = a.env and setmetatable(vim.deepcopy(a.env), getmetatable(vim.empty_dict())) or nil,
      start_timeout_ms = a.start_timeout_ms,
    }
  end
  return { agents = agents }
end

--- The part of the config the host owns (model, tools, approvals, store).
---@param cfg caboose.Config
function M.host_part(cfg)
  local provider = vim.deepcopy(cfg.provider)
  if type(provider) == 'table' then
    if provider.headers and vim.tbl_isempty(provider.headers) then
      provider.headers = nil
    end
    -- An empty Lua table travels as an array; the host expects an object.
    setmetatable(provider, getmetatable(vim.empty_dict()))
  end
  local providers = nil
  if cfg.providers then
    providers = setmetatable({}, getmetatable(vim.empty_dict()))
    for name, p in pairs(cfg.providers) do
      local out = setmetatable(vim.deepcopy(p), getmetatable(vim.empty_dict()))
      if out.headers then
        setmetatable(out.headers, getmetatable(vim.empty_dict()))
      end
      if type(out.models) == 'table' and not vim.islist(out.models) then
        setmetatable(out.models, getmetatable(vim.empty_dict()))
        for _, o in pairs(out.models) do
          setmetatable(o, getmetatable(vim.empty_dict()))
        end
      end
      providers[name] = out
    end
  end
  return {
    provider = provider,
    providers = providers,
    mode = cfg.mode,
    step_limit = cfg.step_limit,
    max_queue = cfg.max_queue,
    unsaved_buffers = cfg.unsaved_buffers,
    allow_readonly_writes = cfg.allow_readonly_writes,
    hard_links = cfg.hard_links,
    deny_globs = cfg.deny_globs,
    secret_globs = cfg.secret_globs,
    trash_retention_days = cfg.trash_retention_days,
    bash_timeout_ms = cfg.bash_timeout_ms,
    fetch_allow_hosts = cfg.fetch_allow_hosts,
    web_search = cfg.web_search,
    system_prompt = cfg.system_prompt,
    rules = cfg.rules,
    diagnostics = cfg.diagnostics,
    mcp = H.mcp_part(cfg.mcp),
    acp = H.acp_part(cfg.acp),
    sandbox = H.sandbox_part(cfg.sandbox),
  }
end

--- The sandbox settings as the host expects them (an object; `~` expanded by the host).
H.sandbox_part = function(sb)
  local allow = sb.network and sb.network.allow
  return setmetatable({
    mode = sb.mode,
    network = setmetatable({ allow = allow == nil and false or allow }, getmetatable(vim.empty_dict())),
    deny_read = sb.deny_read or {},
    writable = sb.writable or {},
  }, getmetatable(vim.empty_dict()))
end

local dict_mt = getmetatable(vim.empty_dict())

--- The MCP servers as the host expects them: tables by name as objects, `~` expanded in paths.
H.mcp_part = function(mcp)
  local servers = setmetatable({}, dict_mt)
  for name, s in pairs(mcp.servers or {}) do
    local out = vim.deepcopy(s)
    out.type = nil
    if type(out.command) == 'table' then
      out.args = vim.list_extend(vim.list_slice(out.command, 2), out.args or {})
      out.command = out.command[1]
    end
    for _, k in ipairs({ 'env', 'headers' }) do
      if out[k] then
        setmetatable(out[k], dict_mt)
      end
    end
    if out.cwd then
      out.cwd = vim.fs.normalize(out.cwd)
    end
    if out.command and out.command:sub(1, 2) == '~/' then
      out.command = vim.fs.normalize(out.command)
    end
    servers[name] = out
  end
  return { servers = servers, start_timeout_ms = mcp.start_timeout_ms }
end

return M
