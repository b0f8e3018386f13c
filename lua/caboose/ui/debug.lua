--- :CabooseDebug: the chat's last request to the model (the exact JSON body, URL, headers) and a summary of
--- the raw response (status, headers of interest, finish reason, usage, timing, chunks, error body), in a
--- Markdown scratch buffer. The host masks every secret it knows (API keys, credential headers, values the
--- redactor holds, also inside messages) before anything reaches Neovim.
local M = {}
local H = {}

H.NAME = 'caboose://debug'

H.fence = function(out, lang, text)
  table.insert(out, '```' .. lang)
  vim.list_extend(out, vim.split(text, '\n', { plain = true }))
  table.insert(out, '```')
end

--- vim.json.encode writes `/` as `\/` (valid JSON, but not what went over the wire: `application\/json`).
H.encode = function(v)
  return (vim.json.encode(v):gsub('\\/', '/'))
end

H.json = function(v)
  local ok, s = pcall(H.encode, v)
  if not ok then
    return vim.inspect(v)
  end
  -- One entry a line (the headers): readable without a formatter.
  if type(v) == 'table' and next(v) ~= nil then
    local keys = vim.tbl_keys(v)
    table.sort(keys)
    local lines = {}
    for i, k in ipairs(keys) do
      table.insert(lines, string.format('  %s: %s%s', H.encode(k), H.encode(v[k]), i < #keys and ',' or ''))
    end
    return '{\n' .. table.concat(lines, '\n') .. '\n}'
  end
  return s == '[]' and '{}' or s
end

--- The buffer's lines for the host's answer (see src/host/debug-view.ts).
function M.lines(view)
  local req, res = view.request, view.response or {}
  local out = { '# caboose: last model request', '' }
  table.insert(out, string.format('`POST %s` — sent %s', req.url, req.started_at))
  vim.list_extend(out, { '', '## Request headers', '' })
  H.fence(out, 'json', H.json(req.headers or {}))
  vim.list_extend(out, { '', '## Request body (exact JSON sent; secrets masked)', '' })
  H.fence(out, 'json', req.body_json)
  vim.list_extend(out, { '', '## Response', '' })
  table.insert(out, '- status: ' .. (res.status and tostring(res.status) or 'none (no HTTP answer)') .. (res.done and '' or ' (still streaming)'))
  table.insert(out, '- finish reason: ' .. tostring(res.finish_reason or 'none'))
  local u = res.usage
  if u then
    local extra = {}
    if u.cachedTokens then
      table.insert(extra, 'cached ' .. u.cachedTokens)
    end
    if u.reasoningTokens then
      table.insert(extra, 'reasoning ' .. u.reasoningTokens)
    end
    table.insert(out, string.format('- usage: prompt %s, completion %s, total %s tokens%s', tostring(u.promptTokens), tostring(u.completionTokens), tostring(u.totalTokens), #extra > 0 and (' (' .. table.concat(extra, ', ') .. ')') or ''))
  else
    table.insert(out, '- usage: not reported')
  end
  table.insert(out, string.format('- timing: headers after %s ms, done after %s ms', tostring(res.headers_ms or '?'), tostring(res.duration_ms or '?')))
  table.insert(out, '- chunks: ' .. tostring(res.chunks or 0))
  if res.error then
    table.insert(out, string.format('- error (%s%s): %s', res.error.kind, res.error.status and (', ' .. res.error.status) or '', res.error.message))
  end
  if res.headers and next(res.headers) then
    vim.list_extend(out, { '', '### Response headers', '' })
    H.fence(out, 'json', H.json(res.headers))
  end
  if res.error and res.error.body_json then
    vim.list_extend(out, { '', '### Error body', '' })
    H.fence(out, 'json', res.error.body_json)
  end
  return out
end

--- Opens (or refreshes) the debug buffer in a split. Returns at once; the buffer opens when the host answers.
---@param on_done fun(buf: integer|nil)|nil
function M.open(on_done)
  local caboose = require('caboose')
  local done = on_done or function() end
  return caboose._request(require('caboose.rpc').methods.session_debug, vim.empty_dict(), function(err, view)
    if err or type(view) ~= 'table' then
      return done(nil)
    end
    if view.request == nil or view.request == vim.NIL then
      local msg = view.external and 'this chat runs an external agent: its model requests are its own (no debug view)' or 'no request to the model in this chat yet: send a message first'
      caboose._notify(msg, vim.log.levels.WARN)
      return done(nil)
    end
    local buf = vim.fn.bufnr(H.NAME)
    if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
      buf = vim.api.nvim_create_buf(false, true)
      vim.api.nvim_buf_set_name(buf, H.NAME)
      vim.bo[buf].bufhidden = 'wipe'
      vim.bo[buf].swapfile = false
    end
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.lines(view))
    vim.bo[buf].modifiable = false
    vim.bo[buf].modified = false
    vim.bo[buf].filetype = 'markdown'
    local win = vim.fn.bufwinid(buf)
    if win == -1 then
      vim.cmd('botright split')
      vim.api.nvim_win_set_buf(0, buf)
    else
      vim.api.nvim_set_current_win(win)
    end
    vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, nowait = true, desc = 'Caboose: close the debug view' })
    done(buf)
  end)
end

return M
