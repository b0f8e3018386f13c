--- Choosing the model (issue 21): :CabooseModel, its picker and completion, and the streaming check.
--- The host lists each provider's models (its /models, cached, plus the configured ones); nothing here
--- waits for the host: the picker opens when the list arrives, completion uses the last list seen.
local M = {}
local H = {}

H.cache = nil ---@type { models: table[], current: table|nil }|nil

H.caboose = function()
  return require('caboose')
end

H.methods = function()
  return require('caboose.rpc').methods
end

--- The names completion offers before the host answered: the configured providers and their models.
H.configured = function()
  local cfg = H.caboose().config()
  local out = {}
  for name, p in pairs(cfg.providers or {}) do
    table.insert(out, name)
    if p.model then
      table.insert(out, name .. '/' .. p.model)
    end
    if type(p.models) == 'table' then
      if vim.islist(p.models) then
        for _, m in ipairs(p.models) do
          table.insert(out, name .. '/' .. m)
        end
      else
        for m in pairs(p.models) do
          table.insert(out, name .. '/' .. m)
        end
      end
    end
  end
  return out
end

--- Fetches the list (cached by the host unless `refresh`), then calls `on_list(list)`.
---@param on_list fun(list: { models: table[], providers: table[], current: table })
---@param refresh boolean|nil
function M.list(on_list, refresh)
  return H.caboose()._request(H.methods().model_list, { refresh = refresh or false }, function(err, res)
    if err or type(res) ~= 'table' then
      return
    end
    H.cache = res
    on_list(res)
  end)
end

H.window = function(n)
  n = tonumber(n)
  if not n then
    return ''
  end
  if n >= 1000000 then
    return string.format('  %.1fM ctx', n / 1000000)
  end
  return string.format('  %dk ctx', math.floor(n / 1000 + 0.5))
end

--- The picker: every provider's models through vim.ui.select; the choice applies to the next request.
--- `opts.on_choice(item|nil)` runs after the switch (the future /model command and tests use it).
---@param opts { refresh: boolean|nil, on_choice: fun(item: table|nil)|nil }|nil
function M.pick(opts)
  opts = opts or {}
  return M.list(function(res)
    local items = res.models or {}
    if #items == 0 then
      H.caboose()._notify('no models listed: check :checkhealth caboose', vim.log.levels.WARN)
      return
    end
    for _, p in ipairs(res.providers or {}) do
      if not p.ok and p.error then
        H.caboose()._notify(string.format('provider %s: model list unavailable (%s); its configured models are shown', p.provider, p.error), vim.log.levels.WARN)
      end
    end
    local current = res.current and res.current.label
    vim.ui.select(items, {
      prompt = 'Model' .. (current and (' (now ' .. current .. ')') or ''),
      kind = 'caboose_model',
      format_item = function(item)
        return (item.label == current and '● ' or '  ') .. item.label .. H.window(item.context_window)
      end,
    }, function(item)
      if not item then
        if opts.on_choice then
          opts.on_choice(nil)
        end
        return
      end
      M.set(item.provider .. '/' .. item.model, opts.on_choice and function()
        opts.on_choice(item)
      end or nil, item.provider)
    end)
  end, opts.refresh)
end

--- Sets the model of the next request: 'provider/model', 'model' or 'provider'. Returns at once.
---@param spec string
---@param on_done fun(res: table)|nil
---@param provider string|nil the provider, when known (a model name may itself contain '/')
function M.set(spec, on_done, provider)
  local params = { model = spec }
  if provider and spec:sub(1, #provider + 1) == provider .. '/' then
    params = { provider = provider, model = spec:sub(#provider + 2) }
  end
  return H.caboose()._request(H.methods().model_set, params, function(err, res)
    if err then
      return false
    end
    H.caboose()._notify('model: ' .. tostring(res.label), vim.log.levels.INFO)
    if H.cache then
      H.cache.current = res
    end
    require('caboose.chat').set_status(nil, nil, { model = res.label })
    vim.api.nvim_exec_autocmds('User', { pattern = 'CabooseModelChanged', modeline = false, data = res })
    if on_done then
      on_done(res)
    end
  end)
end

--- One tiny streamed request per configured provider: does it answer, and does it stream tool calls?
function M.check()
  H.caboose()._notify('checking each provider (one small request each)…', vim.log.levels.INFO)
  return H.caboose()._request(H.methods().model_check, {}, function(err, res)
    if err or type(res) ~= 'table' then
      return
    end
    local lines = {}
    for _, r in ipairs(res.results or {}) do
      local mark = (r.ok and r.tool_calls) and '✓' or (r.ok and '~' or '✗')
      table.insert(lines, string.format('%s %s/%s: %s', mark, tostring(r.provider), tostring(r.model), tostring(r.detail)))
    end
    M.last_check = res.results
    H.caboose()._notify(table.concat(lines, '\n'), vim.log.levels.INFO)
  end)
end

--- Completion of :CabooseModel: `check`, provider names and provider/model from the last list seen.
function M.complete(lead)
  if not H.cache then
    M.list(function() end) -- for the next <Tab>
  end
  local seen, out = {}, {}
  local function add(c)
    if not seen[c] and c:find(lead, 1, true) == 1 then
      seen[c] = true
      table.insert(out, c)
    end
  end
  add('check')
  for _, c in ipairs(H.configured()) do
    add(c)
  end
  for _, m in ipairs(H.cache and H.cache.models or {}) do
    add(m.provider .. '/' .. m.model)
  end
  table.sort(out)
  return out
end

--- :CabooseModel [provider/model | check]
function M.command(o)
  local arg = vim.trim(o.args or '')
  if arg == '' then
    return M.pick({ refresh = o.bang == true })
  end
  if arg == 'check' then
    return M.check()
  end
  return M.set(arg)
end

return M
