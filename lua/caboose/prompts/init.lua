--- The prompt library (|caboose-prompts|): named prompts run as `/name` in the message area, `:Caboose /name …`
--- (with a range: on the selection) and :CaboosePrompts. They come from, first found wins:
---   1. the project:      `.caboose/prompts/<name>.md` under the working directory (untrusted: asked first)
---   2. the user:         `<stdpath config>/caboose/prompts/<name>.md`
---   3. setup():          `setup({ prompts = { name = { description, text, mode, model } } })`
---   4. built-in:         explain, fix, tests, review, commit (caboose.prompts.builtin)
--- A prompt file is Markdown with optional front matter (description, mode, model). Placeholders in the text:
--- `{{selection}}`, `{{buffer}}`, `{{code}}` attach what they name (and stand in the text as a short
--- reference), `{{file}}` and `{{filetype}}` are replaced by the buffer's path and filetype, `{{input}}` and
--- `{{input:Question}}` ask with vim.ui.input. The expanded text is then sent like a typed message, so
--- `#gitdiff`, `#diagnostics`, `@path` and attach commands in a prompt work as they do in the chat.
local M = {}
local H = {}

M.MODES = { 'plan', 'create', 'auto-edit', 'chug' }
--- Sources, highest precedence first.
M.SOURCES = { 'project', 'user', 'setup', 'builtin' }
M.SOURCE_LABEL = { project = 'project', user = 'user', setup = 'setup()', builtin = 'built-in' }
--- What `/name` can be (the chat's slash-command syntax).
M.NAME_PATTERN = '^[%w_-]+$'
--- The front matter keys.
M.FIELDS = { description = true, mode = true, model = true }

local caboose = function()
  return require('caboose')
end

-- Parsing -------------------------------------------------------------------------------------------

H.unquote = function(value)
  local dq = value:match('^"(.*)"$')
  if dq then
    return (dq:gsub('\\(.)', { ['"'] = '"', ['\\'] = '\\', n = '\n', t = '\t' }))
  end
  local sq = value:match("^'(.*)'$")
  if sq then
    return (sq:gsub("''", "'"))
  end
  -- A ` # comment` after a plain value.
  return (value:gsub('%s+#.*$', ''))
end

--- Checks one prompt's fields; returns the normalized prompt or nil and what is wrong.
---@return { description: string, text: string, mode: string|nil, model: string|nil }|nil, string|nil
function M.check(p)
  if type(p.text) ~= 'string' or vim.trim(p.text) == '' then
    return nil, 'the prompt has no text'
  end
  if p.description ~= nil and type(p.description) ~= 'string' then
    return nil, '`description` should be a string'
  end
  local mode = p.mode
  if mode == '' then
    mode = nil
  end
  if mode ~= nil and not vim.tbl_contains(M.MODES, mode) then
    return nil, string.format('`mode` should be one of %s, got %s', table.concat(M.MODES, ', '), vim.inspect(mode))
  end
  local model = p.model
  if model == '' then
    model = nil
  end
  if model ~= nil and type(model) ~= 'string' then
    return nil, '`model` should be a string (provider/model)'
  end
  return { description = p.description or '', text = p.text, mode = mode, model = model }
end

--- Parses a prompt file: optional front matter between `---` lines (`key: value`, quotes optional, `#`
--- comments), then the prompt text.
---@param content string
---@return { description: string, text: string, mode: string|nil, model: string|nil }|nil prompt
---@return string|string[] error (when nil) or warnings
function M.parse(content)
  content = content:gsub('^\239\187\191', ''):gsub('\r\n', '\n')
  local lines = vim.split(content, '\n', { plain = true })
  local meta, warnings, start = {}, {}, 1
  if lines[1] and lines[1]:match('^%-%-%-%s*$') then
    local close
    for i = 2, #lines do
      if lines[i]:match('^%-%-%-%s*$') or lines[i]:match('^%.%.%.%s*$') then
        close = i
        break
      end
    end
    if not close then
      return nil, 'the front matter is not closed (a line `---` ends it)'
    end
    for i = 2, close - 1 do
      local l = lines[i]
      if not (l:match('^%s*$') or l:match('^%s*#')) then
        local key, value = l:match('^%s*([%w_-]+)%s*:%s*(.-)%s*$')
        if not key then
          return nil, string.format('front matter line %d is not `key: value`: %s', i, l)
        end
        if M.FIELDS[key] then
          meta[key] = H.unquote(value)
        else
          table.insert(warnings, string.format('unknown front matter key `%s` (ignored; known: description, mode, model)', key))
        end
      end
    end
    start = close + 1
  end
  meta.text = vim.trim(table.concat(lines, '\n', start))
  local p, err = M.check(meta)
  if not p then
    return nil, err
  end
  return p, warnings
end

-- Placeholders --------------------------------------------------------------------------------------

M.PLACEHOLDERS = { selection = true, buffer = true, code = true, file = true, filetype = true, input = true }

--- The placeholder inside `{{…}}`: its name and, for `input:Question`, the question; nil when unknown.
H.placeholder = function(inner)
  local q = inner:match('^%s*input%s*:%s*(.-)%s*$')
  if q then
    return 'input', q
  end
  local name = inner:match('^%s*([%a_]+)%s*$')
  if name and M.PLACEHOLDERS[name] then
    return name, name == 'input' and '' or nil
  end
end

--- The placeholders `text` uses: `names` (a set) and `inputs` (the questions, in order, once each; '' is
--- the plain `{{input}}`).
---@return { names: table<string, boolean>, inputs: string[] }
function M.placeholders(text)
  local out = { names = {}, inputs = {} }
  local seen = {}
  for inner in text:gmatch('{{(.-)}}') do
    local name, q = H.placeholder(inner)
    if name then
      out.names[name] = true
      if name == 'input' and not seen[q] then
        seen[q] = true
        table.insert(out.inputs, q)
      end
    end
  end
  return out
end

--- Replaces the placeholders in one pass (an answer that contains `{{…}}` stays as typed). `values`: one
--- string per placeholder name, and `input = { [question] = answer }`. Unknown or missing ones stay.
function M.substitute(text, values)
  return (text:gsub('{{(.-)}}', function(inner)
    local name, q = H.placeholder(inner)
    if not name then
      return nil
    end
    local v
    if name == 'input' then
      v = (values.input or {})[q]
    else
      v = values[name]
    end
    return v
  end))
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

H.read = function(path)
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
  local content = stat.size <= M.MAX_BYTES and H.read(path) or nil
  if stat.size > M.MAX_BYTES then
    entry.error = string.format('larger than %d bytes', M.MAX_BYTES)
  elseif not content then
    entry.error = 'cannot read ' .. path
  elseif not name:match(M.NAME_PATTERN) then
    entry.error = 'a prompt file is named with letters, digits, - and _ (it is run as /name)'
  else
    local p, err = M.parse(content)
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
    local ok, err = M.check(type(p) == 'table' and p or {})
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
  for i, s in ipairs(M.SOURCES) do
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
  local s = M.SOURCE_LABEL[e.source] or e.source
  if e.path then
    s = s .. ' ' .. vim.fn.fnamemodify(e.path, ':~:.')
  end
  return s
end

-- Running -------------------------------------------------------------------------------------------

H.notify = function(msg, level)
  caboose()._notify(msg, level)
end

--- The context the placeholders attach, and the text each stands for. Calls `done(values, items)` or, when
--- something is missing (no buffer, no selection), says so and `done(nil)`.
H.gather = function(e, names, opts, done)
  local ctx = require('caboose.context')
  local values, items = {}, {}
  local range
  for _, it in ipairs(opts.context or {}) do
    if it.kind == 'selection' then
      range = it
      break
    end
  end
  local needs_buf = names.buffer or names.file or names.filetype or (names.code and not range)
  local buf = ctx.origin_buffer(opts.origin or vim.api.nvim_get_current_buf())
  if buf and vim.api.nvim_buf_get_name(buf) == '' and vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == '' then
    buf = nil -- the empty [No Name] buffer Neovim starts with is nothing to send
  end
  if needs_buf and not buf then
    H.notify(string.format('/%s needs a file buffer (open one, then run it again): nothing sent', e.name), vim.log.levels.WARN)
    return done(nil)
  end
  local display = function(path)
    return path ~= '' and path or '[No Name]'
  end
  local sel_ref = function(it)
    return string.format('the selection from %s (lines %d-%d, attached below)', display(it.path), it.start_line, it.end_line)
  end
  local buf_item
  local buffer_ref = function()
    if not buf_item then
      buf_item = ctx.buffer(buf)
      table.insert(items, buf_item)
    end
    return buf_item.path ~= '' and string.format('the file %s (attached below)', buf_item.path) or 'the buffer [No Name] (attached below)'
  end
  if names.selection then
    local sel = range
    if not sel then
      -- Not run on a range: the last visual selection of the buffer (as #selection).
      sel = require('caboose.insertables.variables').selection(opts.origin)[1]
      if not sel then
        H.notify(string.format('/%s needs a selection (select lines, then :\'<,\'>Caboose /%s): nothing sent', e.name, e.name), vim.log.levels.WARN)
        return done(nil)
      end
      table.insert(items, sel)
    end
    values.selection = sel_ref(sel)
  end
  if names.code then
    values.code = range and sel_ref(range) or buffer_ref()
  end
  if names.buffer then
    values.buffer = buffer_ref()
  end
  if buf then
    local path = vim.api.nvim_buf_get_name(buf)
    values.file = display(path ~= '' and vim.fn.fnamemodify(path, ':.') or '')
    values.filetype = vim.bo[buf].filetype ~= '' and vim.bo[buf].filetype or 'text'
  end
  done(values, items)
end

--- Asks each `{{input}}` question in turn; `done(answers)`, or `done(nil)` when one is cancelled. `typed`
--- (the text after `/name`) answers the first one.
H.ask_inputs = function(e, questions, typed, done)
  local answers, i = {}, 0
  local function next_one()
    i = i + 1
    local q = questions[i]
    if q == nil then
      return done(answers)
    end
    if i == 1 and typed ~= '' then
      answers[q] = typed
      return next_one()
    end
    vim.ui.input({ prompt = (q ~= '' and q or ('/' .. e.name)) .. ': ' }, function(answer)
      if answer == nil then
        return done(nil)
      end
      answers[q] = answer
      next_one()
    end)
  end
  next_one()
end

--- The entry as it is now: a file is read again (what runs is what was read, and trusted, this time).
H.fresh = function(e)
  if not e.path then
    return e, nil
  end
  local content = H.read(e.path)
  if not content then
    return nil, 'cannot read ' .. e.path
  end
  if #content > M.MAX_BYTES then
    return nil, string.format('larger than %d bytes', M.MAX_BYTES)
  end
  local p, err = M.parse(content)
  if not p then
    return nil, err
  end
  return vim.tbl_extend('force', e, p), content
end

--- Runs prompt `e` (an entry of M.all()): asks before a project prompt runs the first time (or changed),
--- asks its `{{input}}`s, gathers what its placeholders attach, switches mode/model when it sets them, then
--- sends the expanded text as the message area does. `arg`: the text typed after `/name`. `opts`: those of
--- require('caboose').send() (`origin`, `context` (a range's selection), `on_done`); `on_done` runs only when
--- the message went, so a cancelled prompt leaves the message area as it was.
---@return boolean started
function M.run(e, arg, opts)
  opts = opts or {}
  arg = vim.trim(arg or '')
  if e.error then
    H.notify(string.format('prompt /%s (%s): %s: nothing sent', e.name, M.source_text(e), e.error), vim.log.levels.ERROR)
    return false
  end
  local entry, content = H.fresh(e)
  if not entry then
    H.notify(string.format('prompt /%s (%s): %s: nothing sent', e.name, M.source_text(e), content), vim.log.levels.ERROR)
    return false
  end
  local cancelled = function(what)
    H.notify(string.format('/%s: %s: nothing sent', entry.name, what))
  end
  local send = function(text, items)
    local go = function()
      local context = vim.list_extend(vim.deepcopy(opts.context or {}), items)
      require('caboose.insertables').send(text, vim.tbl_extend('force', opts, { context = context, from_prompt = entry.name }))
    end
    if entry.mode and caboose().state().mode ~= entry.mode then
      caboose().set_mode(entry.mode)
    end
    if entry.model then
      -- The message goes once the model is switched (not at all when that fails: the error says why).
      return caboose().set_model(entry.model, function()
        go()
      end)
    end
    go()
  end
  local expand = function()
    local ph = M.placeholders(entry.text)
    H.gather(entry, ph.names, opts, function(values, items)
      if not values then
        return
      end
      H.ask_inputs(entry, ph.inputs, arg, function(answers)
        if not answers then
          return cancelled('input cancelled')
        end
        values.input = answers
        local text = M.substitute(entry.text, values)
        if #ph.inputs == 0 and arg ~= '' then
          -- Words typed after `/name` go with the prompt.
          text = text .. '\n\n' .. arg
        end
        send(text, items)
      end)
    end)
  end
  if entry.source == 'project' then
    local trust = require('caboose.prompts.trust')
    if not trust.is_trusted(entry.path, content) then
      trust.ask(entry, content, function(ok)
        if ok then
          expand()
        else
          cancelled('not trusted')
        end
      end)
      return true
    end
  end
  expand()
  return true
end

--- Completion of `:Caboose /…` (the first word): the slash commands and the prompts.
function M.complete_cmdline(lead, line)
  local before = line:gsub('^%s*%S+%s*', '', 1) -- what follows the command name
  if not lead:match('^/') or before ~= lead then
    return {}
  end
  local out = {}
  for _, c in ipairs(require('caboose.insertables').commands) do
    table.insert(out, '/' .. c.name)
  end
  for _, e in ipairs(M.list()) do
    if not e.command then
      table.insert(out, '/' .. e.name)
    end
  end
  table.sort(out)
  return vim.tbl_filter(function(w)
    return vim.startswith(w, lead)
  end, out)
end

-- :CaboosePrompts -------------------------------------------------------------------------------------

--- One picker line: name, description, source, and what it overrides or what overrides it.
function M.format(e)
  local notes = {}
  if e.error then
    table.insert(notes, 'error: ' .. e.error)
  end
  vim.list_extend(notes, type(e.warnings) == 'table' and e.warnings or {})
  if e.shadowed_by then
    table.insert(notes, 'overridden by ' .. M.SOURCE_LABEL[e.shadowed_by])
  elseif #(e.overrides or {}) > 0 then
    table.insert(notes, 'overrides ' .. table.concat(vim.tbl_map(function(s)
      return M.SOURCE_LABEL[s]
    end, e.overrides), ', '))
  end
  if e.command then
    table.insert(notes, '/' .. e.name .. ' runs the command; run this one from here')
  end
  if e.mode then
    table.insert(notes, 'mode ' .. e.mode)
  end
  if e.model then
    table.insert(notes, 'model ' .. e.model)
  end
  return string.format('/%s — %s [%s]%s', e.name, e.description ~= '' and e.description or '(no description)', M.source_text(e), #notes > 0 and ('  (' .. table.concat(notes, '; ') .. ')') or '')
end

--- :CaboosePrompts — pick a prompt (every source, overridden ones too) and run it; with a range, on the
--- selected lines. `opts` as for M.run.
function M.pick(opts)
  opts = opts or {}
  local all = M.all()
  if #all == 0 then
    return H.notify('no prompts')
  end
  vim.ui.select(all, { prompt = 'Caboose prompts', kind = 'caboose_prompt', format_item = M.format }, function(choice)
    if choice then
      M.run(choice, '', opts)
    end
  end)
end

function M.command(o)
  local origin = vim.api.nvim_get_current_buf()
  local opts = { origin = origin }
  if o.range and o.range > 0 then
    opts.context = { require('caboose.context').selection(origin, o.line1, o.line2) }
  end
  return M.pick(opts)
end

-- setup({ prompts }) ----------------------------------------------------------------------------------

--- Validates `setup({ prompts = … })`; `fail(key, expected, got)` raises (config.lua's error format).
function M.check_setup(prompts, fail)
  if prompts == nil then
    return
  end
  if type(prompts) ~= 'table' or (vim.islist(prompts) and #prompts > 0) then
    fail('prompts', 'a table of prompts by name ({ name = { description, text, mode, model } })', prompts)
  end
  local fields = { description = true, text = true, mode = true, model = true }
  for name, p in pairs(prompts) do
    local at = 'prompts.' .. tostring(name)
    if type(name) ~= 'string' or not name:match(M.NAME_PATTERN) then
      fail(at, 'named with letters, digits, - and _ (it runs as /name)', name)
    end
    if type(p) ~= 'table' then
      fail(at, 'a table { description, text, mode, model }', p)
    end
    for k, v in pairs(p) do
      if not fields[k] then
        fail(at .. '.' .. tostring(k), 'one of description, text, mode, model', v)
      end
    end
    if type(p.text) ~= 'string' or vim.trim(p.text) == '' then
      fail(at .. '.text', 'a non-empty string', p.text)
    end
    if p.description ~= nil and type(p.description) ~= 'string' then
      fail(at .. '.description', 'a string', p.description)
    end
    if p.mode ~= nil and not vim.tbl_contains(M.MODES, p.mode) then
      fail(at .. '.mode', 'one of ' .. table.concat(M.MODES, ', '), p.mode)
    end
    if p.model ~= nil and (type(p.model) ~= 'string' or p.model == '') then
      fail(at .. '.model', 'a model name (provider/model, a model or a provider)', p.model)
    end
  end
end

return M
