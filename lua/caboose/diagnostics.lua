--- Diagnostics of loaded buffers (vim.diagnostic) for the host: the `diagnostics` tool's listing and the
--- report after an agent edit (src/host/nvim-diagnostics.ts is the only caller). Every function is one
--- RPC round trip and returns at once: after an edit the host polls a watch, Neovim never waits.
local M = {}
local H = {}

H.SEVERITY = { 'error', 'warning', 'info', 'hint' }
H.RANK = { error = 1, warning = 2, info = 3, hint = 4 }
--- Notifications telling a server about a buffer's new text (`LspNotify` reports them once sent).
H.SYNC = { ['textDocument/didChange'] = true, ['textDocument/didOpen'] = true, ['textDocument/didSave'] = true }
--- A watch the host stopped polling (it died, or forgot one) is dropped after this long.
H.STALE_MS = 120000

--- typescript-language-server (and vtsls) publish nothing for a file that had no diagnostics and still has
--- none: silence is no answer. They offer tsserver's own checks as a command; for a buffer such a server
--- saw clean, the watch asks it directly once the new text was sent: three empty lists are its answer.
H.PROBE = 'typescript.tsserverRequest'
H.PROBE_CHECKS = { 'syntacticDiagnosticsSync', 'semanticDiagnosticsSync', 'suggestionDiagnosticsSync' }

--- Most other loaded buffers (not written) whose diagnostics a watch compares.
H.MAX_OTHERS = 100

H.watches = {} ---@type table<integer, table>
H.next_token = 0
H.group = nil ---@type integer|nil

-- Helpers ====================================================================

H.now = function()
  return vim.uv.hrtime() / 1e6
end

H.get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients

--- Names of the language-server clients attached to `b`.
H.clients = function(b)
  local names = {}
  for _, c in ipairs(H.get_clients({ bufnr = b })) do
    names[#names + 1] = c.name
  end
  table.sort(names)
  return names
end

--- The file of buffer `b` (realpath when it exists), or nil for a nameless or special buffer.
H.path = function(b)
  if not vim.api.nvim_buf_is_loaded(b) or vim.bo[b].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(b)
  if name == '' then
    return nil
  end
  return vim.uv.fs_realpath(name) or name
end

--- 0-based byte column → 1-based character column on 0-based line `lnum` (lines cached in `cache`).
H.charcol = function(b, lnum, col, cache)
  local line = cache[lnum]
  if line == nil then
    line = vim.api.nvim_buf_get_lines(b, lnum, lnum + 1, false)[1] or ''
    cache[lnum] = line
  end
  if col <= 0 then
    return 1
  end
  if col >= #line then
    return vim.fn.strchars(line) + (col - #line) + 1
  end
  return vim.fn.strchars(line:sub(1, col)) + 1
end

--- One diagnostic as plain data: 1-based lines, 1-based character columns, exclusive end.
H.entry = function(b, d, cache)
  local end_lnum = d.end_lnum or d.lnum
  local end_col = d.end_col or d.col
  local e = {
    severity = H.SEVERITY[d.severity] or 'error',
    line = d.lnum + 1,
    col = H.charcol(b, d.lnum, d.col or 0, cache),
    end_line = end_lnum + 1,
    end_col = H.charcol(b, end_lnum, end_col, cache),
    message = type(d.message) == 'string' and d.message or tostring(d.message),
  }
  if type(d.source) == 'string' then
    e.source = d.source
  end
  if type(d.code) == 'string' or type(d.code) == 'number' then
    e.code = d.code
  end
  return e
end

--- Buffer `b` as the host sees it: counts per severity, and up to `limit` diagnostics at or above
--- `min` (1 = errors only … 4 = all), most severe first.
H.record = function(b, path, min, limit)
  local counts = { error = 0, warning = 0, info = 0, hint = 0 }
  local kept = {}
  for _, d in ipairs(vim.diagnostic.get(b)) do
    local sev = H.SEVERITY[d.severity] or 'error'
    counts[sev] = counts[sev] + 1
    if (d.severity or 1) <= min then
      kept[#kept + 1] = d
    end
  end
  table.sort(kept, function(x, y)
    if x.severity ~= y.severity then
      return (x.severity or 1) < (y.severity or 1)
    end
    if x.lnum ~= y.lnum then
      return x.lnum < y.lnum
    end
    return (x.col or 0) < (y.col or 0)
  end)
  local cache = {}
  local diagnostics = {}
  for i = 1, math.min(#kept, limit) do
    diagnostics[i] = H.entry(b, kept[i], cache)
  end
  return {
    path = path,
    modified = vim.bo[b].modified,
    clients = H.clients(b),
    counts = counts,
    matched = #kept,
    diagnostics = diagnostics,
  }
end

H.under = function(path, root)
  return path == root or path:sub(1, #root + 1) == root .. '/'
end

-- Watches ====================================================================

H.watched = function(fn)
  for _, w in pairs(H.watches) do
    for b, s in pairs(w.bufs) do
      fn(b, s)
    end
  end
end

--- `client:request` (0.11+) or `client.request` (0.10).
H.request = function(c, method, params, handler, b)
  if vim.fn.has('nvim-0.11') == 1 then
    return c:request(method, params, handler, b)
  end
  return c.request(method, params, handler, b)
end

--- Whether client `c` runs tsserver's checks on request (see H.PROBE).
H.can_probe = function(c)
  local cmds = vim.tbl_get(c.server_capabilities or {}, 'executeCommandProvider', 'commands')
  return type(cmds) == 'table' and vim.tbl_contains(cmds, H.PROBE)
end

--- Whether every reply of a probe is a successful tsserver response with an empty list.
H.probe_clean = function(replies)
  for _, r in ipairs(replies) do
    if type(r) ~= 'table' or r.success ~= true or type(r.body) ~= 'table' or next(r.body) ~= nil then
      return false
    end
  end
  return true
end

--- Asks client `c` for its checks of buffer `b`'s current text; all clean counts as its report.
H.probe = function(b, s, c)
  local tick = vim.api.nvim_buf_get_changedtick(b)
  local file = vim.uri_to_fname(s.uri)
  local replies, pending = {}, #H.PROBE_CHECKS
  for i, check in ipairs(H.PROBE_CHECKS) do
    local params = { command = H.PROBE, arguments = { check, { file = file } } }
    H.request(c, 'workspace/executeCommand', params, function(err, result)
      replies[i] = err == nil and result or false
      pending = pending - 1
      if pending == 0 and H.probe_clean(replies) and vim.api.nvim_buf_is_valid(b) and vim.api.nvim_buf_get_changedtick(b) == tick then
        s.reports = s.reports + 1
        s.last = H.now()
      end
    end, b)
  end
end

--- A server was sent a watched buffer's new text: its next report is about that text.
H.on_notify = function(ev)
  local data = ev.data or {}
  if not H.SYNC[data.method] then
    return
  end
  local uri = vim.tbl_get(data, 'params', 'textDocument', 'uri')
  H.watched(function(b, s)
    if s.uri == uri and vim.api.nvim_buf_is_valid(b) and vim.api.nvim_buf_get_changedtick(b) ~= s.tick then
      s.sent = s.sent or H.now()
      local id = data.client_id
      if id and s.probe[id] then
        s.probe[id] = nil
        local c = vim.lsp.get_client_by_id(id)
        if c then
          vim.schedule(function()
            pcall(H.probe, b, s, c)
          end)
        end
      end
    end
  end)
end

H.on_changed = function(ev)
  H.watched(function(b, s)
    if b == ev.buf and s.sent then
      s.reports = s.reports + 1
      s.last = H.now()
    end
  end)
  -- Another buffer's diagnostics changed after the write reached a server: the watch waits for quiet.
  for _, w in pairs(H.watches) do
    if w.others and w.others[ev.buf] then
      for _, s in pairs(w.bufs) do
        if s.sent then
          w.others_last = H.now()
          break
        end
      end
    end
  end
end

H.arm = function()
  if H.group then
    return
  end
  H.group = vim.api.nvim_create_augroup('CabooseDiagnostics', { clear = true })
  -- Never an error message for the user from bookkeeping: a failure only makes the host wait longer.
  vim.api.nvim_create_autocmd('LspNotify', {
    group = H.group,
    callback = function(ev)
      pcall(H.on_notify, ev)
    end,
  })
  vim.api.nvim_create_autocmd('DiagnosticChanged', {
    group = H.group,
    callback = function(ev)
      pcall(H.on_changed, ev)
    end,
  })
end

H.disarm_if_idle = function()
  if next(H.watches) == nil and H.group then
    pcall(vim.api.nvim_del_augroup_by_id, H.group)
    H.group = nil
  end
end

H.drop_stale = function()
  local now = H.now()
  for token, w in pairs(H.watches) do
    if now - w.started > H.STALE_MS then
      H.watches[token] = nil
    end
  end
end

--- How the buffer's lines moved since the watch: vim.diff indices { start, count, new start, new count }.
H.hunks = function(b, old_lines)
  local new_lines = vim.api.nvim_buf_get_lines(b, 0, -1, false)
  local old = table.concat(old_lines, '\n') .. '\n'
  local new = table.concat(new_lines, '\n') .. '\n'
  if old == new then
    return {}
  end
  local diff = (vim.text and vim.text.diff) or vim.diff
  return diff(old, new, { result_type = 'indices', algorithm = 'histogram' }) or {}
end

H.settled = function(b, s, now, settle_ms)
  if not vim.api.nvim_buf_is_loaded(b) or vim.api.nvim_buf_get_changedtick(b) == s.tick then
    return true
  end
  return s.reports > 0 and now - s.last >= settle_ms
end

-- Public =====================================================================

--- The loaded file buffers among `q.paths` (absolute), or every one under `q.root`; see H.record.
---@param q { paths: string[]|nil, root: string, min_severity: string, limit: integer }
function M.list(q)
  local min = H.RANK[q.min_severity] or 4
  local out = {}
  if type(q.paths) == 'table' then
    local find = require('caboose.buffers').find
    for _, p in ipairs(q.paths) do
      local b = find(p)
      if b then
        out[#out + 1] = H.record(b, p, min, q.limit)
      end
    end
    return out
  end
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local p = H.path(b)
    if p and H.under(p, q.root) then
      out[#out + 1] = H.record(b, p, min, q.limit)
    end
  end
  return out
end

--- Before a write: watches the loaded buffers among `paths` that a language server is attached to.
--- Returns `{ token, buffers }` (their diagnostics now), or `{ buffers = {} }` when there is none.
--- With `root`, the other loaded file buffers under it are watched too (`others`: their diagnostics
--- now), since an edit to one file can change another's.
---@param paths string[]
---@param limit integer
---@param root string|nil
function M.watch(paths, limit, root)
  H.drop_stale()
  local find = require('caboose.buffers').find
  local w = { started = H.now(), limit = limit, bufs = {} }
  local before = {}
  for _, p in ipairs(paths) do
    local b = find(p)
    local clients = b and H.get_clients({ bufnr = b }) or {}
    if b and not w.bufs[b] and #clients > 0 then
      -- The clients to ask after the write: those that can be asked and hold nothing for the buffer now.
      local probe = {}
      for _, c in ipairs(clients) do
        if H.can_probe(c) and #vim.diagnostic.get(b, { namespace = vim.lsp.diagnostic.get_namespace(c.id, false) }) == 0 then
          probe[c.id] = true
        end
      end
      w.bufs[b] = {
        path = p,
        tick = vim.api.nvim_buf_get_changedtick(b),
        uri = vim.uri_from_bufnr(b),
        lines = vim.api.nvim_buf_get_lines(b, 0, -1, false),
        reports = 0,
        probe = probe,
      }
      before[#before + 1] = H.record(b, p, 4, limit)
    end
  end
  if #before == 0 then
    H.disarm_if_idle()
    return { buffers = {} }
  end
  local others
  if type(root) == 'string' then
    others = {}
    w.others = {}
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if #others >= H.MAX_OTHERS then
        break
      end
      local p = not w.bufs[b] and H.path(b) or nil
      if p and H.under(p, root) then
        w.others[b] = p
        others[#others + 1] = H.record(b, p, 4, limit)
      end
    end
  end
  H.next_token = H.next_token + 1
  H.watches[H.next_token] = w
  H.arm()
  return { token = H.next_token, buffers = before, others = others }
end

--- `{ done = false }` while a watched buffer changed and its servers have not answered (and been quiet
--- for `settle_ms`); else, or with `final`, ends the watch and returns each buffer's diagnostics now.
---@param token integer
---@param settle_ms number
---@param final boolean
function M.poll(token, settle_ms, final)
  local w = H.watches[token]
  if not w then
    return { done = true, buffers = {} }
  end
  local now = H.now()
  if not final then
    for b, s in pairs(w.bufs) do
      if not H.settled(b, s, now, settle_ms) then
        return { done = false }
      end
    end
    if w.others_last and now - w.others_last < settle_ms then
      return { done = false }
    end
  end
  H.watches[token] = nil
  H.disarm_if_idle()
  local out = {}
  for b, s in pairs(w.bufs) do
    if vim.api.nvim_buf_is_loaded(b) then
      local r = H.record(b, s.path, 4, w.limit)
      r.changed = vim.api.nvim_buf_get_changedtick(b) ~= s.tick
      r.answered = s.reports > 0
      r.hunks = r.changed and H.hunks(b, s.lines) or {}
      out[#out + 1] = r
    end
  end
  local others
  if w.others then
    others = {}
    for b, p in pairs(w.others) do
      if vim.api.nvim_buf_is_loaded(b) then
        others[#others + 1] = H.record(b, p, 4, w.limit)
      end
    end
  end
  return { done = true, buffers = out, others = others }
end

---@param token integer
function M.cancel(token)
  H.watches[token] = nil
  H.disarm_if_idle()
end

return M
