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

-- The parsing and the sources are their own modules (parse.lua, library.lua); their API is this module's.
for _, mod in ipairs({ 'caboose.prompts.parse', 'caboose.prompts.library' }) do
  for k, v in pairs(require(mod)) do
    M[k] = v
  end
end

local caboose = function()
  return require('caboose')
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
  local content = require('caboose.prompts.library').read(e.path)
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
  -- What the placeholders need is checked first (a missing selection says so before any question); a
  -- project's prompt is then trusted or not before its inputs are asked and anything is sent.
  local ph = M.placeholders(entry.text)
  H.gather(entry, ph.names, opts, function(values, items)
    if not values then
      return
    end
    local expand = function()
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
    end
    if entry.source == 'project' then
      local trust = require('caboose.prompts.trust')
      if not trust.is_trusted(entry.path, content) then
        return trust.ask(entry, content, function(ok)
          if ok then
            expand()
          else
            cancelled('not trusted')
          end
        end)
      end
    end
    expand()
  end)
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
