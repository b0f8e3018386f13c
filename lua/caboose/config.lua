--- Configuration: one annotated defaults table, merged with the user's and validated leaf by leaf.
local M = {}
local H = {}

---@class caboose.Config
---@field provider caboose.ProviderConfig|string Model endpoint (falls back to OPENAI_BASE_URL, OPENAI_API_KEY, CABOOSE_MODEL), or the name of the default one among `providers`.
---@field providers table<string, caboose.NamedProvider>|nil Several named providers; `:CabooseModel` switches between their models.
---@field mode 'plan'|'create'|'auto-edit'|'chug' Permission mode at start.
---@field step_limit integer Model calls per message before the agent stops.
---@field max_queue integer Messages queued while the agent is busy.
---@field unsaved_buffers 'edit_buffer'|'refuse' What the agent does with buffers holding unsaved changes.
---@field allow_readonly_writes boolean Let the agent change read-only files (no owner write bit, or not writable by you).
---@field hard_links 'refuse'|'in_place' A file with several hard links: refuse to change it, or write it in place (keeping the links).
---@field deny_globs string[] Paths the agent may never touch.
---@field secret_globs string[] Files that usually hold secrets: reading or searching one asks first, in every mode.
---@field trash_retention_days number How long deleted files stay restorable.
---@field bash_timeout_ms integer Default timeout of the bash tool.
---@field fetch_allow_hosts string[] Hosts fetch may reach although they are loopback, link-local or private.
---@field web_search table|nil `{ searxng_url = 'http://…' }` enables web_search.
---@field system_prompt string|nil Replaces the built-in system prompt (project rules are still appended).
---@field rules caboose.RulesOptions|false Project instruction files added to the system prompt; false: none.
---@field diagnostics caboose.DiagnosticsOptions What the agent's edits report of your language servers' diagnostics.
---@field data_dir string SQLite database and trash (never inside the project).
---@field host caboose.HostOptions How the Node host is started.
---@field chat caboose.ChatOptions Chat window.
---@field approval caboose.ApprovalOptions Approval float.
---@field log caboose.LogOptions Host log file.
---@field mcp caboose.McpOptions MCP servers whose tools the agent may call.
---@field acp caboose.AcpOptions External agents (Claude Code, Codex, Gemini CLI, opencode) :CabooseAgent can run.
---@field prompts table<string, { description: string|nil, text: string, mode: string|nil, model: string|nil }> The prompt library's setup() prompts, run as `/name` (:help caboose-prompts).

---@class caboose.AcpOptions
---@field agents table<string, { command: string|string[], env: table<string,string>|nil, start_timeout_ms: integer|nil }>
---@field sandbox caboose.SandboxOptions Where the agent's commands run (:help caboose-sandbox).

---@class caboose.ProviderConfig
---@field base_url string|nil
---@field api_key string|nil
---@field api_key_cmd string|string[]|nil Command printing the key (run by the host, never logged).
---@field model string|nil
---@field max_tokens integer|nil
---@field context_window integer|nil
---@field headers table<string,string>|nil Extra HTTP headers.
---@field timeout_ms integer|nil
---@field max_retries integer|nil Retries on 429/5xx/network errors (default 3).
---@field retry_base_delay_ms integer|nil First backoff delay (default 500 ms, doubled each retry).
---@field media ('image'|'audio')[]|nil What the model accepts besides text: images/audio tools return reach it.
---@field vision boolean|nil false: the model cannot read images; images you attach are not sent (the text is).

---@class caboose.NamedProvider: caboose.ProviderConfig
---@field api_key_env string|nil Name of the environment variable holding the key.
---@field models string[]|table<string, caboose.ModelOptions>|nil Models offered in the picker (besides the server's /models), or names → their options.

---@class caboose.ModelOptions
---@field context_window integer|nil
---@field max_tokens integer|nil
---@field reasoning_effort string|nil Sent only to this model ('low', 'medium', 'high', …).
---@field temperature number|nil Sent only to this model.

---@class caboose.RulesOptions
---@field files string[] Names or globs looked up in the working directory and each parent up to the repository root.
---@field max_bytes_per_file integer Bytes read from one file at most (the rest is left out, with a notice).
---@field max_total_bytes integer Bytes read from all files at most; files past it are skipped (and listed).

---@class caboose.DiagnosticsOptions
---@field enabled boolean After an agent edit to a loaded buffer with a language server attached, wait for its report and add the diagnostics the edit introduced or resolved to the tool result.
---@field wait_ms integer Longest wait for the language servers after an edit (ms).
---@field settle_ms integer Quiet time after a server's report before it counts as its answer (servers report in steps).

---@class caboose.HostOptions
---@field node string Node executable (20 or newer).
---@field transport 'job'|'remote' 'job': started with jobstart (default); 'remote': the classic remote-plugin host.
---@field prestart boolean Start the host while a :Caboose… command is being typed or the message area is entered.

---@class caboose.ChatOptions
---@field position 'right'|'left'|'bottom'|'top'
---@field size number Share of the screen (0 < size <= 1: of the columns for left/right, of the lines for top/bottom) or, above 1, columns/lines.
---@field min_size integer|nil Smallest size (default 40 columns, or 8 lines for top/bottom).
---@field max_size integer|nil Largest size (default 120 columns, or 30 lines for top/bottom).
---@field input_height integer Lines of the message area under the transcript.
---@field show_thinking boolean Show the model's reasoning as a folded "thinking" block (za opens it).

---@class caboose.ApprovalOptions
---@field grace_ms integer When a new request replaces the one in the focused float, its decision keys are ignored this long (ms), so a double press does not answer it unseen. 0 disables.

---@class caboose.McpOptions
---@field servers table<string, caboose.McpServer> By name (letters, digits, `-`, single `_`; the tools' prefix).
---@field start_timeout_ms integer How long a server may take to start before it is reported as failed.

---@class caboose.McpServer
---@field command string|nil A stdio server: the program (with `args`, `env`, `cwd`).
---@field args string[]|nil
---@field env table<string,string>|nil Added to a small safe environment (PATH, HOME, USER, SHELL, TERM, LOGNAME).
---@field cwd string|nil Default: Neovim's current directory when the host started.
---@field url string|nil A streamable HTTP server (with `headers`).
---@field headers table<string,string>|nil
---@field allow boolean|string[]|nil true: its tools run without asking; a list: those tools. Default: they ask.
---@field disabled boolean|nil Listed, never started.
---@field timeout_ms integer|nil Per tool call (default 60000).

---@class caboose.LogOptions
---@field level 'debug'|'info'|'warn'|'error'|'off'
---@field file string

---@class caboose.SandboxOptions
---@field mode? 'workspace-write'|'read-only'|'off' nil: workspace-write where a sandbox is available.
---@field network { allow: boolean|string[] } Hosts commands may reach (true: all).
---@field deny_read string[] More paths commands may not read (~ is your home folder).
---@field writable string[] More folders commands may write (e.g. '/tmp').

---@type caboose.Config
local defaults = {
  provider = {},
  mode = 'create',
  step_limit = 50,
  max_queue = 3,
  unsaved_buffers = 'edit_buffer',
  allow_readonly_writes = false,
  hard_links = 'refuse',
  deny_globs = { '.git/**' },
  -- Files that usually hold secrets: reading or searching one asks the user first, in every mode.
  secret_globs = { '.env*', '*.pem', '*.key', 'id_*', '.npmrc', '.netrc', '.pypirc', '.pgpass', '.git-credentials', '*.p12', '*.pfx' },
  trash_retention_days = 30,
  bash_timeout_ms = 120000,
  fetch_allow_hosts = {},
  web_search = nil,
  system_prompt = nil,
  rules = {
    files = { 'AGENTS.md', 'CLAUDE.md', '.github/copilot-instructions.md', '.cursor/rules/*.mdc' },
    max_bytes_per_file = 32768,
    max_total_bytes = 65536,
  },
  diagnostics = { enabled = true, wait_ms = 2000, settle_ms = 300 },
  data_dir = vim.fn.stdpath('data') .. '/caboose',
  host = { node = 'node', transport = 'job', prestart = true },
  chat = {
    position = 'right', size = 0.4, min_size = nil, max_size = nil, input_height = 5, show_thinking = true,
    -- Transcript keys of issue 22 ("" disables one): regenerate the last reply, edit-and-resend the message under the cursor.
    keys = { regenerate = 'gR', edit = 'gI' },
  },
  approval = { grace_ms = 400, style = 'inline' },
  edit = { keymap = nil }, -- e.g. '<leader>ce' in Visual mode for <Plug>(CabooseEdit)
  -- User CabooseProgress events; shown in fidget.nvim when it is installed (false: not).
  progress = { fidget = true },
  review = {
    keys = { next_hunk = ']c', prev_hunk = '[c', accept = 'ga', reject = 'gr', accept_all = 'gA', reject_all = 'gR', quit = 'q' },
  },
  log = { level = 'info', file = vim.fn.stdpath('log') .. '/caboose.log' },
  mcp = { servers = {}, start_timeout_ms = 10000 },
  acp = { agents = {} },
  sandbox = { mode = nil, network = { allow = {} }, deny_read = {}, writable = {} },
  prompts = {},
}

M.defaults = vim.deepcopy(defaults)

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
      return false, 'a table { regenerate = key, edit = key }'
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
      if type(lhs) ~= 'string' then
        return false, string.format('strings (review.keys.%s is a %s; "" disables a key)', tostring(k), type(lhs))
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

--- Merges `opts` over the defaults and validates every known key. Errors name the dotted key.
---@param opts table|nil
---@return caboose.Config
--- Provider settings are also accepted at the top level (`setup({ model = '…' })`).
H.provider_keys = { 'base_url', 'api_key', 'api_key_cmd', 'model', 'max_tokens', 'context_window', 'headers', 'timeout_ms', 'max_retries', 'retry_base_delay_ms' }

H.normalize = function(opts)
  opts = vim.deepcopy(opts or {})
  for _, k in ipairs(H.provider_keys) do
    if opts[k] ~= nil and type(opts.provider) ~= 'string' then
      opts.provider = opts.provider or {}
      if opts.provider[k] == nil then
        opts.provider[k] = opts[k]
      end
      opts[k] = nil
    end
  end
  -- rules = true means the defaults.
  if opts.rules == true then
    opts.rules = nil
  end
  -- web_search = 'http://…' or { url = '…' } mean the SearXNG URL.
  if type(opts.web_search) == 'string' then
    opts.web_search = { searxng_url = opts.web_search }
  elseif type(opts.web_search) == 'table' and opts.web_search.searxng_url == nil and opts.web_search.url ~= nil then
    opts.web_search = { searxng_url = opts.web_search.url }
  end
  for k in pairs(opts) do
    if defaults[k] == nil and k ~= 'web_search' and k ~= 'system_prompt' and k ~= 'providers' then
      vim.notify(string.format('(caboose) setup(): unknown option `%s` (ignored)', k), vim.log.levels.WARN)
    end
  end
  return opts
end

function M.build(opts)
  if opts ~= nil and type(opts) ~= 'table' then
    error('(caboose) setup(opts): opts must be a table', 0)
  end
  local cfg = vim.tbl_deep_extend('force', vim.deepcopy(defaults), H.normalize(opts))
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
  return cfg
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
