--- Validation of the configuration, leaf by leaf: each known key's checker (`H.checks`, by dotted key),
--- then the tables of named things (providers, MCP servers, ACP agents). An error names the dotted key,
--- what it should be and what it is.
local M = {}
local H = {}

H.enum = function(values)
  return function(v)
    return vim.tbl_contains(values, v), 'one of ' .. table.concat(values, ', ')
  end
end

H.positive = function(v)
  return type(v) == 'number' and v > 0, 'a positive number'
end

H.string_list = function(v)
  if type(v) ~= 'table' then
    return false, 'a list of strings'
  end
  for _, s in ipairs(v) do
    if type(s) ~= 'string' then
      return false, 'a list of strings'
    end
  end
  return true
end

H.whole_positive = function(v)
  return type(v) == 'number' and v >= 1 and v == math.floor(v), 'a whole number >= 1'
end

--- Rules patterns are looked up inside each folder searched: relative, never climbing out.
H.rules_patterns = function(v)
  local expected = 'a list of file names or globs relative to the folder searched (no leading "/", no "..")'
  if v == nil then
    return true -- rules = false
  end
  if type(v) ~= 'table' then
    return false, expected
  end
  for _, p in ipairs(v) do
    if type(p) ~= 'string' or vim.trim(p) == '' or p:sub(1, 1) == '/' or p:match('^%a:[/\\]') or vim.tbl_contains(vim.split(p, '[/\\]'), '..') then
      return false, expected
    end
  end
  return true
end

H.opt_type = function(t)
  return function(v)
    return v == nil or type(v) == t, t .. ' or nil'
  end
end

-- dotted key → checker(value) returning ok, expected
H.checks = {
  ['provider'] = function(v)
    return v == nil or type(v) == 'table' or (type(v) == 'string' and v ~= ''), "a table, or the name of one of `providers`"
  end,
  ['provider.base_url'] = H.opt_type('string'),
  ['provider.api_key'] = H.opt_type('string'),
  ['provider.api_key_cmd'] = function(v)
    return v == nil or type(v) == 'string' or type(v) == 'table', 'a string or a list of strings'
  end,
  ['provider.model'] = H.opt_type('string'),
  ['provider.max_tokens'] = H.opt_type('number'),
  ['provider.context_window'] = H.opt_type('number'),
  ['provider.headers'] = H.opt_type('table'),
  ['provider.timeout_ms'] = H.opt_type('number'),
  ['provider.max_retries'] = H.opt_type('number'),
  ['provider.media'] = function(v)
    if v == nil then
      return true
    end
    if type(v) ~= 'table' then
      return false, "a list of 'image' and/or 'audio'"
    end
    for _, x in ipairs(v) do
      if x ~= 'image' and x ~= 'audio' then
        return false, "a list of 'image' and/or 'audio'"
      end
    end
    return true
  end,
  ['provider.retry_base_delay_ms'] = H.opt_type('number'),
  ['provider.vision'] = H.opt_type('boolean'),
  ['mode'] = H.enum({ 'plan', 'create', 'auto-edit', 'chug' }),
  ['step_limit'] = H.positive,
  ['max_queue'] = function(v)
    return type(v) == 'number' and v >= 0, 'a number >= 0'
  end,
  ['unsaved_buffers'] = H.enum({ 'edit_buffer', 'refuse' }),
  ['allow_readonly_writes'] = function(v)
    return type(v) == 'boolean', 'a boolean'
  end,
  ['hard_links'] = H.enum({ 'refuse', 'in_place' }),
  ['deny_globs'] = H.string_list,
  ['secret_globs'] = H.string_list,
  ['trash_retention_days'] = H.positive,
  ['bash_timeout_ms'] = H.positive,
  ['fetch_allow_hosts'] = H.string_list,
  ['web_search'] = function(v)
    local ok = v == nil or (type(v) == 'table' and type(v.searxng_url) == 'string' and v.searxng_url:match('^https?://') ~= nil)
    return ok, 'nil or { searxng_url = "http(s)://…" }'
  end,
  ['system_prompt'] = H.opt_type('string'),
  ['rules'] = function(v)
    return v == false or type(v) == 'table', 'false or a table { files, max_bytes_per_file, max_total_bytes }'
  end,
  ['rules.files'] = H.rules_patterns,
  ['rules.max_bytes_per_file'] = function(v)
    return v == nil or H.whole_positive(v), 'a whole number >= 1'
  end,
  ['rules.max_total_bytes'] = function(v)
    return v == nil or H.whole_positive(v), 'a whole number >= 1'
  end,
  ['diagnostics.enabled'] = function(v)
    return type(v) == 'boolean', 'a boolean'
  end,
  ['diagnostics.wait_ms'] = H.positive,
  ['diagnostics.settle_ms'] = function(v)
    return type(v) == 'number' and v >= 0, 'a number >= 0'
  end,
  ['data_dir'] = function(v)
    return type(v) == 'string' and v ~= '', 'a non-empty string'
  end,
  ['host.node'] = function(v)
    return type(v) == 'string' and v ~= '', 'a non-empty string'
  end,
  ['host.transport'] = H.enum({ 'job', 'remote' }),
  ['host.prestart'] = function(v)
    return type(v) == 'boolean', 'a boolean'
  end,
  ['chat.position'] = H.enum({ 'right', 'left', 'bottom', 'top' }),
  ['chat.size'] = H.positive,
  ['chat.min_size'] = function(v)
    return v == nil or (type(v) == 'number' and v >= 1), 'nil or a number >= 1'
  end,
  ['chat.max_size'] = function(v)
    return v == nil or (type(v) == 'number' and v >= 1), 'nil or a number >= 1'
  end,
  ['chat.show_thinking'] = function(v)
    return type(v) == 'boolean', 'a boolean'
  end,
  ['chat.input_height'] = function(v)
    return type(v) == 'number' and v >= 1 and v == math.floor(v), 'a whole number >= 1'
  end,
  ['approval.grace_ms'] = function(v)
    return type(v) == 'number' and v >= 0, 'a number >= 0'
  end,
  ['approval.style'] = H.enum({ 'inline', 'float' }),
  ['progress.fidget'] = H.opt_type('boolean'),
  ['edit.keymap'] = function(v)
    return v == nil or v == false or (type(v) == 'string' and v ~= ''), 'nil, false or a key'
  end,
  ['chat.keys'] = function(v)
    if type(v) ~= 'table' then
      return false, 'a table { regenerate = key, edit = key, approval = key }'
    end
    for k, lhs in pairs(v) do
      if type(lhs) ~= 'string' then
        return false, string.format('strings (chat.keys.%s is a %s; "" disables a key)', tostring(k), type(lhs))
      end
    end
    return true
  end,
  ['review.keys'] = function(v)
    if type(v) ~= 'table' then
      return false, 'a table of key names'
    end
    for k, lhs in pairs(v) do
      if type(lhs) ~= 'string' and lhs ~= false then
        return false, string.format('strings (review.keys.%s is a %s; "" or false disables a key)', tostring(k), type(lhs))
      end
    end
    return true
  end,
  ['mcp.start_timeout_ms'] = function(v)
    return type(v) == 'number' and v > 0 and v == math.floor(v), 'a positive whole number'
  end,
  ['sandbox.mode'] = function(v)
    return v == nil or vim.tbl_contains({ 'workspace-write', 'read-only', 'off' }, v), "nil, 'workspace-write', 'read-only' or 'off'"
  end,
  ['sandbox.network.allow'] = function(v)
    return type(v) == 'boolean' or (H.string_list(v)), 'true, false or a list of host names'
  end,
  ['sandbox.deny_read'] = H.string_list,
  ['sandbox.writable'] = H.string_list,
  ['log.level'] = H.enum({ 'debug', 'info', 'warn', 'error', 'off' }),
  ['log.file'] = function(v)
    return type(v) == 'string' and v ~= '', 'a non-empty string'
  end,
}

H.get = function(tbl, dotted)
  local cur = tbl
  for part in dotted:gmatch('[^.]+') do
    if type(cur) ~= 'table' then
      return nil
    end
    cur = cur[part]
  end
  return cur
end

H.provider_fields = {
  base_url = 'string', api_key = 'string', api_key_env = 'string', model = 'string', max_tokens = 'number',
  context_window = 'number', headers = 'table', timeout_ms = 'number', max_retries = 'number', retry_base_delay_ms = 'number',
  vision = 'boolean',
}

--- `providers = { name = {…} }` and `provider = 'name'`.
H.check_providers = function(cfg)
  local providers = cfg.providers
  if providers == nil then
    if type(cfg.provider) == 'string' then
      H.fail('provider', 'a table (there are no `providers` to name)', cfg.provider)
    end
    return
  end
  if type(providers) ~= 'table' or vim.islist(providers) then
    H.fail('providers', 'a table of providers by name', providers)
  end
  for name, p in pairs(providers) do
    local at = 'providers.' .. tostring(name)
    if type(name) ~= 'string' or not name:match('^[%w][%w_.-]*$') then
      H.fail(at, 'named with letters, digits, ".", "-" and "_"', name)
    end
    if type(p) ~= 'table' then
      H.fail(at, 'a table { base_url, api_key | api_key_cmd | api_key_env, model, models, … }', p)
    end
    for k, v in pairs(p) do
      local t = H.provider_fields[k]
      if k == 'api_key_cmd' then
        if type(v) ~= 'string' and type(v) ~= 'table' then
          H.fail(at .. '.api_key_cmd', 'a string or a list of strings', v)
        end
      elseif k == 'media' then
        local ok, expected = H.checks['provider.media'](v)
        if not ok then
          H.fail(at .. '.media', expected, v)
        end
      elseif k == 'models' then
        if type(v) ~= 'table' then
          H.fail(at .. '.models', 'a list of model names, or a table of model names → options', v)
        end
      elseif not t then
        H.fail(at .. '.' .. tostring(k), 'one of base_url, api_key, api_key_cmd, api_key_env, model, models, max_tokens, context_window, headers, timeout_ms, max_retries, retry_base_delay_ms, media, vision', v)
      elseif type(v) ~= t then
        H.fail(at .. '.' .. k, 'a ' .. t, v)
      end
    end
  end
  if type(cfg.provider) == 'string' and providers[cfg.provider] == nil then
    local names = vim.tbl_keys(providers)
    table.sort(names)
    H.fail('provider', 'one of the configured providers (' .. table.concat(names, ', ') .. ')', cfg.provider)
  end
end

H.fail = function(key, expected, got)
  error(string.format('(caboose) `%s` should be %s, got %s', key, expected, vim.inspect(got)), 0)
end

H.is_dict_of_strings = function(v)
  if type(v) ~= 'table' then
    return false
  end
  for k, x in pairs(v) do
    if type(k) ~= 'string' or type(x) ~= 'string' then
      return false
    end
  end
  return true
end

-- key → { checker, expected, transport ('stdio'|'http'|nil for both) }
H.non_empty_string = function(v)
  return type(v) == 'string' and v ~= ''
end

-- `type` may say the transport too (as in other MCP clients' configs); it has to agree with command/url.
H.MCP_TYPES = { stdio = 'stdio', http = 'http', ['streamable-http'] = 'http', ['streamable_http'] = 'http', streamableHttp = 'http' }

H.mcp_server_keys = {
  -- A list is the command and its first arguments, like vim.lsp's `cmd`.
  command = {
    function(v)
      return H.non_empty_string(v) or (H.string_list(v) and #v > 0 and v[1] ~= '')
    end,
    'a non-empty string or a list of strings (the command and its arguments)',
    'stdio',
  },
  type = {
    function(v)
      return H.MCP_TYPES[v] ~= nil
    end,
    "'stdio', 'http' or 'streamable-http' (SSE servers are not supported: use their streamable HTTP URL)",
  },
  args = { H.string_list, 'a list of strings', 'stdio' },
  env = { H.is_dict_of_strings, 'a table of strings by name', 'stdio' },
  cwd = { H.non_empty_string, 'a non-empty string', 'stdio' },
  url = {
    function(v)
      return type(v) == 'string' and v:match('^https?://%S+$') ~= nil
    end,
    'an http(s) URL',
    'http',
  },
  headers = { H.is_dict_of_strings, 'a table of strings by name', 'http' },
  allow = {
    function(v)
      return type(v) == 'boolean' or (H.string_list(v))
    end,
    'a boolean or a list of tool names',
  },
  disabled = {
    function(v)
      return type(v) == 'boolean'
    end,
    'a boolean',
  },
  sandbox = {
    function(v)
      return type(v) == 'boolean'
    end,
    'a boolean',
    'stdio',
  },
  timeout_ms = {
    function(v)
      return type(v) == 'number' and v > 0 and v == math.floor(v)
    end,
    'a positive whole number',
  },
  sampling = {
    function(v)
      return v == 'ask' or v == 'allow' or v == 'deny'
    end,
    "'ask', 'allow' or 'deny'",
  },
}

--- Each server of `mcp.servers`: a valid name, either `command` or `url`, known keys of the right types.
H.check_mcp_servers = function(servers)
  if type(servers) ~= 'table' then
    H.fail('mcp.servers', 'a table of servers by name', servers)
  end
  for name, s in pairs(servers) do
    local at = 'mcp.servers.' .. tostring(name)
    local ok_name = type(name) == 'string' and #name <= 32 and name:match('^[%w][%w_-]*$') ~= nil and not name:find('__', 1, true)
    if not ok_name then
      H.fail(at, 'named with letters, digits, "-" and single "_" (at most 32 characters, starting with a letter or digit)', name)
    end
    if type(s) ~= 'table' or (s.command == nil) == (s.url == nil) then
      H.fail(at, 'a table with either `command` (a stdio server) or `url` (a streamable HTTP server)', s)
    end
    local transport = s.command ~= nil and 'stdio' or 'http'
    for k, v in pairs(s) do
      local check = H.mcp_server_keys[k]
      if not check then
        H.fail(at .. '.' .. tostring(k), 'one of type, command, args, env, cwd, url, headers, allow, disabled, timeout_ms, sampling, sandbox', v)
      end
      if k == 'type' and H.MCP_TYPES[v] and H.MCP_TYPES[v] ~= transport then
        H.fail(at .. '.type', string.format("'%s' (the server has %s)", transport, transport == 'stdio' and 'a command' or 'a url'), v)
      end
      if check[3] and check[3] ~= transport then
        H.fail(at .. '.' .. k, string.format('absent (it is for %s servers; this one is %s)', check[3], transport), v)
      end
      if not check[1](v) then
        H.fail(at .. '.' .. k, check[2], v)
      end
    end
  end
end

--- Each agent of `acp.agents`: a valid name, a `command` (a string or a list), string `env` values.
H.check_acp_agents = function(agents)
  if type(agents) ~= 'table' then
    H.fail('acp.agents', 'a table of agents by name', agents)
  end
  for name, a in pairs(agents) do
    local at = 'acp.agents.' .. tostring(name)
    if type(name) ~= 'string' or #name > 32 or not name:match('^[%w][%w_.-]*$') or name == 'caboose' then
      H.fail(at, 'named with letters, digits, ".", "-" and "_" (at most 32 characters; not "caboose", the built-in agent)', name)
    end
    if type(a) ~= 'table' or not H.mcp_server_keys.command[1](a.command) then
      H.fail(at .. '.command', 'a non-empty string or a list of strings (the command and its arguments)', type(a) == 'table' and a.command or a)
    end
    for k, v in pairs(a) do
      if k == 'env' then
        if not H.is_dict_of_strings(v) then
          H.fail(at .. '.env', 'a table of strings by name', v)
        end
      elseif k == 'start_timeout_ms' then
        if not (type(v) == 'number' and v > 0 and v == math.floor(v)) then
          H.fail(at .. '.start_timeout_ms', 'a positive whole number', v)
        end
      elseif k ~= 'command' then
        H.fail(at .. '.' .. tostring(k), 'one of command, env, start_timeout_ms', v)
      end
    end
  end
end

--- Validates the merged configuration `cfg`; raises an error naming the first key that is wrong.
---@param cfg caboose.Config
function M.validate(cfg)
  local keys = vim.tbl_keys(H.checks)
  table.sort(keys)
  for _, key in ipairs(keys) do
    local ok, expected = H.checks[key](H.get(cfg, key))
    if not ok then
      H.fail(key, expected, H.get(cfg, key))
    end
  end
  H.check_mcp_servers(cfg.mcp.servers)
  H.check_providers(cfg)
  H.check_acp_agents(cfg.acp.agents)
  require('caboose.prompts').check_setup(cfg.prompts, H.fail)
end

return M
