--- Where prompts come from (|caboose-prompts|): the project's and the user's prompt folders (files parsed
--- once per change), setup() and the built-ins, merged by precedence with what overrides what.
local M = {}
local H = {}
local P = require('caboose.prompts.parse')

local caboose = function()
  return require('caboose')
end

-- Loading -------------------------------------------------------------------------------------------

--- The prompt folders: { project = …, user = … }.
function M.dirs()
  return {
    project = vim.fs.joinpath(vim.fn.getcwd(), '.caboose', 'prompts'),
    user = vim.fs.joinpath(vim.fn.stdpath('config'), 'caboose', 'prompts'),
  }
end

--- A prompt file larger than this is refused (a prompt is a message, not a data set).
M.MAX_BYTES = 256 * 1024

function M.read(path)
  local fd = io.open(path, 'rb')
  if not fd then
    return nil
  end
  local content = fd:read('*a')
  fd:close()
  return content
end

H.cache = {} -- path -> { key = 'mtime:size', entry }

--- One prompt file as an entry (parsed again only when it changed).
H.file_entry = function(path, source)
  local stat = vim.uv.fs_stat(path)
  if not stat or stat.type ~= 'file' then
    return nil
  end
  local key = string.format('%d.%d:%d', stat.mtime.sec, stat.mtime.nsec or 0, stat.size)
  local hit = H.cache[path]
  if hit and hit.key == key then
    return vim.deepcopy(hit.entry)
  end
  local name = vim.fn.fnamemodify(path, ':t:r')
  local entry = { name = name, source = source, path = path, description = '' }
  local content = stat.size <= M.MAX_BYTES and M.read(path) or nil
  if stat.size > M.MAX_BYTES then
    entry.error = string.format('larger than %d bytes', M.MAX_BYTES)
  elseif not content then
    entry.error = 'cannot read ' .. path
  elseif not name:match(P.NAME_PATTERN) then
    entry.error = 'a prompt file is named with letters, digits, - and _ (it is run as /name)'
  else
    local p, err = P.parse(content)
    if p then
      entry = vim.tbl_extend('force', entry, p)
      entry.warnings = err
    else
      entry.error = err
    end
  end
  H.cache[path] = { key = key, entry = entry }
  return vim.deepcopy(entry)
end

H.dir_entries = function(dir, source)
  local out = {}
  if vim.fn.isdirectory(dir) == 0 then
    return out
  end
  for name, type in vim.fs.dir(dir) do
    if name:match('%.md$') and (type == 'file' or type == 'link') then
      local e = H.file_entry(vim.fs.joinpath(dir, name), source)
      if e then
        table.insert(out, e)
      end
    end
  end
  return out
end

H.table_entries = function(tbl, source)
  local out = {}
  for name, p in pairs(tbl or {}) do
    local entry = { name = name, source = source, description = '' }
    local ok, err = P.check(type(p) == 'table' and p or {})
    if ok then
      entry = vim.tbl_extend('force', entry, ok)
    else
      entry.error = err
    end
    table.insert(out, entry)
  end
  return out
end

--- Every prompt of every source, sorted by name, then precedence. Each: `{ name, description, text, mode,
--- model, source, path?, error?, warnings?, overrides = {sources}, shadowed_by = source|nil,
--- command = true when a slash command of that name runs instead of `/name` }`.
function M.all()
  local dirs = M.dirs()
  local by_source = {
    project = H.dir_entries(dirs.project, 'project'),
    user = H.dir_entries(dirs.user, 'user'),
    setup = H.table_entries(caboose().config().prompts, 'setup'),
    builtin = H.table_entries(require('caboose.prompts.builtin'), 'builtin'),
  }
  if dirs.project == dirs.user then
    by_source.project = {} -- working in the config folder: its prompts are the user's
  end
  local rank, all = {}, {}
  for i, s in ipairs(P.SOURCES) do
    rank[s] = i
    vim.list_extend(all, by_source[s])
  end
  table.sort(all, function(a, b)
    if a.name ~= b.name then
      return a.name < b.name
    end
    return rank[a.source] < rank[b.source]
  end)
  local insertables = require('caboose.insertables')
  local winner = {}
  for _, e in ipairs(all) do
    e.overrides = {}
    e.command = insertables.command(e.name) ~= nil
    if winner[e.name] then
      e.shadowed_by = winner[e.name].source
      table.insert(winner[e.name].overrides, e.source)
    else
      winner[e.name] = e
    end
  end
  return all
end

--- The prompts `/name` runs (one per name, the highest precedence), sorted by name.
function M.list()
  return vim.tbl_filter(function(e)
    return not e.shadowed_by
  end, M.all())
end

--- The prompt `/name` runs, or nil.
function M.get(name)
  for _, e in ipairs(M.all()) do
    if e.name == name and not e.shadowed_by then
      return e
    end
  end
end

--- Where a prompt comes from, for lists: 'project .caboose/prompts/x.md', 'built-in', …
function M.source_text(e)
  local s = P.SOURCE_LABEL[e.source] or e.source
  if e.path then
    s = s .. ' ' .. vim.fn.fnamemodify(e.path, ':~:.')
  end
  return s
end

return M
