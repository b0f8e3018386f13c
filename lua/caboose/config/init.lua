--- Configuration: one annotated defaults table, merged with the user's and validated leaf by leaf.
---
--- The parts: caboose.config.defaults (the annotated defaults), caboose.config.checks (the validation),
--- caboose.config.host (the host's part). This module is their public API.
local M = {}
local H = {}

local defaults = require('caboose.config.defaults')

M.defaults = vim.deepcopy(defaults)

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

--- Merges `opts` over the defaults and validates every known key. Errors name the dotted key.
---@param opts table|nil
---@return caboose.Config
function M.build(opts)
  if opts ~= nil and type(opts) ~= 'table' then
    error('(caboose) setup(opts): opts must be a table', 0)
  end
  local cfg = vim.tbl_deep_extend('force', vim.deepcopy(defaults), H.normalize(opts))
  require('caboose.config.checks').validate(cfg)
  return cfg
end

--- The part of the config the host owns (model, tools, approvals, store).
M.host_part = require('caboose.config.host').host_part

return M
